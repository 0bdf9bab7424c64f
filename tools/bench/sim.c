// SPDX-License-Identifier: Apache-2.0
//
// The benchmark machine model; see sim.h.
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/bench/sim.h"

#include "arch/host/host_be.h"

// ---- costs

void sim_costs_from_args(struct sim_costs *c, int argc, char **argv)
{
	// Modelled, not measured: a broadcast context invalidation with its
	// barrier ~2 us; a range call ~300 ns plus ~50 ns a page; cleaning 4 KiB
	// to PoC (64 lines) ~400 ns. Override with cost_*=NS.
	c->inval_context_ns = bench_arg_u64(argc, argv, "cost_inval_context", 2000);
	c->inval_range_ns = bench_arg_u64(argc, argv, "cost_inval_range", 300);
	c->inval_page_ns = bench_arg_u64(argc, argv, "cost_inval_page", 50);
	c->cmo_4k_ns = bench_arg_u64(argc, argv, "cost_cmo_4k", 400);
	// A kick: ~1 us to send the IPIs; per vCPU in guest mode ~2 us for the
	// exit, the request check and the acknowledgement seen by the sender.
	c->kick_ns = bench_arg_u64(argc, argv, "cost_kick", 1000);
	c->kick_ack_ns = bench_arg_u64(argc, argv, "cost_kick_ack", 2000);
}

void sim_costs_emit(struct bench_json *j, const struct sim_costs *c)
{
	bj_obj(j, "costs_ns");
	bj_u64(j, "inval_context", c->inval_context_ns);
	bj_u64(j, "inval_range", c->inval_range_ns);
	bj_u64(j, "inval_page", c->inval_page_ns);
	bj_u64(j, "cmo_4k", c->cmo_4k_ns);
	bj_u64(j, "kick", c->kick_ns);
	bj_u64(j, "kick_ack", c->kick_ack_ns);
	bj_obj_end(j);
}

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define GET(x)	  atomic_load_explicit(&(x), memory_order_relaxed)

// ---- backend

static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	struct sim *s = ctx;
	void *p = aligned_alloc(align, (size_t)npages * 4096);
	if (!p)
		return 0;
	memset(p, 0, (size_t)npages * 4096);
	ADD(s->n.pages_alloc, npages);
	return (uint64_t)(uintptr_t)p;
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	struct sim *s = ctx;
	ADD(s->n.pages_freed, npages);
	free((void *)(uintptr_t)pa);
}

// Publishes one invalidation in the log; every vCPU applies it before its
// next lookup.
static void inval_publish(struct sim *s, uint64_t lo, uint64_t hi)
{
	pthread_mutex_lock(&s->log_lock);
	uint64_t g = atomic_load(&s->inval_gen) + 1;
	atomic_store_explicit(&s->log[g % SIM_INVAL_LOG].lo, lo, memory_order_relaxed);
	atomic_store_explicit(&s->log[g % SIM_INVAL_LOG].hi, hi, memory_order_relaxed);
	atomic_store_explicit(&s->inval_gen, g, memory_order_seq_cst);
	pthread_mutex_unlock(&s->log_lock);
}

static void be_inval_context(void *ctx, struct s2_vm *vm)
{
	struct sim *s = ctx;
	ADD(s->n.inval_context, 1);
	inval_publish(s, 0, ~0ull);
	bench_spin_ns(s->costs.inval_context_ns);
}

static void be_inval_range(void *ctx, struct s2_vm *vm, uint64_t gpa, uint64_t size)
{
	struct sim *s = ctx;
	ADD(s->n.inval_range, 1);
	ADD(s->n.inval_range_pages, size >> 12);
	inval_publish(s, gpa, gpa + size);
	bench_spin_ns(s->costs.inval_range_ns + (size >> 12) * s->costs.inval_page_ns);
}

