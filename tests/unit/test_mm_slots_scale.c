// SPDX-License-Identifier: Apache-2.0
//
// Memslots at scale (issue 14): S2_MAX_SLOTS = 32764 slots per address space
// added, looked up, moved and deleted with exact counts (the 32765th is
// S2_E_FULL); O(log n) lookups and updates proven by counted index-node
// visits (no timing) for n = 2^7 .. 2^14 and 32764; an allocation failure at
// every allocation site of every update leaves the slots unchanged; the
// record pages come from the page source and all go back at destroy.
#include <math.h>
#include <stdio.h>

#include "mm/s2_internal.h" // record size, free records, the set trees
#include "mm_test.h"

#define RECS_PER_PAGE ((4096 - 8) / sizeof(struct s2_slot_rec))
#define SLOT_GPA(i)   ((uint64_t)(i)*8 * KiB) // 4 KiB slots with 4 KiB holes
#define SLOT_HPA(i)   (1 * GiB + (uint64_t)(i)*4 * KiB)

static uint64_t visits(struct s2_vm *vm)
{
	struct s2_stats st;

	s2_vm_stats(vm, &st);
	return st.slot_visits;
}

static uint64_t updates(struct s2_vm *vm)
{
	struct s2_stats st;

	s2_vm_stats(vm, &st);
	return st.slot_updates;
}

static void add_n(struct mmt *t, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(s2_slot_add(t->vm, 0, i, SLOT_GPA(i), 4 * KiB, SLOT_HPA(i), 0), 0);
}

static void expect_slot(struct mmt *t, uint64_t gpa, uint32_t id, uint64_t base, uint64_t hpa)
{
	struct s2_slot sl;

	assert_true(s2_slot_find(t->vm, 0, gpa, &sl));
	assert_int_equal(sl.id, id);
	assert_int_equal(sl.gpa, base);
	assert_int_equal(sl.size, 4 * KiB);
	assert_int_equal(sl.hpa, hpa);
}

// Both sets: AVL-valid, same size, height within the AVL bound.
static void check_sets(struct s2_vm *vm, unsigned n)
{
	double hmax = 1.4405 * log2((double)n + 2) - 0.3277;

	for (unsigned i = 0; i < 2; i++) {
		const struct s2_slotset *s = &vm->sets[0][i];

		assert_int_equal(s->n, n);
		assert_true(s2_tree_check(s->by_gpa));
		assert_true(s2_tree_check(s->by_id));
		assert_true(s2_tree_height(s->by_gpa) <= hmax);
		assert_true(s2_tree_height(s->by_id) <= hmax);
	}
}

static void test_max_slots(void **state)
{
	struct mmt t;
	struct s2_slot sl;
	const unsigned n = S2_MAX_SLOTS;

	assert_int_equal(S2_MAX_SLOTS, 32764);
	mmt_init(&t, &s2_fmt_ept4);
	int64_t live0 = host_be_live_pages(t.be);
	add_n(&t, n);
	// Footprint: exactly the record pages the slots need.
	assert_int_equal(host_be_live_pages(t.be) - live0, (n + RECS_PER_PAGE - 1) / RECS_PER_PAGE);
	assert_int_equal(s2_slot_add(t.vm, 0, n, SLOT_GPA(n), 4 * KiB, SLOT_HPA(n), 0), S2_E_FULL);
	// Checks come before the limit: an overlap or a duplicate is still named.
	assert_int_equal(s2_slot_add(t.vm, 0, n, SLOT_GPA(5), 4 * KiB, 0, 0), S2_E_OVERLAP);
	assert_int_equal(s2_slot_add(t.vm, 0, 5, SLOT_GPA(n), 4 * KiB, 0, 0), S2_E_EXIST);
	// The other address space has its own limit.
	assert_int_equal(s2_slot_add(t.vm, 1, n, 0, 4 * KiB, 0, 0), 0);
	check_sets(t.vm, n);
	for (unsigned i = 0; i < n; i++) {
		expect_slot(&t, SLOT_GPA(i) + 4095, i, SLOT_GPA(i), SLOT_HPA(i));
		assert_false(s2_slot_find(t.vm, 0, SLOT_GPA(i) + 4 * KiB, &sl)); // the hole
	}
	// Move every slot into the hole above it.
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(s2_slot_move(t.vm, 0, i, SLOT_GPA(i) + 4 * KiB), 0);
	check_sets(t.vm, n);
	for (unsigned i = 0; i < n; i++) {
		expect_slot(&t, SLOT_GPA(i) + 4 * KiB, i, SLOT_GPA(i) + 4 * KiB, SLOT_HPA(i));
		assert_false(s2_slot_find(t.vm, 0, SLOT_GPA(i), &sl));
	}
	assert_int_equal(s2_slot_add(t.vm, 0, n, SLOT_GPA(0), 4 * KiB, 0, 0), S2_E_FULL);
	// Delete the even ones, then the odd ones.
	for (unsigned p = 0; p < 2; p++) {
		for (unsigned i = p; i < n; i += 2)
			assert_int_equal(s2_slot_delete(t.vm, 0, i), 0);
		check_sets(t.vm, p ? 0 : n / 2);
	}
	for (unsigned i = 0; i < n; i++)
		assert_false(s2_slot_find(t.vm, 0, SLOT_GPA(i) + 4 * KiB, &sl));
	assert_int_equal(s2_slot_delete(t.vm, 0, 0), S2_E_NOENT);
	assert_int_equal(updates(t.vm), 3ull * n + 1);
	assert_int_equal(s2_slots_generation(t.vm), 2 * (3ull * n + 1));
	// Freed records are reused: a full set again takes no new page.
	int64_t live1 = host_be_live_pages(t.be);
	add_n(&t, n);
	assert_int_equal(host_be_live_pages(t.be), live1);
	mmt_fini(&t); // every record page back (leak check)
}

