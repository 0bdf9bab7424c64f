// SPDX-License-Identifier: Apache-2.0
//
// Lock-light roots (design section 4), also run under TSan: 64 threads that
// load one role get one root with the right count; invalid roots are never
// reused; the last put on a valid root is caught; a table is freed only after
// the grace period; zapping invalid roots issues no invalidation and checks
// for a yield at least every 512 entries; a frozen entry makes a racing fault
// retry; and a bounded stress of faulting vCPUs, a zapper and a reloader.
#include <pthread.h>

#include "mm/s2_internal.h" // the mmu lock's waiting-writer count
#include "mm/s2_testhooks.h"
#include "mm_test.h"

static const struct s2_role ROLE0 = {0, 0};

struct load_ctx {
	struct s2_vm *vm;
	pthread_barrier_t *bar;
	struct s2_root *got;
};

static void *loader(void *arg)
{
	struct load_ctx *c = arg;

	pthread_barrier_wait(c->bar);
	assert_int_equal(s2_root_get(c->vm, ROLE0, &c->got), 0);
	return NULL;
}

static void test_64_threads_one_root(void **state)
{
	struct mmt t;
	struct load_ctx c[64];
	pthread_t th[64];
	pthread_barrier_t bar;
	struct s2_stats st;

	t.be = host_be_new();
	struct s2_vm_config cfg = host_be_config(t.be, &s2_fmt_ept4);
	assert_int_equal(s2_vm_create(&cfg, &t.vm), 0);
	pthread_barrier_init(&bar, NULL, 64);
	for (int i = 0; i < 64; i++) {
		c[i] = (struct load_ctx){.vm = t.vm, .bar = &bar};
		pthread_create(&th[i], NULL, loader, &c[i]);
	}
	for (int i = 0; i < 64; i++)
		pthread_join(th[i], NULL);
	for (int i = 1; i < 64; i++)
		assert_ptr_equal(c[i].got, c[0].got);
	assert_int_equal(s2_root_refs(c[0].got), 64 + 1); // 64 vCPUs + the MMU
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.roots_alloc, 1);
	// Invalidate: the MMU's reference goes to the zapper, which drops it.
	s2_roots_invalidate_all(t.vm);
	assert_int_equal(s2_root_refs(c[0].got), 64);
	for (int i = 0; i < 64; i++)
		s2_root_put(t.vm, c[i].got);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.roots_freed, 1);
	pthread_barrier_destroy(&bar);
	s2_vm_destroy(t.vm);
	assert_int_equal(host_be_free(t.be), 0);
}

static void test_invalid_root_never_reused(void **state)
{
	struct mmt t;
	struct s2_root *r2, *r3;

	mmt_init(&t, &s2_fmt_npt4);
	s2_roots_mark_invalid(t.vm);
	assert_int_equal(s2_root_get(t.vm, ROLE0, &r2), 0);
	assert_ptr_not_equal(r2, t.root);
	assert_false(s2_root_is_invalid(r2));
	assert_int_equal(s2_root_get(t.vm, ROLE0, &r3), 0);
	assert_ptr_equal(r3, r2);
	assert_int_equal(s2_root_get(t.vm, (struct s2_role){1, 0}, &r3), 0); // other role
	assert_ptr_not_equal(r3, r2);
	s2_root_put(t.vm, r3);
	s2_root_put(t.vm, r2);
	mmt_fini(&t);
}

static unsigned assert_hits;
static void count_assert(const char *expr, const char *file, int line)
{
	assert_hits++;
}

static void test_last_put_on_valid_root_caught(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	s2_assert_hook = count_assert;
	s2_root_put(t.vm, t.root); // the vCPU's reference: fine
	assert_int_equal(assert_hits, 0);
	s2_root_put(t.vm, t.root); // the MMU's: the root is valid
	assert_int_equal(assert_hits, 1);
	s2_assert_hook = NULL;
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.roots_freed, 0); // not freed
	mmt_fini(&t);
}

