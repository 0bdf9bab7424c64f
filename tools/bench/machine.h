// SPDX-License-Identifier: Apache-2.0
//
// The benchmarks' machine: the hosted back end (arch/host/host_be.h) in its
// benchmark setting (fast frees, the cost model of the cost_*=NS arguments)
// with a vCPU set (arch/host/host_vcpu.h) attached to the VM. This file only
// wires them up and reports their counters in the benchmarks' JSON.
//
// Deferred frees are the engine's own (mm/defer.c, one epoch per VM):
// machine_reclaim() lets it free what every vCPU has stopped seeing.
#ifndef SLAT_TOOLS_BENCH_MACHINE_H
#define SLAT_TOOLS_BENCH_MACHINE_H

#include "arch/host/host_be.h"
#include "arch/host/host_vcpu.h"
#include "mm/s2.h"
#include "tools/bench/bench.h"

struct machine {
	struct host_be *be;
	struct host_vcpus vcpus;
	struct s2_vm *vm;
	struct host_counts mark; // backend counts at the last machine_counts_reset
	uint64_t mark_deferred;	 // the engine's tables_deferred then
};

// Defaults (see docs/benchmarks.md) and the cost=... arguments that override them.
void machine_costs_from_args(struct host_costs *c, int argc, char **argv);
void machine_costs_emit(struct bench_json *j, const struct host_costs *c);

void machine_init(struct machine *m, const struct host_costs *costs);
// Creates the VM over the backend (fmt, caps, zap mode) and attaches the vCPU set.
struct s2_vm *machine_vm_create(struct machine *m, const struct s2_fmt *fmt, unsigned caps,
				enum s2_zap_mode mode);
// Destroys the VM and the backend (after every vCPU is freed).
void machine_vm_destroy(struct machine *m);
void machine_counts_reset(struct machine *m);
// Backend counts since the last machine_counts_reset.
struct host_counts machine_counts(struct machine *m);
void machine_counts_emit(struct bench_json *j, struct machine *m);
void machine_reclaim(struct machine *m);

// Guest memory: `size` bytes of host memory aligned to `align` (reserved
// lazily: untouched pages cost nothing). Returns the "host-physical" address.
uint64_t machine_guest_mem(uint64_t size, uint64_t align);
// Same, but every `chunk` bytes alias the same host pages (to model guests
// larger than the machine; writes still touch real memory).
uint64_t machine_guest_mem_aliased(uint64_t size, uint64_t chunk);
void machine_guest_mem_free(uint64_t hpa, uint64_t size);

#endif