// A move may overlap its own old range, never another slot: the index check
// looks past the moved slot to the one below it.
static void test_move_overlap_past_self(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 8 * KiB, 0, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 2, 16 * KiB, 16 * KiB, 1 * MiB, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 64 * KiB, 4 * KiB, 2 * MiB, 0), 0);
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 4 * KiB), S2_E_OVERLAP);  // also slot 1
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 52 * KiB), S2_E_OVERLAP); // slot 3
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 8 * KiB), 0);		    // only itself
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 24 * KiB), 0);
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 4 * KiB), 0);
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 20 * KiB), S2_E_OVERLAP); // above, slot 2
	mmt_fini(&t);
}

// In the middle of a delete or move (the zap, step 2) the slot is in neither
// place for lookups: the INVALID copy hides it; a fault on its old range
// retries (re-enters the guest) until the update is done, as on KVM's
// invalid memslot, rather than answering MMIO for memory that may stay RAM.
struct mid {
	bool seen, found_old, found_new;
	int fault_old;
	struct s2_vm *vm;
};

static void look_mid_update(struct host_be *be, struct s2_vm *vm)
{
	struct mid *m = be->test_ctx;
	struct s2_slot sl;
	struct s2_root *r;

	m->seen = true;
	m->found_old = s2_slot_find(vm, 0, 4 * KiB, &sl);
	m->found_new = s2_slot_find(vm, 0, 1 * GiB + 4 * KiB, &sl);
	assert_int_equal(s2_root_get(vm, (struct s2_role){0, 0}, &r), 0);
	m->fault_old = s2_fault(vm, r, 4 * KiB, S2_PROT_R, NULL);
	s2_root_put(vm, r);
}

static void test_slot_hidden_mid_update(void **state)
{
	struct mmt t;
	struct mid m = {0};
	struct s2_slot sl;

	mmt_init(&t, &s2_fmt_npt4);
	s2_vm_set_zap_mode(t.vm, S2_ZAP_ALL); // the zap kicks: the hook runs mid-update
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 2 * MiB, 1 * GiB, 0), 0);
	t.be->test_ctx = &m;
	t.be->on_kick = look_mid_update;
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 1 * GiB), 0);
	assert_true(m.seen && !m.found_old && !m.found_new);
	assert_int_equal(m.fault_old, S2_FAULT_RETRY);
	assert_true(s2_slot_find(t.vm, 0, 1 * GiB + 4 * KiB, &sl));
	m = (struct mid){0};
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 0), 0);
	assert_true(m.seen && !m.found_old && !m.found_new);
	m = (struct mid){0};
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	assert_true(m.seen && !m.found_old && !m.found_new);
	assert_int_equal(m.fault_old, S2_FAULT_RETRY);
	t.be->on_kick = NULL;
	host_tlb_unload(t.be, t.root);
	s2_root_put(t.vm, t.root); // invalidated by the zap-all updates
	assert_int_equal(s2_root_get(t.vm, (struct s2_role){0, 0}, &t.root), 0);
	host_tlb_load(t.be, t.vm, t.root);
	mmt_fini(&t);
}