static void test_free_after_grace_period(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map(t.vm, t.root, 1 * GiB, 4096, 0x5000000, S2_PROT_RWX, S2_MT_WB), 0);
	// A lockless reader takes a pointer to the 4K table, then the table goes.
	s2_read_enter(t.vm);
	uint64_t table = mmt_walk(&t, 1 * GiB).pte; // leaf
	const struct s2_fmt *f = s2_vm_fmt(t.vm);
	const s2_pte_t *root = (const s2_pte_t *)(uintptr_t)s2_root_pa(t.root);
	const s2_pte_t *l2 = (const s2_pte_t *)(uintptr_t)s2_pte_addr(f, root[0]);
	const s2_pte_t *l1 = (const s2_pte_t *)(uintptr_t)s2_pte_addr(f, l2[1]);
	const s2_pte_t *l0 = (const s2_pte_t *)(uintptr_t)s2_pte_addr(f, l1[0]);
	assert_int_equal(l0[0], table);
	int64_t live = host_be_live_pages(t.be);
	assert_int_equal(s2_unmap(t.vm, t.root, 1 * GiB, 4096), 0); // reclaims 3 tables
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.deferred_pending, 3);
	assert_int_equal(s2_reclaim(t.vm), 3); // our section holds the grace period back
	assert_int_equal(host_be_live_pages(t.be), live);
	// Still inside: the memory is valid (ASan would report a poisoned read),
	// and not poisoned. Entry 0 now reads "not present".
	assert_false(f->is_present(__atomic_load_n(&l0[0], __ATOMIC_ACQUIRE)));
	assert_int_not_equal(l0[1], 0xa5a5a5a5a5a5a5a5ull);
	s2_read_exit(t.vm);
	uint64_t gp = st.grace_periods;
	assert_int_equal(s2_reclaim(t.vm), 0);
	assert_int_equal(host_be_live_pages(t.be), live - 3);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.deferred_pending, 0);
	assert_int_equal(st.grace_periods, gp + 1); // the one poll completed one grace period
	mmt_fini(&t);
}

static void test_zap_invalid_no_invalidation(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map(t.vm, t.root, 0, 64 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	struct host_counts c0 = mmt_counts(&t);
	t.be->resched_every = 1;
	s2_roots_invalidate_all(t.vm);
	t.be->resched_every = 0;
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(c1.inval_context + c1.inval_range, c0.inval_context + c0.inval_range);
	assert_int_equal(c1.kicks - c0.kicks, 1);
	assert_true(c1.yields > c0.yields); // 16384 leaves: the zapper yielded
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.yields, c1.yields - c0.yields); // each engine yield is one be->yield
	// A bound by design: at most S2_YIELD_EVERY entries between two checks.
	assert_true(st.max_entries_between_checks <= S2_YIELD_EVERY);
	assert_int_equal(st.leaves_zapped, 16384);
	assert_false(mmt_walk(&t, 4096).mapped);
	uint64_t tables;
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1); // only the root is left
	host_tlb_unload(t.be, t.root);
	s2_root_put(t.vm, t.root); // last reference: freed after the grace period
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.roots_freed, 1);
	s2_vm_destroy(t.vm);
	assert_int_equal(host_be_free(t.be), 0);
}

// The invalid-root zapper empties 4K, then 2M, then 1G, then root-level
// entries, so that removing a table never empties more than its own 512
// entries at once: on every format, with 4K, 2M and 1G leaves in one tree,
// entries emptied inside removed subtrees included, at most S2_YIELD_EVERY
// entries pass between two yield checks (a bound: the walker promises
// "at most", so the assertion is <=), and every leaf and table goes.
static void test_zap_invalid_yield_bound_all_formats(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_ept5, &s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 4; i++) {
		struct mmt t;
		struct s2_stats st;
		uint64_t tables;

		mmt_init_caps(&t, fmts[i], fmts[i] == &s2_fmt_arm64_4k ? 40 : 0, fmts[i]->caps);
		assert_int_equal(
		    s2_map(t.vm, t.root, 0, 64 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
		    0); // 16384 4K leaves
		assert_int_equal(
		    s2_map(t.vm, t.root, 1 * GiB, 8 * MiB, 0x8000000000ull, S2_PROT_RW, S2_MT_WB),
		    0); // 4 2M leaves
		assert_int_equal(
		    s2_map(t.vm, t.root, 4 * GiB, 2 * GiB, 0x8000000000ull, S2_PROT_RW, S2_MT_WB),
		    0); // 2 1G leaves
		struct host_counts c0 = mmt_counts(&t);
		t.be->resched_every = 1;
		s2_roots_invalidate_all(t.vm);
		t.be->resched_every = 0;
		struct host_counts c1 = mmt_counts(&t);
		s2_vm_stats(t.vm, &st);
		assert_true(st.max_entries_between_checks <= S2_YIELD_EVERY);
		assert_int_equal(st.leaves_zapped, 16384 + 4 + 2);
		assert_int_equal(c1.inval_context + c1.inval_range,
				 c0.inval_context + c0.inval_range);
		mmt_sum(&t, &tables);
		assert_int_equal(tables, 1); // only the root is left
		mmt_fini(&t);
	}
}

