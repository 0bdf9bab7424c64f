// SPDX-License-Identifier: Apache-2.0
//
// Hosted backend: see host_be.h. Uses libc and pthreads (hosted only).
#include "arch/host/host_be.h"

#include "arch/host/host_vcpu.h"
#include "mm/sync.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOST_ASAN 1
#endif
#endif
#ifdef HOST_ASAN
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define POISON(p, n)   __asan_poison_memory_region((p), (n))
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define POISON(p, n)   ((void)0)
#define UNPOISON(p, n) ((void)0)
#endif

#define POISON_BYTE 0xa5
#define Q_MAX	    2048

struct host_q {
	struct host_q *next;
	void *p;
	unsigned npages;
};

#define CNT(be, f, n) __atomic_fetch_add(&(be)->c.f, (n), __ATOMIC_RELAXED)

// ---- pages ------------------------------------------------------------------------

static bool poison_intact(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i] != POISON_BYTE)
			return false;
	}
	return true;
}

static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	struct host_be *be = ctx;
	uint64_t seq = __atomic_add_fetch(&be->alloc_seq, 1, __ATOMIC_RELAXED);

	uint64_t live = __atomic_load_n(&be->c.alloc_pages, __ATOMIC_RELAXED) -
			__atomic_load_n(&be->c.free_pages, __ATOMIC_RELAXED);

	if ((be->fail_at && seq == be->fail_at) || (be->fail_every && seq % be->fail_every == 0) ||
	    (be->page_limit && live + npages > be->page_limit)) {
		CNT(be, alloc_failures, 1);
		return 0;
	}
	void *p = aligned_alloc(align < 4096 ? 4096 : align, (size_t)npages * 4096);
	if (!p)
		return 0;
	memset(p, 0, (size_t)npages * 4096);
	CNT(be, allocs, 1);
	CNT(be, alloc_pages, npages);
	return (uint64_t)(uintptr_t)p;
}

// Caller holds be->mu.
static void quarantine(struct host_be *be, void *p, unsigned npages)
{
	struct host_q *q = malloc(sizeof(*q));

	memset(p, POISON_BYTE, (size_t)npages * 4096);
	POISON(p, (size_t)npages * 4096);
	q->next = NULL;
	q->p = p;
	q->npages = npages;
	if (be->q_tail)
		be->q_tail->next = q;
	else
		be->q_head = q;
	be->q_tail = q;
	if (++be->q_len <= be->q_max)
		return;
	q = be->q_head;
	be->q_head = q->next;
	if (!be->q_head)
		be->q_tail = NULL;
	be->q_len--;
	UNPOISON(q->p, (size_t)q->npages * 4096);
	if (!poison_intact(q->p, (size_t)q->npages * 4096))
		CNT(be, poison_violations, 1); // written after free
	free(q->p);
	free(q);
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	struct host_be *be = ctx;

	CNT(be, frees, 1);
	CNT(be, free_pages, npages);
	if (be->fast_free) {
		free((void *)(uintptr_t)pa);
		return;
	}
	pthread_mutex_lock(&be->mu);
	quarantine(be, (void *)(uintptr_t)pa, npages);
	pthread_mutex_unlock(&be->mu);
}

// ---- CPU slots -----------------------------------------------------------------------

static uint32_t cpu_used[HOST_MAX_CPUS];
static _Thread_local int my_cpu = -1;
static pthread_key_t cpu_key;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

// Thread exit: the slot goes back (the thread is outside every read section).
static void cpu_release(void *v)
{
	__atomic_store_n(&cpu_used[(uintptr_t)v - 1], 0, __ATOMIC_RELEASE);
}

static void cpu_key_init(void)
{
	pthread_key_create(&cpu_key, cpu_release);
}