static void be_cmo(void *ctx, uint64_t pa, uint64_t size)
{
	struct sim *s = ctx;
	ADD(s->n.cmo_calls, 1);
	ADD(s->n.cmo_bytes, size);
	bench_spin_ns((size >> 12) * s->costs.cmo_4k_ns);
}

static bool be_need_resched(void *ctx)
{
	return false;
}

static void be_yield(void *ctx)
{
	sched_yield();
}

static void be_relax(void *ctx)
{
	sched_yield();
}

// Asks every vCPU in guest mode to leave it and reload before re-entering;
// waits for those acknowledgements (vCPUs outside guest mode check the
// request before they re-enter). The wait is needed for correctness (no
// vCPU may keep using an invalid root) but its length is the host's thread
// scheduling: it is counted apart (kick_wait_ns), and the modelled cost of
// the kick (cost_kick + cost_kick_ack per acknowledging vCPU) is spun.
static void be_kick_reload(void *ctx, struct s2_vm *vm)
{
	struct sim *s = ctx;
	uint64_t acks = 0, t0 = bench_now_ns();
	ADD(s->n.kicks, 1);
	uint64_t req = atomic_fetch_add(&s->reload_req, 1) + 1;
	unsigned n = atomic_load(&s->nvcpus);
	for (unsigned i = 0; i < n; i++) {
		struct sim_vcpu *v = s->vcpus[i];
		if (!v || !atomic_load(&v->in_guest))
			continue;
		acks++;
		while (atomic_load(&v->in_guest) && atomic_load(&v->seen_reload) < req)
			sched_yield();
	}
	ADD(s->n.kick_wait_ns, bench_now_ns() - t0);
	ADD(s->n.kick_acks, acks);
	bench_spin_ns(s->costs.kick_ns + acks * s->costs.kick_ack_ns);
}

void sim_init(struct sim *s, const struct sim_costs *costs)
{
	memset(s, 0, sizeof(*s));
	s->costs = *costs;
	pthread_mutex_init(&s->log_lock, NULL);
	pthread_mutex_init(&s->dlock, NULL);
	s->be = (struct s2_backend){
	    .page_alloc = be_page_alloc,
	    .page_free = be_page_free,
	    .inval_context = be_inval_context,
	    .inval_range = be_inval_range,
	    .cmo_clean_inval = be_cmo,
	    .need_resched = be_need_resched,
	    .yield = be_yield,
	    .cpu_relax = be_relax,
	    .kick_reload = be_kick_reload,
	    .cpu_index = host_be_cpu_index_hook, // the engine's epoch slot of this thread
	};
	host_sync_hooks_install(); // lock waits yield the host CPU
}

struct s2_vm *sim_vm_create(struct sim *s, const struct s2_fmt *fmt, unsigned caps,
			    enum s2_zap_mode mode)
{
	struct s2_vm_config cfg = {
	    .fmt = fmt,
	    .caps = caps,
	    .zap_mode = mode,
	    .be = &s->be,
	    .be_ctx = s,
	    .ncpus = HOST_MAX_CPUS,
	};
	int r = s2_vm_create(&cfg, &s->vm);
	if (r)
		bench_die("s2_vm_create: %d", r);
	return s->vm;
}

void sim_vm_destroy(struct sim *s)
{
	s2_vm_destroy(s->vm);
	s->vm = NULL;
	sim_reclaim(s);
}

void sim_counts_reset(struct sim *s)
{
	memset(&s->n, 0, sizeof(s->n));
}