static struct s2_root *yield_put_root;
static void put_at_yield(struct host_be *be)
{
	struct mmt *t = be->test_ctx;

	if (yield_put_root)
		s2_root_put(t->vm, yield_put_root);
	yield_put_root = NULL;
}

// A slot zap walks invalid roots too and yields; the vCPU holding the last
// reference of one drops it at that moment. The zap holds its own reference
// (I4.5), so the tree is not freed under it: the root goes after the walk.
static void test_zap_holds_root_reference(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	host_tlb_unload(t.be, t.root);
	s2_roots_invalidate_all(t.vm);
	assert_int_equal(s2_root_refs(t.root), 1); // the vCPU's only
	assert_int_equal(s2_map(t.vm, t.root, 0, 8 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0); // 2048 leaves
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 8 * MiB, 0x8000001000ull, 0), 0);
	t.be->test_ctx = &t;
	t.be->on_yield = put_at_yield;
	t.be->resched_every = 1;
	yield_put_root = t.root;
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	t.be->resched_every = 0;
	t.be->on_yield = NULL;
	assert_null(yield_put_root); // the put happened during the zap
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.roots_freed, 1);
	assert_int_equal(st.leaves_zapped, 2048);
	assert_int_equal(st.deferred_pending, 0);
	s2_vm_destroy(t.vm);
	assert_int_equal(host_be_free(t.be), 0);
}

// Lock statistics come from mm/sync.h's counters and are exact when one
// thread runs: root loads take the read lock (the B3 baseline: the write lock,
// also for puts), a map the write lock, a fault the read lock, and each yield
// of the invalid-root zapper one more read acquisition.
static void test_lock_stats(void **state)
{
	struct mmt t;
	struct s2_stats a, b;
	struct s2_root *r;

	mmt_init(&t, &s2_fmt_npt4); // one root_get: one read acquisition
	s2_vm_stats(t.vm, &a);
	assert_int_equal(a.lock_read, 1);
	assert_int_equal(a.lock_write, 0);
	assert_int_equal(s2_map(t.vm, t.root, 0, 8 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 64 * MiB, 2 * MiB, 0x200000000ull, 0), 0);
	s2_vm_stats(t.vm, &b);
	assert_int_equal(b.lock_write - a.lock_write, 1); // the map; a slot add takes none
	assert_int_equal(b.lock_read, a.lock_read);
	assert_int_equal(s2_fault(t.vm, t.root, 64 * MiB, S2_PROT_R, NULL), S2_FAULT_MAPPED);
	s2_vm_stats(t.vm, &a);
	assert_int_equal(a.lock_read - b.lock_read, 1);
	assert_int_equal(a.lock_write, b.lock_write);
	// B3 baseline: get and put under the write lock; default back afterwards.
	s2_vm_set_root_lock_write(t.vm, true);
	assert_int_equal(s2_root_get(t.vm, ROLE0, &r), 0);
	s2_root_put(t.vm, r);
	s2_vm_set_root_lock_write(t.vm, false);
	s2_vm_stats(t.vm, &b);
	assert_int_equal(b.lock_write - a.lock_write, 2);
	assert_int_equal(b.lock_read, a.lock_read);
	assert_int_equal(s2_root_get(t.vm, ROLE0, &r), 0);
	s2_root_put(t.vm, r);
	s2_vm_stats(t.vm, &a);
	assert_int_equal(a.lock_read - b.lock_read, 1);
	assert_int_equal(a.lock_write, b.lock_write);
	// Invalidate all: mark (write), zap (read, plus one per yield).
	t.be->resched_every = 1;
	s2_roots_invalidate_all(t.vm);
	t.be->resched_every = 0;
	s2_vm_stats(t.vm, &b);
	assert_true(b.yields > a.yields);
	assert_int_equal(b.lock_write - a.lock_write, 1);
	assert_int_equal(b.lock_read - a.lock_read, 1 + (b.yields - a.yields));
	assert_int_equal(b.lock_contended, 0);
	host_tlb_unload(t.be, t.root);
	s2_root_put(t.vm, t.root);
	s2_vm_stats(t.vm, &a);
	assert_int_equal(a.roots_freed, 1);
	assert_int_equal(a.deferred_pending, 0); // nobody reads: freed at once
	s2_vm_destroy(t.vm);
	assert_int_equal(host_be_free(t.be), 0);
}

