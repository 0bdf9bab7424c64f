// SPDX-License-Identifier: Apache-2.0
//
// Hosted vCPUs for benchmarks; see host_vcpu.h.
#include "arch/host/host_vcpu.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void vcpu_die(const char *what, uint64_t gpa, int r)
{
	fprintf(stderr, "host_vcpu: %s(%#llx): %d\n", what, (unsigned long long)gpa, r);
	abort();
}

// ---- the set (host_be's side) --------------------------------------------------------

void host_vcpus_init(struct host_vcpus *set, struct host_be *be, struct s2_vm *vm)
{
	memset(set, 0, sizeof(*set));
	set->be = be;
	set->vm = vm;
	pthread_mutex_init(&set->log_lock, NULL);
	be->vcpus = set;
}

void host_vcpus_fini(struct host_vcpus *set)
{
	set->be->vcpus = NULL;
	pthread_mutex_destroy(&set->log_lock);
}

// The writer side of the log: a vCPU reading generation g after the store
// below sees its range (seq_cst store, acquire load in tlb_sync).
void host_vcpus_inval(struct host_vcpus *set, uint64_t lo, uint64_t hi)
{
	pthread_mutex_lock(&set->log_lock);
	uint64_t g = atomic_load(&set->inval_gen) + 1;
	atomic_store_explicit(&set->log[g % HOST_VCPU_INVAL_LOG].lo, lo, memory_order_relaxed);
	atomic_store_explicit(&set->log[g % HOST_VCPU_INVAL_LOG].hi, hi, memory_order_relaxed);
	atomic_store_explicit(&set->inval_gen, g, memory_order_seq_cst);
	pthread_mutex_unlock(&set->log_lock);
}

// No vCPU may keep using an invalid root: each one in guest mode leaves it
// and acknowledges before the kick returns.
unsigned host_vcpus_kick(struct host_vcpus *set)
{
	unsigned acks = 0;
	uint64_t req = atomic_fetch_add(&set->reload_req, 1) + 1;
	unsigned n = atomic_load(&set->n);

	for (unsigned i = 0; i < n; i++) {
		struct host_vcpu *v = set->vcpus[i];

		if (!v || !atomic_load(&v->in_guest))
			continue;
		acks++;
		while (atomic_load(&v->in_guest) && atomic_load(&v->seen_reload) < req)
			sched_yield();
	}
	return acks;
}

// ---- per-vCPU TLB: 3 levels (4K, 2M, 1G leaves) hashed into one array ----------------

static void tlb_flush(struct host_vcpu *v)
{
	for (unsigned i = 0; i < HOST_VCPU_TLB_SETS; i++)
		v->tlb[i].gpa = ~0ull;
}

static unsigned tlb_set(uint64_t page, unsigned level)
{
	uint64_t h = (page ^ (level * 0x9e3779b97f4a7c15ull)) * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 54) & (HOST_VCPU_TLB_SETS - 1);
}

static void tlb_drop_if_overlaps(struct host_vcpu_tlb_ent *e, uint64_t lo, uint64_t hi)
{
	if (e->gpa != ~0ull && e->gpa < hi && e->gpa + e->mask + 1 > lo)
		e->gpa = ~0ull;
}

// Drops every entry overlapping [lo, hi): a scan for large ranges, else
// the sets each page of the range hashes to at each level.
static void tlb_apply(struct host_vcpu *v, uint64_t lo, uint64_t hi)
{
	if (hi - lo > 16 * 4096) {
		for (unsigned i = 0; i < HOST_VCPU_TLB_SETS; i++)
			tlb_drop_if_overlaps(&v->tlb[i], lo, hi);
		return;
	}
	for (uint64_t a = lo; a < hi; a += 4096) {
		for (unsigned l = 0; l < 3; l++)
			tlb_drop_if_overlaps(&v->tlb[tlb_set(a >> (12 + 9 * l), l)], lo, hi);
	}
}