void sim_counts_emit(struct bench_json *j, struct sim *s)
{
	bj_obj(j, "backend");
	bj_u64(j, "inval_context", GET(s->n.inval_context));
	bj_u64(j, "inval_range", GET(s->n.inval_range));
	bj_u64(j, "inval_range_pages", GET(s->n.inval_range_pages));
	bj_u64(j, "cmo_calls", GET(s->n.cmo_calls));
	bj_u64(j, "cmo_bytes", GET(s->n.cmo_bytes));
	bj_u64(j, "pages_alloc", GET(s->n.pages_alloc));
	bj_u64(j, "pages_freed", GET(s->n.pages_freed));
	bj_u64(j, "pages_deferred", GET(s->n.pages_deferred));
	bj_u64(j, "kicks", GET(s->n.kicks));
	bj_u64(j, "kick_acks", GET(s->n.kick_acks));
	bj_u64(j, "kick_wait_ns", GET(s->n.kick_wait_ns));
	bj_obj_end(j);
}

// ---- deferred frees

void sim_reclaim(struct sim *s)
{
	if (s->vm)
		s2_reclaim(s->vm); // the engine's deferred frees (mm/defer.c)
	pthread_mutex_lock(&s->dlock);
	size_t n = s->ndeferred;
	pthread_mutex_unlock(&s->dlock);
	if (!n)
		return;
	// Grace period: every vCPU inside an engine call now leaves it.
	unsigned nv = atomic_load(&s->nvcpus);
	for (unsigned i = 0; i < nv; i++) {
		struct sim_vcpu *v = s->vcpus[i];
		if (!v)
			continue;
		uint64_t q = atomic_load(&v->seq);
		if (q & 1)
			while (atomic_load(&v->seq) == q)
				sched_yield();
	}
	// The first n entries were parked before the grace period began.
	pthread_mutex_lock(&s->dlock);
	for (size_t i = 0; i < n; i++) {
		free((void *)(uintptr_t)s->deferred[i].pa);
		ADD(s->n.pages_freed, s->deferred[i].npages);
	}
	memmove(s->deferred, s->deferred + n, (s->ndeferred - n) * sizeof(*s->deferred));
	s->ndeferred -= n;
	pthread_mutex_unlock(&s->dlock);
}

// ---- vCPUs

static const struct s2_role role0 = {0, 0};

static void tlb_flush(struct sim_vcpu *v)
{
	for (unsigned i = 0; i < SIM_TLB_SETS; i++)
		v->tlb[i].gva = ~0ull;
}

struct sim_vcpu *sim_vcpu_new(struct sim *s)
{
	struct sim_vcpu *v = aligned_alloc(64, sizeof(*v));
	if (!v)
		bench_die("out of memory (vcpu)");
	memset(v, 0, sizeof(*v));
	v->sim = s;
	tlb_flush(v);
	v->tlb_gen = atomic_load(&s->inval_gen);
	atomic_store(&v->seen_reload, atomic_load(&s->reload_req));
	unsigned id = atomic_fetch_add(&s->nvcpus, 1);
	if (id >= SIM_MAX_VCPUS)
		bench_die("too many vCPUs");
	v->id = id;
	s->vcpus[id] = v;
	return v;
}

static void engine_enter(struct sim_vcpu *v)
{
	atomic_store(&v->in_guest, 0);
	atomic_fetch_add(&v->seq, 1);
}

static void engine_exit(struct sim_vcpu *v)
{
	atomic_fetch_add(&v->seq, 1);
}

void sim_vcpu_free(struct sim_vcpu *v)
{
	struct sim *s = v->sim;
	if (v->root) {
		engine_enter(v);
		// Only an invalid root may lose its last reference: the MMU keeps
		// one on valid roots, so a vCPU's put never frees a valid root.
		s2_root_put(s->vm, v->root);
		engine_exit(v);
		v->root = NULL;
	}
	s->vcpus[v->id] = NULL;
	free(v);
}

void sim_vcpu_exit_guest(struct sim_vcpu *v)
{
	atomic_store(&v->in_guest, 0);
}

