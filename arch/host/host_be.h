// SPDX-License-Identifier: Apache-2.0
//
// The hosted backend of the SLAT engine (unit tests, sanitizers, benchmarks):
// - page allocator that poisons freed pages and keeps them in a quarantine
//   (ASan-poisoned too), so a use after free is caught;
// - injectable allocation failure (fail the Nth allocation);
// - CPU slots for the engine's epoch domain: each thread claims a free
//   process-wide slot on first use and gives it back when it exits
//   (host_cpu_index); the grace period itself is the engine's (mm/defer.c);
// - a software TLB that caches every translation it reads until the engine
//   invalidates it, so a missing or late invalidation shows as a stale hit;
// - counters of everything received; a yield injector; hooks for tests;
// - for benchmarks: a cost model (each invalidation, CMO and kick spins for
//   a configured time, and the modelled time is counted), a fast-free mode
//   (no poisoning, no quarantine) and a vCPU set (host_vcpu.h) that sees
//   every invalidation and acknowledges kicks.
#ifndef SLAT_ARCH_HOST_HOST_BE_H
#define SLAT_ARCH_HOST_HOST_BE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mm/s2.h"

#define HOST_MAX_CPUS 1024 // live threads that may call the engine at once
#define HOST_BE_CPUS  256  // epoch slots of a VM made by host_be_config
#define HOST_TLB_CAP  8192

struct host_counts {
	uint64_t allocs, alloc_pages, frees, free_pages;
	uint64_t alloc_failures, poison_violations;
	uint64_t inval_context, inval_range, inval_range_pages;
	uint64_t cmo_calls, cmo_bytes;
	uint64_t resched_checks, yields, kicks, relax;
	uint64_t tlb_hits, tlb_misses, stale_at_yield, yields_with_stale;
	// Cost model: modelled nanoseconds charged (and spun), kicks'
	// acknowledgements by vCPUs in guest mode and the real wait for them.
	uint64_t cost_ns, kick_acks, kick_wait_ns;
};

// Modelled cost of each operation the engine asks of the machine (ns; all
// zero by default: no spinning, nothing charged).
struct host_costs {
	uint64_t inval_context_ns; // per context invalidation
	uint64_t inval_range_ns;   // per range invalidation call
	uint64_t inval_page_ns;	   // per 4 KiB page of a range invalidation
	uint64_t cmo_4k_ns;	   // per 4 KiB cleaned to the point of coherency
	uint64_t kick_ns;	   // per kick_reload (sending the request)
	uint64_t kick_ack_ns;	   // per vCPU in guest mode acknowledging a kick
};

struct host_vcpus;

struct host_tlb_ent {
	uint64_t root_pa; // 0: empty slot
	uint64_t page;	  // gpa >> 12
	unsigned ui;	  // position in host_be.tlb_used
	struct s2_xlate x;
};

struct host_be {
	struct s2_backend ops;
	pthread_mutex_t mu;
	struct host_counts c;

	// Fault injection.
	uint64_t fail_at;	// the allocation with this sequence number (1-based) fails; 0 never
	uint64_t fail_every;	// or: every Nth allocation fails; 0 never
	uint64_t page_limit;	// or: one that would make more pages live than this; 0 none
	uint64_t alloc_seq;	// allocations attempted so far
	unsigned resched_every; // need_resched() is true every Nth call; 0 never

	// Benchmarks (set before the VM is created; defaults off).
	struct host_costs costs;  // charged per operation
	bool fast_free;		  // page_free frees at once (no poison, no quarantine)
	struct host_vcpus *vcpus; // if set: sees invalidations, acknowledges kicks

	// Quarantine of freed pages (FIFO).
	struct host_q *q_head, *q_tail;
	unsigned q_len, q_max;

	// Software TLB.
	struct s2_vm *vm; // for the stale check at yield
	const struct s2_root *loaded[8];
	struct host_tlb_ent tlb[HOST_TLB_CAP];
	uint16_t tlb_used[HOST_TLB_CAP / 2]; // indexes of the tlb_n occupied entries
	unsigned tlb_n;

	// Test hooks (NULL: none).
	void (*on_inval)(struct host_be *be, struct s2_vm *vm, uint64_t gpa, uint64_t size,
			 bool context);
	void (*on_kick)(struct host_be *be, struct s2_vm *vm);
	void (*on_yield)(struct host_be *be); // at a walk's yield point (lock still held)
	void *test_ctx;
};

struct host_be *host_be_new(void);
// Frees quarantined pages; returns pages still allocated (allocated - freed:
// the leak count).
int64_t host_be_free(struct host_be *be);
// A VM config for `fmt` over this backend (all of the format's caps,
// HOST_BE_CPUS epoch slots).
struct s2_vm_config host_be_config(struct host_be *be, const struct s2_fmt *fmt);
// Pages allocated and not returned to the backend yet.
int64_t host_be_live_pages(struct host_be *be);
void host_be_counts(struct host_be *be, struct host_counts *out);

// The calling thread's process-wide CPU slot (< HOST_MAX_CPUS), claimed on
// first use and released when the thread exits. Aborts when all are taken.
// Also the s2_backend.cpu_index hook of this backend (other hosted backends,
// e.g. the benchmark model, may use host_be_cpu_index_hook).
unsigned host_cpu_index(void);
unsigned host_be_cpu_index_hook(void *ctx);
// CLOCK_MONOTONIC in nanoseconds.
uint64_t host_now_ns(void);
// Spins for about `ns` nanoseconds (a calibrated loop, no clock reads).
void host_spin_ns(uint64_t ns);
// Installs sched_yield as mm/sync.h's relax hook (host_be_new does it).
void host_sync_hooks_install(void);

// Software TLB. A vCPU "loads" a root (which flushes what it cached under
// that root, like a VMID/ASID reuse flush) before translating through it.
void host_tlb_load(struct host_be *be, struct s2_vm *vm, const struct s2_root *root);
void host_tlb_unload(struct host_be *be, const struct s2_root *root);
// Translation as the hardware would see it: a cached one if present (even
// stale), else a walk of the tables, cached when it maps.
void host_tlb_translate(struct host_be *be, struct s2_vm *vm, const struct s2_root *root,
			uint64_t gpa, struct s2_xlate *out);
// Cached translations of loaded, valid roots that no longer match the tables.
unsigned host_tlb_stale(struct host_be *be);
unsigned host_tlb_size(struct host_be *be);

#endif
