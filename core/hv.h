// SPDX-License-Identifier: Apache-2.0
//
// Secondary VMs (docs/secondary-vms.md): the primary's kernel creates VMs,
// gives them memory as memslots of its own pinned frames and runs their vCPUs
// through the hypercalls of core/hcall_abi.h. This header is the contract
// between core/hv*.c and the architectures, in both directions:
//
//   arch -> core: hv_dispatch() for every hypercall of the primary's kernel;
//                 the run protocol (hv_vcpu_enter / hv_vcpu_exited /
//                 hv_vcpu_fault) inside arch_hv_run's entry loop;
//                 hv_page_alloc / hv_page_free for per-vCPU pages (VMCB, VMCS);
//                 hv_primary_page / hv_stopped_vcpu for the architecture's
//                 own calls (hv_boot.arch_call).
//   core -> arch: arch_hv_* below (arch/x86, arch/arm64, arch/host), and the
//                 architecture's own calls through hv_boot.arch_call when it
//                 has any (x86; arm64 has none).
//
// Memory: everything a secondary needs (VM and vCPU records, SLAT tables,
// slot frame lists, ownership nodes) comes from pages the primary DEPOSITs;
// when they run out a call answers HC_E_NOMEM and changes nothing. Slat's own
// footprint is fixed at boot.
//
// Concurrency: management calls (everything but VCPU_RUN) are serialised by
// one lock; VCPU_RUN runs concurrently on every CPU. A VM is destroyed only
// when none of its vCPUs is inside a RUN call (HC_E_BUSY otherwise).
#ifndef SLAT_CORE_HV_H
#define SLAT_CORE_HV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hcall_abi.h"
#include "core/hcall_args.h"
#include "core/vm.h"
#include "mm/s2.h"

#define HV_MAX_PCPUS 64u

// ---- arch -> core ----------------------------------------------------------------

// Fixed facts Slat gives the secondary-VM layer once at boot (before any call).
struct hv_boot {
	const uint64_t (*ram)[2]; // [base, size] of RAM ranges (the primary's frames)
	unsigned nram;
	const uint64_t (*slat)[2]; // Slat's own ranges (never depositable)
	unsigned nslat;
	enum hc_abi abi;
	unsigned ncpus; // physical CPUs that may call (arch_hv_pcpu() < ncpus <= HV_MAX_PCPUS)
	// A call of the architecture's range (HC_FN_ARCH_FIRST..): `fn` and the
	// raw registers a0..a5, unchecked; under the management lock. The status
	// (HC_E_UNKNOWN first for a number the arch lacks) and results res[0..2].
	// NULL: the architecture has no calls, and core answers HC_E_UNKNOWN.
	int (*arch_call)(uint32_t fn, const uint64_t *a, uint64_t *res);
};
// 0, or -1 after logging why (then every call answers HC_E_UNKNOWN).
int hv_init(const struct hv_boot *b);

// A hypercall of the primary's kernel, raw registers in `r` (struct hc_regs:
// x0 / RAX and x1..x6 / RBX, RCX, RDX, RSI, RDI, R8). On return r->fn holds the
// status and r->a[0..2] the results (x1..x3 / RBX, RCX, RDX); the caller writes
// those four back and leaves every other register alone. The caller checked
// CPL 0 / EL1 and that `caller` is a vCPU of the primary. VCPU_RUN runs the secondary vCPU here,
// on the calling CPU, through arch_hv_run.
void hv_dispatch(struct vcpu *caller, struct hc_regs *r);

// The run protocol, called by arch_hv_run around each entry of a secondary
// vCPU, with interrupts masked from hv_vcpu_enter to hv_vcpu_exited.
struct hv_entry {
	uint64_t root_pa; // SLAT root to load (nCR3 / EPTP address / VTTBR BADDR)
	bool flush;	  // flush this VM's translations on this CPU before entering
};
// HC_OK, or HC_E_NOMEM (no root could be allocated: RUN answers "needs memory").
int hv_vcpu_enter(struct vcpu *v, struct hv_entry *e);
// Right after the exit, before the exit is handled.
void hv_vcpu_exited(struct vcpu *v);
// A SLAT fault of a secondary vCPU at `gpa`. S2_FAULT_MAPPED or
// S2_FAULT_RETRY: re-enter. S2_FAULT_MMIO: no slot maps gpa (an MMIO exit for
// the VMM, or a write to a read-only slot). S2_FAULT_ABSENT: the slot's page
// has no frame (hv_vcpu_memfault). HC_E_NOMEM, or HC_E_INTERNAL after logging.
int hv_vcpu_fault(struct vcpu *v, uint64_t gpa, bool write, bool exec);
// After hv_vcpu_fault() answered S2_FAULT_ABSENT: the run page says
// HC_EXIT_MEMFAULT (slot, page index); true. False when the slot went away
// meanwhile: re-enter, the access runs again. The guest's access is not
// completed: it runs again on the next VCPU_RUN, once the VMM filled the page.
bool hv_vcpu_memfault(struct vcpu *v, uint64_t gpa, bool write, struct hc_run *run);