uint64_t sim_vcpu_reload(struct sim_vcpu *v)
{
	struct sim *s = v->sim;
	uint64_t t0 = bench_now_ns();
	engine_enter(v);
	if (v->root)
		s2_root_put(s->vm, v->root);
	v->root = NULL;
	int r = s2_root_get(s->vm, role0, &v->root);
	engine_exit(v);
	if (r)
		bench_die("s2_root_get: %d", r);
	// A new root starts with a flush (the tagged TLB of the old one is dead).
	tlb_flush(v);
	v->tlb_gen = atomic_load(&s->inval_gen);
	uint64_t dt = bench_now_ns() - t0;
	v->reloads++;
	v->reload_ns_max = dt > v->reload_ns_max ? dt : v->reload_ns_max;
	if (v->reload_samples)
		bench_samples_add(v->reload_samples, dt);
	return dt;
}

// Guest-mode entry: acknowledge reload requests, reload an invalid root.
static void enter_guest(struct sim_vcpu *v)
{
	struct sim *s = v->sim;
	atomic_store(&v->in_guest, 1);
	uint64_t req = atomic_load(&s->reload_req);
	if (req != atomic_load(&v->seen_reload) || !v->root) {
		atomic_store(&v->in_guest, 0);
		atomic_store(&v->seen_reload, req);
		if (!v->root || s2_root_is_invalid(v->root))
			sim_vcpu_reload(v);
		atomic_store(&v->in_guest, 1);
	}
}

static unsigned tlb_set(uint64_t page, unsigned level)
{
	uint64_t h = (page ^ (level * 0x9e3779b97f4a7c15ull)) * 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 54) & (SIM_TLB_SETS - 1);
}

static void tlb_apply(struct sim_vcpu *v, uint64_t lo, uint64_t hi)
{
	if (hi - lo > 16 * 4096) {
		for (unsigned i = 0; i < SIM_TLB_SETS; i++) {
			struct sim_tlb_entry *e = &v->tlb[i];
			if (e->gva != ~0ull && e->gva < hi && e->gva + e->mask + 1 > lo)
				e->gva = ~0ull;
		}
		return;
	}
	for (uint64_t a = lo; a < hi; a += 4096) {
		for (unsigned l = 0; l < 3; l++) {
			uint64_t shift = 12 + 9 * l;
			struct sim_tlb_entry *e = &v->tlb[tlb_set(a >> shift, l)];
			if (e->gva != ~0ull && e->gva < hi && e->gva + e->mask + 1 > lo)
				e->gva = ~0ull;
		}
	}
}

// Brings the TLB up to date with every invalidation published so far.
static void tlb_sync(struct sim_vcpu *v)
{
	struct sim *s = v->sim;
	uint64_t g = atomic_load_explicit(&s->inval_gen, memory_order_acquire);
	if (g == v->tlb_gen)
		return;
	if (g - v->tlb_gen >= SIM_INVAL_LOG) {
		tlb_flush(v);
	} else {
		for (uint64_t k = v->tlb_gen + 1; k <= g; k++) {
			uint64_t lo = atomic_load_explicit(&s->log[k % SIM_INVAL_LOG].lo,
							   memory_order_relaxed);
			uint64_t hi = atomic_load_explicit(&s->log[k % SIM_INVAL_LOG].hi,
							   memory_order_relaxed);
			if (lo == 0 && hi == ~0ull) {
				tlb_flush(v);
				break;
			}
			tlb_apply(v, lo, hi);
		}
		// Lapped while reading: some log slots may hold newer ranges.
		if (atomic_load(&s->inval_gen) - v->tlb_gen >= SIM_INVAL_LOG)
			tlb_flush(v);
	}
	v->tlb_gen = g;
}

static bool tlb_lookup(struct sim_vcpu *v, uint64_t gpa, uint64_t *hpa)
{
	for (unsigned l = 0; l < 3; l++) {
		uint64_t shift = 12 + 9 * l;
		struct sim_tlb_entry *e = &v->tlb[tlb_set(gpa >> shift, l)];
		if (e->gva == (gpa & ~e->mask)) {
			*hpa = e->hpa + (gpa & e->mask);
			return true;
		}
	}
	return false;
}