// Node visits of the slot indexes per operation with n slots. The bound is
// the AVL height bound times the number of tree walks an operation makes (a
// lookup: 1; an update: a few per set), so it grows with log2 n; a linear
// scan or an unbalanced tree (slots are added in gpa order) exceeds it.
struct cost {
	uint64_t lookup, add, move, flags, del;
};

static uint64_t op_visits(struct mmt *t, int r_expect, int (*op)(struct mmt *, unsigned),
			  unsigned arg)
{
	uint64_t v = visits(t->vm);
	assert_int_equal(op(t, arg), r_expect);
	return visits(t->vm) - v;
}

static unsigned g_n;
static int op_lookup(struct mmt *t, unsigned i)
{
	struct s2_slot sl;
	return s2_slot_find(t->vm, 0, SLOT_GPA(i) + 100, &sl) ? 0 : -1;
}
static int op_add(struct mmt *t, unsigned i)
{
	return s2_slot_add(t->vm, 0, g_n + i, SLOT_GPA(g_n + i), 4 * KiB, 0, 0);
}
static int op_move(struct mmt *t, unsigned i)
{
	return s2_slot_move(t->vm, 0, i, SLOT_GPA(i) + 4 * KiB);
}
static int op_flags(struct mmt *t, unsigned i)
{
	return s2_slot_set_flags(t->vm, 0, i, S2_SLOT_READONLY);
}
static int op_del(struct mmt *t, unsigned i)
{
	return s2_slot_delete(t->vm, 0, i);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static struct cost measure(unsigned n)
{
	struct mmt t;
	struct cost c = {0};
	const unsigned probes = 64;

	mmt_init(&t, &s2_fmt_ept4);
	add_n(&t, n - probes); // the add probes bring it to n
	g_n = n - probes;
	for (unsigned k = 0; k < probes; k++)
		c.add = max64(c.add, op_visits(&t, 0, op_add, k));
	check_sets(t.vm, n);
	for (unsigned k = 0; k < probes; k++) {
		unsigned i = (unsigned)(((uint64_t)k * 2654435761u) % n); // spread
		c.lookup = max64(c.lookup, op_visits(&t, 0, op_lookup, i));
		c.move = max64(c.move, op_visits(&t, 0, op_move, i));
		c.flags = max64(c.flags, op_visits(&t, 0, op_flags, i));
		c.del = max64(c.del, op_visits(&t, 0, op_del, i));
		assert_int_equal(s2_slot_add(t.vm, 0, i, SLOT_GPA(i), 4 * KiB, SLOT_HPA(i), 0), 0);
	}
	check_sets(t.vm, n);
	mmt_fini(&t);
	return c;
}

static void test_update_cost_log_n(void **state)
{
	unsigned ns[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384, S2_MAX_SLOTS};

	for (unsigned j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
		unsigned n = ns[j];
		struct cost c = measure(n);
		double h = 1.4405 * log2((double)n + 2) - 0.3277; // AVL height bound

		printf("slots %5u: node visits per op (max of 64): lookup %llu add %llu move %llu "
		       "flags %llu delete %llu (height bound %.1f)\n",
		       n, (unsigned long long)c.lookup, (unsigned long long)c.add,
		       (unsigned long long)c.move, (unsigned long long)c.flags,
		       (unsigned long long)c.del, h);
		// A lookup is one walk from the root.
		assert_true(c.lookup <= h);
		// An add: id find + overlap floor + 2 inserts in each set.
		assert_true(c.add <= 6 * h);
		// Delete/move/flags: id find (move: + 2 floors), replace by the
		// INVALID copy (per set and tree: a remove, one root-to-leaf path,
		// and an insert: 8h), then the final change (at most 8h again; a
		// delete removes only: 4h).
		assert_true(c.del <= 13 * h);
		assert_true(c.move <= 19 * h);
		assert_true(c.flags <= 17 * h);
	}
}

// ---- allocation failure -----------------------------------------------------------

struct snap {
	uint64_t gen, upd, live;
	unsigned free_n, count;
};

static struct snap take_snap(struct mmt *t)
{
	return (struct snap){s2_slots_generation(t->vm), updates(t->vm),
			     (uint64_t)host_be_live_pages(t->be), t->vm->slot_free_n,
			     t->vm->active[0]->n};
}

// The slots the test added (ids 0..n-1 at SLOT_GPA) are all there, unchanged.
static void expect_unchanged(struct mmt *t, unsigned n, const struct snap *s)
{
	struct snap now = take_snap(t);

	assert_int_equal(now.gen, s->gen);
	assert_int_equal(now.upd, s->upd);
	assert_int_equal(now.live, s->live); // nothing allocated stays behind
	assert_int_equal(now.free_n, s->free_n);
	for (unsigned i = 0; i < n; i++)
		expect_slot(t, SLOT_GPA(i), i, SLOT_GPA(i), SLOT_HPA(i));
	check_sets(t->vm, s->count);
}

// Runs `op` with the k-th allocation failing, k = 1, 2, ... until it succeeds:
// every allocation site it reaches fails once. Returns the sites seen.
static unsigned fail_each(struct mmt *t, unsigned n, int (*op)(struct mmt *, unsigned),
			  unsigned arg)
{
	unsigned k;

	for (k = 1;; k++) {
		struct snap s = take_snap(t);

		t->be->fail_at = t->be->alloc_seq + k;
		int r = op(t, arg);
		t->be->fail_at = 0;
		if (r == 0)
			return k - 1;
		assert_int_equal(r, S2_E_NOMEM);
		expect_unchanged(t, n, &s);
	}
}

// Adds slots (ids from `base`) until exactly `left` records are free.
static void use_up(struct mmt *t, unsigned base, unsigned left)
{
	for (unsigned i = base; t->vm->slot_free_n != left; i++)
		assert_int_equal(s2_slot_add(t->vm, 0, i, SLOT_GPA(i), 4 * KiB, 0, 0), 0);
}

static void test_alloc_failure_every_site(void **state)
{
	struct mmt t;
	unsigned n = (unsigned)RECS_PER_PAGE * 2; // the free list is empty
	unsigned sites = 0;

	mmt_init(&t, &s2_fmt_ept4);
	add_n(&t, n);
	assert_int_equal(t.vm->slot_free_n, 0);
	// Every op with no free record: each needs one (a move or flag change
	// takes its final record after the old one went back to the free list).
	g_n = n;
	sites += fail_each(&t, n, op_add, 0); // slot n, outside the checked ones
	assert_int_equal(s2_slot_delete(t.vm, 0, n), 0);
	use_up(&t, 1000, 0);
	sites += fail_each(&t, n, op_move, 3);
	assert_int_equal(s2_slot_move(t.vm, 0, 3, SLOT_GPA(3)), 0);
	use_up(&t, 2000, 0);
	sites += fail_each(&t, n, op_flags, 4);
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 4, 0), 0);
	use_up(&t, 3000, 0);
	sites += fail_each(&t, n, op_del, 5);
	assert_int_equal(s2_slot_add(t.vm, 0, 5, SLOT_GPA(5), 4 * KiB, SLOT_HPA(5), 0), 0);
	// Exactly one page allocation per update that found too few free records.
	assert_int_equal(sites, 4);
	// With exactly one free record, no update allocates.
	use_up(&t, 4000, 1);
	assert_int_equal(fail_each(&t, n, op_move, 6), 0);
	assert_int_equal(fail_each(&t, n, op_flags, 6), 0);
	assert_int_equal(s2_slot_move(t.vm, 0, 6, SLOT_GPA(6)), 0);
	use_up(&t, 5000, 1);
	assert_int_equal(fail_each(&t, n, op_del, 7), 0);
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_update_cost_log_n), // first: fails fast when unbalanced
	    cmocka_unit_test(test_max_slots),
	    cmocka_unit_test(test_move_overlap_past_self),
	    cmocka_unit_test(test_slot_hidden_mid_update),
	    cmocka_unit_test(test_alloc_failure_every_site),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