// Root get and put are lock-light (design section 4): a vCPU loads and drops
// its root while another CPU holds the mmu lock for read (a fault, the
// invalid-root zapper). The reader below keeps its section open until the
// vCPU is done; if get or put waits for the write lock instead, a writer shows
// up waiting behind the reader and the test fails (without hanging: the
// reader then leaves, so the vCPU finishes).
struct getput_ctx {
	struct s2_vm *vm;
	pthread_t vcpu;
	bool vcpu_done, writer_waited;
	int get_result;
};

static void *get_put_vcpu(void *arg)
{
	struct getput_ctx *c = arg;
	struct s2_root *r = NULL;

	c->get_result = s2_root_get(c->vm, ROLE0, &r);
	if (r)
		s2_root_put(c->vm, r);
	__atomic_store_n(&c->vcpu_done, true, __ATOMIC_RELEASE);
	return NULL;
}

// The reader: holds the mmu lock for read (with its epoch section, as a fault
// does) until the vCPU is done or a writer waits behind it.
static void hold_read_until_vcpu_done(struct getput_ctx *c)
{
	s2_mmu_lock(c->vm, S2_LOCK_READ);
	pthread_create(&c->vcpu, NULL, get_put_vcpu, c);
	while (!__atomic_load_n(&c->vcpu_done, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&c->vm->mmu_lock.writers_waiting, __ATOMIC_ACQUIRE)) {
			c->writer_waited = true;
			break;
		}
		sched_yield();
	}
	s2_mmu_unlock(c->vm, S2_LOCK_READ);
}

static void test_root_get_put_beside_reader(void **state)
{
	struct mmt t;
	struct getput_ctx c = {0};

	mmt_init(&t, &s2_fmt_ept4);
	c.vm = t.vm;
	hold_read_until_vcpu_done(&c);
	pthread_join(c.vcpu, NULL);
	if (c.writer_waited)
		fail_msg("root get/put waited for the mmu write lock behind a reader "
			 "(they must be lock-light: read lock for get, no lock for put)");
	assert_int_equal(c.get_result, 0);
	assert_int_equal(s2_root_refs(t.root), 2); // the test's vCPU + the MMU
	mmt_fini(&t);
}

struct frozen_ctx {
	struct s2_root *root;
	int fault_result;
	bool done;
};

static int freeze_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind, void *ctx)
{
	struct frozen_ctx *c = ctx;
	struct s2_vm *vm = s2_walk_vm(w);
	s2_pte_t old = e->old;

	if (c->done || e->level != 1)
		return 0;
	// Freeze the entry as a subtree removal does, and fault under it.
	assert_true(__atomic_compare_exchange_n(e->ptep, &old, s2_vm_fmt(vm)->frozen, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	c->fault_result = s2_fault(vm, c->root, e->addr + 4096, S2_PROT_R, NULL);
	__atomic_store_n(e->ptep, e->old, __ATOMIC_RELEASE);
	// Now remove the subtree for real.
	struct s2_walk_entry fresh = *e;
	assert_true(s2_walk_remove_table_shared(w, &fresh));
	c->done = true;
	return S2_WALK_SKIP_CHILDREN;
}

static void test_frozen_entry_fault_retries(void **state)
{
	struct mmt t;
	struct frozen_ctx c;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_npt4);
	c = (struct frozen_ctx){.root = t.root};
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 2 * MiB, 0x100001000ull, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 4096, S2_PROT_R, NULL), S2_FAULT_MAPPED);
	assert_true(mmt_tlb(&t, 4096).mapped);
	assert_int_equal(s2_walk(t.vm, t.root, 0, 2 * MiB, 1, S2_WALK_TABLE_PRE | S2_WALK_SHARED,
				 freeze_visit, &c),
			 0);
	assert_true(c.done);
	assert_int_equal(c.fault_result, S2_FAULT_RETRY);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.faults_retry, 1);
	assert_false(mmt_tlb(&t, 4096).mapped); // removed and flushed (valid root)
	// The retried fault now succeeds.
	assert_int_equal(s2_fault(t.vm, t.root, 4096, S2_PROT_R, NULL), S2_FAULT_MAPPED);
	mmt_fini(&t);
}

