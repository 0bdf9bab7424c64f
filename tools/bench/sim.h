// SPDX-License-Identifier: Apache-2.0
//
// The benchmark machine model: an s2_backend whose per-operation costs are
// configurable (it spins for them) and counted, and vCPUs that are threads
// touching guest memory through a per-vCPU software TLB and, on a miss, the
// engine's real walk (s2_translate, what hardware would see) and fault path
// (s2_fault). Guest memory is real host memory: a slot's "host-physical"
// address is a pointer (the hosted engine's convention), so a guest write is
// a store into it.
//
// Invalidation model (arm64-like broadcast): an invalidation takes effect for
// every vCPU before the backend call returns (each vCPU's TLB checks a global
// generation before every lookup); kick_reload asks vCPUs in guest mode to
// drop invalid roots and waits for them (x86 KVM_REQ_MMU_FREE_OBSOLETE_ROOTS).
//
// Deferred frees are the engine's own (mm/defer.c, one epoch per VM):
// sim_reclaim() lets it free what every vCPU has stopped seeing.
#ifndef SLAT_TOOLS_BENCH_SIM_H
#define SLAT_TOOLS_BENCH_SIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mm/s2.h"
#include "tools/bench/bench.h"

// Modelled costs of the operations the engine asks of the machine.
struct sim_costs {
	uint64_t inval_context_ns; // TLBI VMALLS12E1IS / INVEPT single-context + sync
	uint64_t inval_range_ns;   // per range call (barriers, broadcast)
	uint64_t inval_page_ns;	   // per 4 KiB page of a range call
	uint64_t cmo_4k_ns;	   // clean+invalidate to PoC of 4 KiB (64 lines)
	// kick_reload: sending the request (IPI) once, and per vCPU in guest
	// mode its exit and acknowledgement (an IPI round trip). The real wait
	// for the acknowledging threads is measured apart (kick_wait_ns): on a
	// small host it is thread scheduling, not what hardware would take.
	uint64_t kick_ns, kick_ack_ns;
};
// Defaults (see docs/benchmarks.md) and the cost=... arguments that override them.
void sim_costs_from_args(struct sim_costs *c, int argc, char **argv);
void sim_costs_emit(struct bench_json *j, const struct sim_costs *c);

struct sim_counts {
	_Atomic uint64_t inval_context, inval_range, inval_range_pages;
	_Atomic uint64_t cmo_calls, cmo_bytes;
	_Atomic uint64_t pages_alloc, pages_freed, pages_deferred;
	_Atomic uint64_t kicks, kick_acks, kick_wait_ns;
};

#define SIM_TLB_SETS  1024
#define SIM_INVAL_LOG 64
#define SIM_MAX_VCPUS 512

struct sim_tlb_entry {
	uint64_t gva; // leaf base (gpa); ~0: empty
	uint64_t mask;
	uint64_t hpa;
};

struct sim;

struct sim_vcpu {
	struct sim *sim;
	unsigned id;
	struct s2_root *root;
	_Atomic uint64_t seq;	      // odd while inside an engine call
	_Atomic int in_guest;	      // 1 while running guest accesses
	_Atomic uint64_t seen_reload; // last reload request handled
	uint64_t tlb_gen;	      // invalidation generation the TLB is synchronised to
	struct sim_tlb_entry tlb[SIM_TLB_SETS];
	// per-vCPU counts (owner writes; read after join)
	uint64_t accesses, tlb_misses, faults, mmio_exits, retries, reloads;
	uint64_t reload_ns_max;
	struct bench_samples *reload_samples; // if set: every reload's latency
} __attribute__((aligned(64)));

struct sim {
	struct s2_backend be;
	struct sim_costs costs;
	struct sim_counts n;
	struct s2_vm *vm;
	// Invalidation log: generation g's range is log[g % SIM_INVAL_LOG].
	_Atomic uint64_t inval_gen;
	struct {
		_Atomic uint64_t lo, hi; // [lo, hi); lo > hi never; all: 0, ~0
	} log[SIM_INVAL_LOG];
	pthread_mutex_t log_lock;
	// vCPUs
	struct sim_vcpu *vcpus[SIM_MAX_VCPUS];
	_Atomic unsigned nvcpus;
	_Atomic uint64_t reload_req;
	// deferred frees
	pthread_mutex_t dlock;
	struct {
		uint64_t pa;
		unsigned npages;
	} * deferred;
	size_t ndeferred, cap_deferred;
};

void sim_init(struct sim *s, const struct sim_costs *costs);
// Creates the VM with this backend (fmt, caps, zap mode).
struct s2_vm *sim_vm_create(struct sim *s, const struct s2_fmt *fmt, unsigned caps,
			    enum s2_zap_mode mode);
void sim_vm_destroy(struct sim *s);
void sim_counts_reset(struct sim *s);
void sim_counts_emit(struct bench_json *j, struct sim *s);

// vCPUs: created by the thread that runs them (root taken lazily).
struct sim_vcpu *sim_vcpu_new(struct sim *s);
void sim_vcpu_free(struct sim_vcpu *v); // drops the root; after the thread stops
// Guest access of one 64-bit word at gpa. Returns 0, or 1 for an MMIO exit
// (no slot). Handles reload requests, TLB misses, walks and faults.
int sim_vcpu_write(struct sim_vcpu *v, uint64_t gpa, uint64_t val);
int sim_vcpu_read(struct sim_vcpu *v, uint64_t gpa, uint64_t *val);
// The vCPU is outside guest mode (e.g. waiting at a barrier): kicks need no ack.
void sim_vcpu_exit_guest(struct sim_vcpu *v);
// Drops the current root and takes a valid one; returns its latency (ns).
uint64_t sim_vcpu_reload(struct sim_vcpu *v);

// Frees parked deferred pages once every vCPU has left the engine call it was
// in. Call from a thread that is not itself inside one.
void sim_reclaim(struct sim *s);

// Guest memory: `size` bytes of host memory aligned to `align` (reserved
// lazily: untouched pages cost nothing). Returns the "host-physical" address.
uint64_t sim_guest_mem(uint64_t size, uint64_t align);
// Same, but every `chunk` bytes alias the same host pages (to model guests
// larger than the machine; writes still touch real memory).
uint64_t sim_guest_mem_aliased(uint64_t size, uint64_t chunk);
void sim_guest_mem_free(uint64_t hpa, uint64_t size);

#endif
