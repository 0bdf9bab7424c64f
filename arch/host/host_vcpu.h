// SPDX-License-Identifier: Apache-2.0
//
// Hosted vCPUs for benchmarks: threads that touch guest memory through a
// per-vCPU software TLB and, on a miss, the engine's real walk (s2_translate,
// what hardware would see) and fault path (s2_fault). Guest memory is host
// memory: a slot's "host-physical" address is a pointer (the hosted engine's
// convention), so a guest write is a store into it.
//
// A vCPU set is attached to one host_be (be->vcpus) and one VM:
// - invalidation (arm64-like broadcast): host_be publishes every
//   invalidation in the set's log before its backend call returns; each vCPU
//   applies what it has not seen before its next TLB lookup;
// - kick_reload: host_be asks every vCPU in guest mode to drop invalid roots
//   and waits for each acknowledgement (x86 KVM_REQ_MMU_FREE_OBSOLETE_ROOTS);
//   vCPUs outside guest mode check the request before they re-enter.
// Unlike host_tlb_* (host_be.h: one shared TLB checked for staleness), each
// vCPU's TLB here is private and lock-free, as a real one is.
#ifndef SLAT_ARCH_HOST_HOST_VCPU_H
#define SLAT_ARCH_HOST_HOST_VCPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/host/host_be.h"
#include "mm/s2.h"

#define HOST_VCPU_TLB_SETS  1024
#define HOST_VCPU_INVAL_LOG 64
#define HOST_VCPU_MAX	    512

struct host_vcpu_tlb_ent {
	uint64_t gpa; // leaf base; ~0: empty
	uint64_t mask;
	uint64_t hpa;
};

struct host_vcpu {
	struct host_vcpus *set;
	unsigned id;
	struct s2_root *root;
	_Atomic int in_guest;	      // 1 while running guest accesses
	_Atomic uint64_t seen_reload; // last reload request handled
	uint64_t tlb_gen;	      // invalidation generation the TLB is synchronised to
	struct host_vcpu_tlb_ent tlb[HOST_VCPU_TLB_SETS];
	// per-vCPU counts (owner writes; read after join)
	uint64_t accesses, tlb_misses, faults, mmio_exits, retries, reloads;
	uint64_t reload_ns_max;
	void (*on_reload)(void *ctx, uint64_t ns); // if set: every reload's latency
	void *on_reload_ctx;
} __attribute__((aligned(64)));

struct host_vcpus {
	struct host_be *be;
	struct s2_vm *vm;
	// Invalidation log: generation g's range [lo, hi) is log[g % LOG]
	// (everything: lo 0, hi ~0).
	_Atomic uint64_t inval_gen;
	struct {
		_Atomic uint64_t lo, hi;
	} log[HOST_VCPU_INVAL_LOG];
	pthread_mutex_t log_lock;
	_Atomic(struct host_vcpu *) vcpus[HOST_VCPU_MAX]; // read by kickers
	_Atomic unsigned n;
	_Atomic uint64_t reload_req;
};

// Attaches the set to `be` (be->vcpus) for `vm`, a VM over `be`; detach with
// host_vcpus_fini once every vCPU is freed.
void host_vcpus_init(struct host_vcpus *set, struct host_be *be, struct s2_vm *vm);
void host_vcpus_fini(struct host_vcpus *set);
// host_be's side: publish one invalidation of [lo, hi) (0, ~0: all); ask
// vCPUs in guest mode to reload and wait for them, returning how many did.
void host_vcpus_inval(struct host_vcpus *set, uint64_t lo, uint64_t hi);
unsigned host_vcpus_kick(struct host_vcpus *set);

// vCPUs: created by the thread that runs them (root taken lazily).
struct host_vcpu *host_vcpu_new(struct host_vcpus *set);
void host_vcpu_free(struct host_vcpu *v); // drops the root; after the thread stops
// Guest access of one 64-bit word at gpa. Returns 0, or 1 for an MMIO exit
// (no slot). Handles reload requests, TLB misses, walks and faults.
int host_vcpu_write(struct host_vcpu *v, uint64_t gpa, uint64_t val);
int host_vcpu_read(struct host_vcpu *v, uint64_t gpa, uint64_t *val);
// The vCPU is outside guest mode (e.g. waiting at a barrier): kicks need no ack.
void host_vcpu_exit_guest(struct host_vcpu *v);
// Drops the current root and takes a valid one; returns its latency (ns).
uint64_t host_vcpu_reload(struct host_vcpu *v);
// Whether the vCPU's TLB holds a translation of gpa (after applying every
// published invalidation), without walking.
bool host_vcpu_tlb_holds(struct host_vcpu *v, uint64_t gpa);

#endif