unsigned host_cpu_index(void)
{
	if (my_cpu >= 0)
		return (unsigned)my_cpu;
	pthread_once(&cpu_once, cpu_key_init);
	for (int i = 0; i < HOST_MAX_CPUS; i++) {
		uint32_t free = 0;

		if (__atomic_compare_exchange_n(&cpu_used[i], &free, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			my_cpu = i;
			pthread_setspecific(cpu_key, (void *)(uintptr_t)(i + 1));
			return (unsigned)i;
		}
	}
	fprintf(stderr, "host_be: more than %d threads use the engine\n", HOST_MAX_CPUS);
	abort();
}

unsigned host_be_cpu_index_hook(void *ctx)
{
	return host_cpu_index();
}

static void host_relax(void)
{
	sched_yield();
}

void host_sync_hooks_install(void)
{
	mm_sync_set_relax(host_relax);
}

// ---- cost model ------------------------------------------------------------------------

static double spin_iters_per_ns;
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;

uint64_t host_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin_iters(uint64_t n)
{
	for (volatile uint64_t i = 0; i < n; i++)
		;
}

// Doubles the loop until one run lasts over 20 ms, then keeps its rate.
static void spin_calibrate(void)
{
	for (uint64_t n = 1u << 20;; n *= 2) {
		uint64_t t0 = host_now_ns();
		spin_iters(n);
		uint64_t dt = host_now_ns() - t0;
		if (dt > 20000000ull || n >= (1ull << 34)) {
			spin_iters_per_ns = (double)n / (double)dt;
			return;
		}
	}
}

void host_spin_ns(uint64_t ns)
{
	if (!ns)
		return;
	pthread_once(&spin_once, spin_calibrate);
	spin_iters((uint64_t)((double)ns * spin_iters_per_ns));
}

// Counts the modelled time of one operation and spends it.
static void charge(struct host_be *be, uint64_t ns)
{
	CNT(be, cost_ns, ns);
	host_spin_ns(ns);
}

// ---- invalidation, CMO, scheduling -------------------------------------------------

static void tlb_drop(struct host_be *be, bool all, uint64_t lo, uint64_t hi);

static void be_inval_context(void *ctx, struct s2_vm *vm)
{
	struct host_be *be = ctx;

	CNT(be, inval_context, 1);
	if (be->on_inval)
		be->on_inval(be, vm, 0, 0, true);
	tlb_drop(be, true, 0, 0);
	if (be->vcpus)
		host_vcpus_inval(be->vcpus, 0, ~0ull);
	charge(be, be->costs.inval_context_ns);
}

static void be_inval_range(void *ctx, struct s2_vm *vm, uint64_t gpa, uint64_t size)
{
	struct host_be *be = ctx;

	CNT(be, inval_range, 1);
	CNT(be, inval_range_pages, size >> 12);
	if (be->on_inval)
		be->on_inval(be, vm, gpa, size, false);
	tlb_drop(be, false, gpa, gpa + size);
	if (be->vcpus)
		host_vcpus_inval(be->vcpus, gpa, gpa + size);
	charge(be, be->costs.inval_range_ns + (size >> 12) * be->costs.inval_page_ns);
}

static void be_cmo(void *ctx, uint64_t pa, uint64_t size)
{
	struct host_be *be = ctx;

	CNT(be, cmo_calls, 1);
	CNT(be, cmo_bytes, size);
	charge(be, (size >> 12) * be->costs.cmo_4k_ns);
}

static bool be_need_resched(void *ctx)
{
	struct host_be *be = ctx;
	uint64_t n = __atomic_add_fetch(&be->c.resched_checks, 1, __ATOMIC_RELAXED);

	return be->resched_every && n % be->resched_every == 0;
}

// Called at every yield point, just before the engine drops the lock and lets
// another CPU run: no cached translation of a valid root may be stale then
// (I1.2).
static void be_yield(void *ctx)
{
	struct host_be *be = ctx;
	unsigned stale = host_tlb_stale(be);

	CNT(be, yields, 1);
	if (stale) {
		CNT(be, stale_at_yield, stale);
		CNT(be, yields_with_stale, 1);
	}
	if (be->on_yield)
		be->on_yield(be);
}

static void be_relax(void *ctx)
{
	struct host_be *be = ctx;

	CNT(be, relax, 1);
	sched_yield();
}

static void be_kick(void *ctx, struct s2_vm *vm)
{
	struct host_be *be = ctx;
	uint64_t acks = 0;

	CNT(be, kicks, 1);
	if (be->on_kick)
		be->on_kick(be, vm);
	if (be->vcpus) {
		// The wait is the host's thread scheduling, not a machine cost:
		// counted apart, and the modelled cost is charged instead.
		uint64_t t0 = host_now_ns();
		acks = host_vcpus_kick(be->vcpus);
		CNT(be, kick_wait_ns, host_now_ns() - t0);
		CNT(be, kick_acks, acks);
	}
	charge(be, be->costs.kick_ns + acks * be->costs.kick_ack_ns);
}

// ---- software TLB ---------------------------------------------------------------------

static unsigned tlb_hash(uint64_t root_pa, uint64_t page)
{
	uint64_t h = (root_pa >> 12) * 0x9e3779b97f4a7c15ull ^ page * 0xc2b2ae3d27d4eb4full;

	return (unsigned)(h >> 40) & (HOST_TLB_CAP - 1);
}

static struct host_tlb_ent *tlb_find(struct host_be *be, uint64_t root_pa, uint64_t page)
{
	for (unsigned i = tlb_hash(root_pa, page), n = 0; n < HOST_TLB_CAP;
	     i = (i + 1) & (HOST_TLB_CAP - 1), n++) {
		struct host_tlb_ent *e = &be->tlb[i];

		if (!e->root_pa || (e->root_pa == root_pa && e->page == page))
			return e;
	}
	return NULL;
}

static void tlb_insert(struct host_be *be, const struct host_tlb_ent *ent)
{
	struct host_tlb_ent *e = tlb_find(be, ent->root_pa, ent->page);

	*e = *ent;
	e->ui = be->tlb_n;
	be->tlb_used[be->tlb_n++] = (uint16_t)(e - be->tlb);
}

// Removes entry i: off the used list (the last one takes its place), then
// linear probing's backward-shift deletion (no tombstones).
static void tlb_del(struct host_be *be, unsigned i)
{
	const unsigned mask = HOST_TLB_CAP - 1;
	unsigned ui = be->tlb[i].ui, last = be->tlb_used[--be->tlb_n];
	unsigned j = i;

	be->tlb_used[ui] = (uint16_t)last;
	be->tlb[last].ui = ui;
	for (;;) {
		be->tlb[i].root_pa = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!be->tlb[j].root_pa)
				return;
			unsigned k = tlb_hash(be->tlb[j].root_pa, be->tlb[j].page);
			// Entry j may stay when its home k lies cyclically in (i, j].
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		be->tlb[i] = be->tlb[j];
		be->tlb_used[be->tlb[i].ui] = (uint16_t)i;
		i = j;
	}
}