static void tlb_fill(struct sim_vcpu *v, uint64_t gpa, uint64_t hpa, unsigned level)
{
	unsigned l = level > 2 ? 2 : level;
	uint64_t mask = (1ull << (12 + 9 * l)) - 1;
	struct sim_tlb_entry *e = &v->tlb[tlb_set(gpa >> (12 + 9 * l), l)];
	e->gva = gpa & ~mask;
	e->mask = mask;
	e->hpa = hpa - (gpa & mask);
}

// Translation for an access: TLB, else a hardware-like walk, else a fault.
// Returns 0 with *hpa, or 1 for an MMIO exit.
static int translate(struct sim_vcpu *v, uint64_t gpa, unsigned access, uint64_t *hpa)
{
	struct sim *s = v->sim;
	enter_guest(v);
	v->accesses++;
	tlb_sync(v);
	if (tlb_lookup(v, gpa, hpa))
		return 0;
	v->tlb_misses++;
	for (;;) {
		struct s2_xlate x;
		engine_enter(v);
		s2_translate(s->vm, v->root, gpa, &x);
		engine_exit(v);
		if (x.mapped && (x.prot & access) == access) {
			tlb_fill(v, gpa, x.hpa, x.level);
			*hpa = x.hpa;
			atomic_store(&v->in_guest, 1);
			return 0;
		}
		// An exit: the fault path (it also answers MMIO from markers).
		struct s2_fault_info fi;
		engine_enter(v);
		int r = s2_fault(s->vm, v->root, gpa, access, &fi);
		engine_exit(v);
		v->faults++;
		if (r == S2_FAULT_MMIO || r == S2_E_PERM) {
			v->mmio_exits++;
			enter_guest(v);
			return 1;
		}
		if (r == S2_FAULT_RETRY) {
			v->retries++;
		} else if (r != S2_FAULT_MAPPED) {
			bench_die("s2_fault(%#llx): %d", (unsigned long long)gpa, r);
		}
		// Re-enter: a reload request may have arrived meanwhile.
		enter_guest(v);
		tlb_sync(v);
	}
}

int sim_vcpu_write(struct sim_vcpu *v, uint64_t gpa, uint64_t val)
{
	uint64_t hpa;
	if (translate(v, gpa, S2_PROT_W, &hpa))
		return 1;
	*(volatile uint64_t *)(uintptr_t)hpa = val;
	return 0;
}

int sim_vcpu_read(struct sim_vcpu *v, uint64_t gpa, uint64_t *val)
{
	uint64_t hpa;
	if (translate(v, gpa, S2_PROT_R, &hpa))
		return 1;
	*val = *(volatile uint64_t *)(uintptr_t)hpa;
	return 0;
}

// ---- guest memory

uint64_t sim_guest_mem(uint64_t size, uint64_t align)
{
	size_t len = size + align;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		bench_die("cannot reserve %llu bytes of guest memory", (unsigned long long)size);
	uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	return a;
}

uint64_t sim_guest_mem_aliased(uint64_t size, uint64_t chunk)
{
	if (size <= chunk)
		return sim_guest_mem(size, 2 * BENCH_MIB);
	int fd = memfd_create("slat-bench-guest", 0);
	if (fd < 0 || ftruncate(fd, (off_t)chunk))
		bench_die("memfd for aliased guest memory");
	uint64_t base = sim_guest_mem(size, 2 * BENCH_MIB);
	for (uint64_t off = 0; off < size; off += chunk) {
		void *p = mmap((void *)(uintptr_t)(base + off), chunk, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, fd, 0);
		if (p == MAP_FAILED)
			bench_die("aliased guest memory mapping");
	}
	close(fd);
	return base;
}

void sim_guest_mem_free(uint64_t hpa, uint64_t size)
{
	// The reservation around it (alignment slack) stays: benchmarks are short.
	munmap((void *)(uintptr_t)hpa, size);
}
