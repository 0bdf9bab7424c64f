// SPDX-License-Identifier: Apache-2.0
//
// Teardown of 1M leaves (4 GiB at 4 KiB, arm64 without FWB so that a live
// unmap would need CMOs): no per-leaf invalidation, no CMO, exactly one
// context invalidation (I3.1: the tree was reachable, so the one it may
// issue is needed), every table page freed exactly once, in bounded chunks;
// the primary-style root teardown frees everything below the root after one
// invalidation and leaves the root in place, empty. A VM with several roots
// (valid and invalid, two address spaces) still takes exactly one; a VM whose
// trees are all empty takes none.
#include "mm_test.h"

#define NOFWB (S2_CAP_BBM | S2_CAP_RANGE_INVAL)

static void map_1m_leaves(struct mmt *t)
{
	struct s2_stats st;

	mmt_init_caps(t, &s2_fmt_arm64_4k, 40, NOFWB);
	// hpa 4K-misaligned for 2M: 1M leaves of 4K.
	assert_int_equal(s2_map(t->vm, t->root, 0, 4 * GiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	s2_vm_stats(t->vm, &st);
	assert_int_equal(st.leaves_mapped[0], 1u << 20);
}

static void test_vm_destroy_1m_leaves(void **state)
{
	struct mmt t;

	map_1m_leaves(&t);
	struct host_counts c0 = mmt_counts(&t);
	t.be->resched_every = 1; // bounded chunks: a yield after every 512 entries
	host_tlb_unload(t.be, t.root);
	s2_vm_destroy(t.vm);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(c1.inval_range - c0.inval_range, 0); // no per-leaf invalidation
	assert_int_equal(c1.cmo_calls - c0.cmo_calls, 0);
	assert_int_equal(c1.inval_context - c0.inval_context, 1);
	// Four level-1 tables of 512 entries, each walked on its own (level-0
	// tables are freed unread): one check per table, and each yields.
	assert_int_equal(c1.yields - c0.yields, 4);
	assert_int_equal(c1.alloc_pages, c1.free_pages); // allocated == freed
	assert_int_equal(host_be_free(t.be), 0);
}

static void test_root_teardown_1m_leaves(void **state)
{
	struct mmt t;
	uint64_t tables;

	map_1m_leaves(&t);
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1 + 4 + 2048); // root, 4 level-1 tables, 2048 leaf tables
	struct host_counts c0 = mmt_counts(&t);
	uint64_t freed = s2_root_teardown(t.vm, t.root, NULL);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(freed, 4 + 2048);
	assert_int_equal(c1.free_pages - c0.free_pages, 4 + 2048);
	assert_int_equal(c1.inval_context - c0.inval_context, 1);
	assert_int_equal(c1.inval_range - c0.inval_range, 0);
	assert_int_equal(c1.cmo_calls - c0.cmo_calls, 0);
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1); // the root stays, empty
	assert_false(mmt_walk(&t, 12345).mapped);
	assert_int_equal(s2_root_teardown(t.vm, t.root, NULL), 0); // nothing attached: no invalidation
	assert_int_equal(mmt_counts(&t).inval_context, c1.inval_context);
	mmt_fini(&t);
}

// Contrast: a live unmap of the same range issues the CMOs teardown skips.
static void test_live_unmap_does_cmo(void **state)
{
	struct mmt t;

	mmt_init_caps(&t, &s2_fmt_arm64_4k, 40, NOFWB);
	assert_int_equal(s2_map(t.vm, t.root, 0, 8 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	struct host_counts c0 = mmt_counts(&t);
	assert_int_equal(s2_unmap(t.vm, t.root, 0, 8 * MiB), 0);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(c1.cmo_calls - c0.cmo_calls, 2048);
	assert_int_equal(c1.inval_context + c1.inval_range - c0.inval_context - c0.inval_range, 1);
	mmt_fini(&t);
}

// Several trees, one invalidation: an invalid root still holding entries (its
// zapper has not run) and a valid root in each address space.
static void test_vm_destroy_many_roots_one_inval(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_ept5, &s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 4; i++) {
		struct mmt t;
		struct s2_root *r1, *r2;

		mmt_init_caps(&t, fmts[i], fmts[i] == &s2_fmt_arm64_4k ? 40 : 0, fmts[i]->caps);
		assert_int_equal(
		    s2_map(t.vm, t.root, 0, 4 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB), 0);
		s2_roots_mark_invalid(t.vm); // no zap: the old tree stays filled
		assert_int_equal(s2_root_get(t.vm, (struct s2_role){0, 0}, &r1), 0);
		assert_int_equal(s2_root_get(t.vm, (struct s2_role){1, 0}, &r2), 0);
		assert_int_equal(
		    s2_map(t.vm, r1, 1 * GiB, 2 * MiB, 0x8000000000ull, S2_PROT_RW, S2_MT_WB), 0);
		assert_int_equal(
		    s2_map(t.vm, r2, 0, 64 * KiB, 0x8000000000ull, S2_PROT_RW, S2_MT_WB), 0);
		struct host_counts c0 = mmt_counts(&t);
		host_tlb_unload(t.be, t.root);
		s2_vm_destroy(t.vm);
		struct host_counts c1 = mmt_counts(&t);
		assert_int_equal(c1.inval_context - c0.inval_context, 1);
		assert_int_equal(c1.inval_range - c0.inval_range, 0);
		assert_int_equal(c1.cmo_calls - c0.cmo_calls, 0);
		assert_int_equal(host_be_free(t.be), 0);
	}
}

// Nothing was ever mapped: no tree is reachable, so no invalidation at all.
static void test_vm_destroy_empty_no_inval(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	struct host_counts c0 = mmt_counts(&t);
	host_tlb_unload(t.be, t.root);
	s2_vm_destroy(t.vm);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(c1.inval_context + c1.inval_range - c0.inval_context - c0.inval_range, 0);
	assert_int_equal(host_be_free(t.be), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vm_destroy_1m_leaves),
	    cmocka_unit_test(test_root_teardown_1m_leaves),
	    cmocka_unit_test(test_live_unmap_does_cmo),
	    cmocka_unit_test(test_vm_destroy_many_roots_one_inval),
	    cmocka_unit_test(test_vm_destroy_empty_no_inval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