// Caller holds be->mu. Drops the entries of everything (`all`), of a root
// (`root_pa`), or of [lo, hi) in every root. Costs O(cached entries).
static void tlb_rebuild(struct host_be *be, bool all, uint64_t lo, uint64_t hi, uint64_t root_pa)
{
	// Downwards: a deletion moves the last position (already seen) into i.
	for (unsigned i = be->tlb_n; i-- > 0;) {
		struct host_tlb_ent *e = &be->tlb[be->tlb_used[i]];
		uint64_t a = e->page << 12;

		if (all || e->root_pa == root_pa || (root_pa == 0 && a >= lo && a < hi))
			tlb_del(be, be->tlb_used[i]);
	}
}

static void tlb_drop(struct host_be *be, bool all, uint64_t lo, uint64_t hi)
{
	pthread_mutex_lock(&be->mu);
	tlb_rebuild(be, all, lo, hi, 0);
	pthread_mutex_unlock(&be->mu);
}

void host_tlb_load(struct host_be *be, struct s2_vm *vm, const struct s2_root *root)
{
	pthread_mutex_lock(&be->mu);
	be->vm = vm;
	tlb_rebuild(be, false, 1, 0, s2_root_pa(root));
	for (unsigned i = 0; i < 8; i++) {
		if (be->loaded[i] == root)
			break;
		if (!be->loaded[i]) {
			be->loaded[i] = root;
			break;
		}
	}
	pthread_mutex_unlock(&be->mu);
}

void host_tlb_unload(struct host_be *be, const struct s2_root *root)
{
	pthread_mutex_lock(&be->mu);
	tlb_rebuild(be, false, 1, 0, s2_root_pa(root));
	for (unsigned i = 0; i < 8; i++) {
		if (be->loaded[i] == root)
			be->loaded[i] = NULL;
	}
	pthread_mutex_unlock(&be->mu);
}