// Brings the TLB up to date with every invalidation published so far.
static void tlb_sync(struct host_vcpu *v)
{
	struct host_vcpus *set = v->set;
	uint64_t g = atomic_load_explicit(&set->inval_gen, memory_order_acquire);

	if (g == v->tlb_gen)
		return;
	if (g - v->tlb_gen >= HOST_VCPU_INVAL_LOG) {
		tlb_flush(v);
	} else {
		for (uint64_t k = v->tlb_gen + 1; k <= g; k++) {
			uint64_t lo = atomic_load_explicit(&set->log[k % HOST_VCPU_INVAL_LOG].lo,
							   memory_order_relaxed);
			uint64_t hi = atomic_load_explicit(&set->log[k % HOST_VCPU_INVAL_LOG].hi,
							   memory_order_relaxed);
			if (lo == 0 && hi == ~0ull) {
				tlb_flush(v);
				break;
			}
			tlb_apply(v, lo, hi);
		}
		// Lapped while reading: some log slots may hold newer ranges.
		if (atomic_load(&set->inval_gen) - v->tlb_gen >= HOST_VCPU_INVAL_LOG)
			tlb_flush(v);
	}
	v->tlb_gen = g;
}

static bool tlb_lookup(struct host_vcpu *v, uint64_t gpa, uint64_t *hpa)
{
	for (unsigned l = 0; l < 3; l++) {
		struct host_vcpu_tlb_ent *e = &v->tlb[tlb_set(gpa >> (12 + 9 * l), l)];

		if (e->gpa == (gpa & ~e->mask)) {
			*hpa = e->hpa + (gpa & e->mask);
			return true;
		}
	}
	return false;
}

static void tlb_fill(struct host_vcpu *v, uint64_t gpa, uint64_t hpa, unsigned level)
{
	unsigned l = level > 2 ? 2 : level;
	uint64_t mask = (1ull << (12 + 9 * l)) - 1;
	struct host_vcpu_tlb_ent *e = &v->tlb[tlb_set(gpa >> (12 + 9 * l), l)];

	e->gpa = gpa & ~mask;
	e->mask = mask;
	e->hpa = hpa - (gpa & mask);
}

bool host_vcpu_tlb_holds(struct host_vcpu *v, uint64_t gpa)
{
	uint64_t hpa;

	tlb_sync(v);
	return tlb_lookup(v, gpa, &hpa);
}

// ---- vCPU life cycle ----------------------------------------------------------------

static const struct s2_role role0 = {0, 0};

struct host_vcpu *host_vcpu_new(struct host_vcpus *set)
{
	struct host_vcpu *v = aligned_alloc(64, sizeof(*v));

	if (!v)
		vcpu_die("aligned_alloc", 0, 0);
	memset(v, 0, sizeof(*v));
	v->set = set;
	tlb_flush(v);
	v->tlb_gen = atomic_load(&set->inval_gen);
	atomic_store(&v->seen_reload, atomic_load(&set->reload_req));
	unsigned id = atomic_fetch_add(&set->n, 1);
	if (id >= HOST_VCPU_MAX)
		vcpu_die("host_vcpu_new: too many vCPUs", id, 0);
	v->id = id;
	set->vcpus[id] = v;
	return v;
}

void host_vcpu_free(struct host_vcpu *v)
{
	struct host_vcpus *set = v->set;

	atomic_store(&v->in_guest, 0);
	// Only an invalid root may lose its last reference: the MMU keeps one
	// on valid roots, so a vCPU's put never frees a valid root.
	if (v->root)
		s2_root_put(set->vm, v->root);
	v->root = NULL;
	set->vcpus[v->id] = NULL;
	free(v);
}

void host_vcpu_exit_guest(struct host_vcpu *v)
{
	atomic_store(&v->in_guest, 0);
}

