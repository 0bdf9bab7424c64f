// SPDX-License-Identifier: Apache-2.0
//
// The architecture contract for VMs and vCPUs: what core/ asks of arch/arm64,
// arch/x86 and arch/host (the hosted back end of unit tests and benchmarks).
// Each architecture implements every function here and defines the records'
// arch parts (`struct vm_arch`, `struct vcpu_arch`) in its
// arch/<arch>/inc/vm_arch_types.h; core/ never looks inside them.
//
// Life of a VM on any path:
//
//   vm_init()            core: identity, names, vCPU records, hidden region
//   vm_arch_init()       arch: its part of the VM (SLAT root, power ports, ...)
//   vm_vcpu_for(hw_id)   core: claims a vCPU record for a CPU (or a VMM thread)
//   vcpu_arch_init()     arch: its part of the vCPU (register state, control block)
//   vcpu_arch_run()      arch: enters the guest on the calling CPU; every exit
//                        is caught by the arch's exit entry (`<path>_handle_exit`:
//                        arm64_handle_exit, svm_handle_exit, vmx_handle_exit,
//                        host_handle_exit), counted with vcpu_count_exit() and
//                        handled by the shared policy
//   vm_begin_shutdown()  core: one CPU wins; the others stop their vCPUs
//   vm_arch_teardown()   arch: batched teardown of the SLAT (engine rules)
//   vm_print_exit_summary()
#ifndef SLAT_CORE_VM_ARCH_H
#define SLAT_CORE_VM_ARCH_H

#include <stdint.h>

#include "core/vm.h"

// Prepares the arch part of `vm` after vm_init(). 0, or a negative error
// after logging why (the VM must not run then).
int vm_arch_init(struct vm *vm);

// Prepares the arch part of a vCPU record just claimed with vm_vcpu_for().
void vcpu_arch_init(struct vcpu *vcpu);

// Runs `vcpu` on the calling CPU. Returns when the vCPU stops (its VM shuts
// down, or an exit the caller must see on paths that have one); the primary
// VM on bare metal never returns here: its shutdown powers off or resets.
void vcpu_arch_run(struct vcpu *vcpu);

// Detaches and frees the VM's second-level tables with the engine's batched
// teardown (no per-leaf invalidation or cache maintenance, at most one
// context invalidation). No vCPU may run the VM afterwards. Fills the
// figures of the teardown.
struct vm_teardown_counts {
	uint64_t pages_freed;	// table pages returned
	uint64_t invalidations; // TLB invalidations issued by the teardown
};
void vm_arch_teardown(struct vm *vm, struct vm_teardown_counts *out);

// The VM's second-level figures for the exit summary.
void vm_arch_mm_counts(const struct vm *vm, struct slat_mm_counts *out);

// Microseconds since the VM started (TSC, CNTPCT, clock_gettime).
uint64_t vm_arch_uptime_us(const struct vm *vm);

// Core's use of the contract at the end of a VM (core/vm_shutdown.c): reads
// the SLAT figures, tears the SLAT down and prints the exit summary for
// `event` ("power-off", "reset"). The caller owns the shutdown
// (vm_begin_shutdown) and no vCPU runs the VM any more.
void vm_teardown_and_report(struct vm *vm, const char *event);

#endif