void host_tlb_translate(struct host_be *be, struct s2_vm *vm, const struct s2_root *root,
			uint64_t gpa, struct s2_xlate *out)
{
	uint64_t rpa = s2_root_pa(root), page = gpa >> 12;

	pthread_mutex_lock(&be->mu);
	struct host_tlb_ent *e = tlb_find(be, rpa, page);
	if (e && e->root_pa) {
		*out = e->x;
		out->hpa = (e->x.hpa & ~0xfffull) | (gpa & 0xfff);
		CNT(be, tlb_hits, 1);
		pthread_mutex_unlock(&be->mu);
		return;
	}
	CNT(be, tlb_misses, 1);
	s2_translate(vm, root, gpa & ~0xfffull, out);
	if (out->mapped && e && be->tlb_n < HOST_TLB_CAP / 2)
		tlb_insert(be, &(struct host_tlb_ent){.root_pa = rpa, .page = page, .x = *out});
	out->hpa |= gpa & 0xfff;
	pthread_mutex_unlock(&be->mu);
}

unsigned host_tlb_stale(struct host_be *be)
{
	unsigned stale = 0;

	pthread_mutex_lock(&be->mu);
	for (unsigned r = 0; r < 8 && be->vm; r++) {
		const struct s2_root *root = be->loaded[r];

		if (!root || s2_root_is_invalid(root))
			continue;
		for (unsigned i = 0; i < be->tlb_n; i++) {
			struct host_tlb_ent *e = &be->tlb[be->tlb_used[i]];
			struct s2_xlate x;

			if (e->root_pa != s2_root_pa(root))
				continue;
			s2_translate(be->vm, root, e->page << 12, &x);
			if (!x.mapped || x.hpa != e->x.hpa || x.prot != e->x.prot)
				stale++;
		}
	}
	pthread_mutex_unlock(&be->mu);
	return stale;
}

unsigned host_tlb_size(struct host_be *be)
{
	return be->tlb_n;
}

// ---- life cycle ---------------------------------------------------------------------------

struct host_be *host_be_new(void)
{
	struct host_be *be = calloc(1, sizeof(*be));

	pthread_mutex_init(&be->mu, NULL);
	be->q_max = Q_MAX;
	be->ops = (struct s2_backend){
	    .page_alloc = be_page_alloc,
	    .page_free = be_page_free,
	    .inval_context = be_inval_context,
	    .inval_range = be_inval_range,
	    .cmo_clean_inval = be_cmo,
	    .need_resched = be_need_resched,
	    .yield = be_yield,
	    .cpu_relax = be_relax,
	    .kick_reload = be_kick,
	    .cpu_index = host_be_cpu_index_hook,
	};
	host_sync_hooks_install();
	return be;
}

struct s2_vm_config host_be_config(struct host_be *be, const struct s2_fmt *fmt)
{
	return (struct s2_vm_config){
	    .fmt = fmt, .caps = fmt->caps, .be = &be->ops, .be_ctx = be, .ncpus = HOST_BE_CPUS};
}

int64_t host_be_live_pages(struct host_be *be)
{
	return (int64_t)(__atomic_load_n(&be->c.alloc_pages, __ATOMIC_RELAXED) -
			 __atomic_load_n(&be->c.free_pages, __ATOMIC_RELAXED));
}

void host_be_counts(struct host_be *be, struct host_counts *out)
{
	pthread_mutex_lock(&be->mu);
	*out = be->c;
	pthread_mutex_unlock(&be->mu);
}

int64_t host_be_free(struct host_be *be)
{
	int64_t live = host_be_live_pages(be);

	pthread_mutex_lock(&be->mu);
	be->q_max = 0;
	while (be->q_head) {
		struct host_q *q = be->q_head;

		be->q_head = q->next;
		UNPOISON(q->p, (size_t)q->npages * 4096);
		if (!poison_intact(q->p, (size_t)q->npages * 4096))
			be->c.poison_violations++;
		free(q->p);
		free(q);
	}
	pthread_mutex_unlock(&be->mu);
	if (be->c.poison_violations) {
		fprintf(stderr, "host_be: %llu freed pages were written after free\n",
			(unsigned long long)be->c.poison_violations);
		abort();
	}
	pthread_mutex_destroy(&be->mu);
	free(be);
	return live;
}