// For hv_boot.arch_call, under the management lock: the primary's page at `pa`
// (else the ownership code); a stopped secondary vCPU and its call's page,
// checked in the documented order: page, VM, vCPU, not inside VCPU_RUN.
int hv_primary_page(uint64_t pa, void **out);
int hv_stopped_vcpu(uint32_t vm, uint32_t index, uint64_t pa, void **page, struct vcpu **out);

// Deposited pages for the arch's per-vCPU needs (zeroed; 0 when none left:
// the caller answers HC_E_NOMEM). Counted in the VM's meta_pages.
uint64_t hv_page_alloc(struct vm *vm);
void hv_page_free(struct vm *vm, uint64_t pa);

// Printed with the primary's exit summary: where every deposited page is.
void hv_print_summary(void);

// A fault of the primary on its own SLAT at `pa` (arch -> core): true when
// the ownership table gives the frame to the primary, so the SLAT must map
// it and the fault is the window of a concurrent DEPOSIT / WITHDRAW changing
// the primary's SLAT (break-before-make of a split block on another CPU): the
// caller lets the access retry. Bounded per vCPU: after HV_FAULT_RETRIES
// consecutive faults on the same frame it answers false (report and inject).
#define HV_FAULT_RETRIES (1u << 16)
bool hv_primary_fault_retry(struct vcpu *v, uint64_t pa);

// ---- core -> arch ----------------------------------------------------------------

// Fills fmt, ia_bits and caps of a secondary VM's SLAT (the rest is core's).
void arch_hv_s2_config(struct s2_vm_config *cfg);
// A new secondary vCPU's arch part in the architecture's reset state (x86:
// real mode at F000:FFF0 as after INIT; arm64: EL1h, MMU off, pc 0).
// HC_OK or HC_E_NOMEM (nothing kept).
int arch_hv_vcpu_create(struct vcpu *v);
void arch_hv_vcpu_destroy(struct vcpu *v);
// `page` is Slat's copy of struct hc_regs_x86 / hc_regs_arm64. HC_OK or
// HC_E_INVAL (an illegal state; the vCPU keeps its old one).
int arch_hv_set_regs(struct vcpu *v, const void *page);
void arch_hv_get_regs(struct vcpu *v, void *page);
// Runs `v` on this CPU until an exit for the VMM (written to *run) or a
// physical interrupt for the primary (HC_EXIT_PREEMPTED). On entry, *run holds
// the VMM's answer to the previous exit (applied first). HC_OK, or HC_E_NOMEM.
int arch_hv_run(struct vcpu *caller, struct vcpu *v, struct hc_run *run);
// Invalidates the translations of `vm` on every CPU now (arm64: broadcast
// TLBI). false: the machine cannot (x86); CPUs flush at their next entry
// (hv_entry.flush) and core kicks the vCPUs in guest mode.
bool arch_hv_flush_vm(struct vm *vm);
// Makes physical CPU `pcpu` leave guest mode soon; the interrupt is Slat's
// and never reaches a guest.
void arch_hv_kick_pcpu(unsigned pcpu);
// The calling physical CPU, < HV_MAX_PCPUS.
unsigned arch_hv_pcpu(void);
// Spin-wait hint.
void arch_hv_relax(void);
// The primary's own SLAT (its identity map, mm/ident.c) over deposited pages:
// DEPOSIT takes [pa, pa + pages * 4 KiB) out of it before Slat uses the pages,
// WITHDRAW puts pages back (write-back, RWX, as the identity map maps RAM)
// before the primary owns them again. Unmap returns only when no CPU can
// still use a translation of the range (arm64: broadcast TLBI; x86: every CPU
// in the primary's guest mode kicked and acknowledged). Both split large
// leaves with table pages from the primary's pool in Slat's region;
// all-or-nothing: the engine's S2_OK, or S2_E_NOMEM (that pool is empty)
// with nothing changed, or another S2_E_* (core logs it).
int arch_hv_primary_unmap(uint64_t pa, uint64_t pages);
int arch_hv_primary_map(uint64_t pa, uint64_t pages);
// Table pages the primary's SLAT holds beyond its boot-time build (the splits
// of the two calls above; HV_STATS primary_tables).
uint64_t arch_hv_primary_tables(void);

#endif