uint64_t host_vcpu_reload(struct host_vcpu *v)
{
	struct host_vcpus *set = v->set;
	uint64_t t0 = host_now_ns();

	atomic_store(&v->in_guest, 0);
	if (v->root)
		s2_root_put(set->vm, v->root);
	v->root = NULL;
	int r = s2_root_get(set->vm, role0, &v->root);
	if (r)
		vcpu_die("s2_root_get", 0, r);
	// A new root starts with a flush (the tagged TLB of the old one is dead).
	tlb_flush(v);
	v->tlb_gen = atomic_load(&set->inval_gen);
	uint64_t dt = host_now_ns() - t0;
	v->reloads++;
	v->reload_ns_max = dt > v->reload_ns_max ? dt : v->reload_ns_max;
	if (v->on_reload)
		v->on_reload(v->on_reload_ctx, dt);
	return dt;
}

// Guest-mode entry: acknowledge reload requests, reload an invalid root.
// A kicker that saw this vCPU in guest mode counts it as acknowledging and
// waits for seen_reload; in_guest drops only around a reload (the engine
// calls then may kick in turn, and must not wait for this vCPU).
static void enter_guest(struct host_vcpu *v)
{
	struct host_vcpus *set = v->set;

	atomic_store(&v->in_guest, 1);
	uint64_t req = atomic_load(&set->reload_req);
	if (req == atomic_load(&v->seen_reload) && v->root)
		return;
	bool reload = !v->root || s2_root_is_invalid(v->root);
	if (reload)
		atomic_store(&v->in_guest, 0);
	atomic_store(&v->seen_reload, req);
	if (reload) {
		host_vcpu_reload(v);
		atomic_store(&v->in_guest, 1);
	}
}

// ---- guest accesses -----------------------------------------------------------------

// One exit on a translation miss: the fault path (it also answers MMIO from
// markers). Returns 1 for an MMIO exit, 0 to retry the access.
static int vcpu_fault(struct host_vcpu *v, uint64_t gpa, unsigned access)
{
	struct s2_fault_info fi;

	atomic_store(&v->in_guest, 0);
	int r = s2_fault(v->set->vm, v->root, gpa, access, &fi);
	v->faults++;
	if (r == S2_FAULT_MMIO || r == S2_E_PERM) {
		v->mmio_exits++;
		enter_guest(v);
		return 1;
	}
	if (r == S2_FAULT_RETRY)
		v->retries++;
	else if (r != S2_FAULT_MAPPED)
		vcpu_die("s2_fault", gpa, r);
	// Re-enter: a reload request may have arrived meanwhile.
	enter_guest(v);
	tlb_sync(v);
	return 0;
}

// Translation for an access: TLB, else a hardware-like walk, else a fault.
// Returns 0 with *hpa, or 1 for an MMIO exit.
static int translate(struct host_vcpu *v, uint64_t gpa, unsigned access, uint64_t *hpa)
{
	enter_guest(v);
	v->accesses++;
	tlb_sync(v);
	if (tlb_lookup(v, gpa, hpa))
		return 0;
	v->tlb_misses++;
	for (;;) {
		struct s2_xlate x;

		atomic_store(&v->in_guest, 0);
		s2_translate(v->set->vm, v->root, gpa, &x);
		if (x.mapped && (x.prot & access) == access) {
			tlb_fill(v, gpa, x.hpa, x.level);
			*hpa = x.hpa;
			atomic_store(&v->in_guest, 1);
			return 0;
		}
		if (vcpu_fault(v, gpa, access))
			return 1;
	}
}

int host_vcpu_write(struct host_vcpu *v, uint64_t gpa, uint64_t val)
{
	uint64_t hpa;

	if (translate(v, gpa, S2_PROT_W, &hpa))
		return 1;
	*(volatile uint64_t *)(uintptr_t)hpa = val;
	return 0;
}

int host_vcpu_read(struct host_vcpu *v, uint64_t gpa, uint64_t *val)
{
	uint64_t hpa;

	if (translate(v, gpa, S2_PROT_R, &hpa))
		return 1;
	*val = *(volatile uint64_t *)(uintptr_t)hpa;
	return 0;
}