// ---- stress -------------------------------------------------------------------------

struct stress {
	struct s2_vm *vm;
	struct host_be *be;
	int stop;
	uint64_t faults, retries, reloads, updates;
};

static void *vcpu(void *arg)
{
	struct stress *s = arg;
	struct s2_root *root;
	uint64_t x = (uint64_t)(uintptr_t)&root;

	assert_int_equal(s2_root_get(s->vm, ROLE0, &root), 0);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t gpa = (x % (64 * MiB / 4096)) * 4096;
		int r = s2_fault(s->vm, root, gpa, S2_PROT_R, NULL);

		__atomic_fetch_add(&s->faults, 1, __ATOMIC_RELAXED);
		if (r == S2_FAULT_RETRY && s2_root_is_invalid(root)) {
			s2_root_put(s->vm, root);
			assert_int_equal(s2_root_get(s->vm, ROLE0, &root), 0);
			__atomic_fetch_add(&s->retries, 1, __ATOMIC_RELAXED);
		}
		// A lockless read of the tables, as hardware would do.
		struct s2_xlate xl;
		s2_read_enter(s->vm);
		s2_translate(s->vm, root, gpa, &xl);
		s2_read_exit(s->vm);
	}
	s2_root_put(s->vm, root);
	return NULL;
}

static void *reloader(void *arg)
{
	struct stress *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct s2_root *r;

		assert_int_equal(s2_root_get(s->vm, ROLE0, &r), 0);
		s2_root_put(s->vm, r);
		__atomic_fetch_add(&s->reloads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *zapper(void *arg)
{
	struct stress *s = arg;

	for (unsigned i = 0; i < 30; i++) {
		s2_vm_set_zap_mode(s->vm, i % 3 ? S2_ZAP_ALL : S2_ZAP_SLOT);
		assert_int_equal(s2_slot_delete(s->vm, 0, 1), 0);
		assert_int_equal(s2_slot_add(s->vm, 0, 1, 32 * MiB, 32 * MiB, 0x200000000ull, 0),
				 0);
		__atomic_fetch_add(&s->updates, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_stress(void **state)
{
	struct stress s = {0};
	pthread_t th[6];

	s.be = host_be_new();
	struct s2_vm_config cfg = host_be_config(s.be, &s2_fmt_ept4);
	assert_int_equal(s2_vm_create(&cfg, &s.vm), 0);
	assert_int_equal(s2_slot_add(s.vm, 0, 0, 0, 32 * MiB, 0x100000000ull, 0), 0);
	assert_int_equal(s2_slot_add(s.vm, 0, 1, 32 * MiB, 32 * MiB, 0x200000000ull, 0), 0);
	s.be->resched_every = 3;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, vcpu, &s);
	pthread_create(&th[4], NULL, reloader, &s);
	pthread_create(&th[5], NULL, zapper, &s);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	assert_true(s.faults > 0 && s.updates == 30);
	s2_vm_destroy(s.vm);
	assert_int_equal(host_be_free(s.be), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_64_threads_one_root),
	    cmocka_unit_test(test_invalid_root_never_reused),
	    cmocka_unit_test(test_root_get_put_beside_reader),
	    cmocka_unit_test(test_last_put_on_valid_root_caught),
	    cmocka_unit_test(test_free_after_grace_period),
	    cmocka_unit_test(test_zap_invalid_no_invalidation),
	    cmocka_unit_test(test_zap_invalid_yield_bound_all_formats),
	    cmocka_unit_test(test_zap_holds_root_reference),
	    cmocka_unit_test(test_lock_stats),
	    cmocka_unit_test(test_frozen_entry_fault_retries),
	    cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
