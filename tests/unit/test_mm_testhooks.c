// SPDX-License-Identifier: Apache-2.0
//
// The benchmark baselines of mm/s2_testhooks.h do what they stand for.
// s2_unmap_per_leaf (B4's per-leaf baseline): one walk, and each leaf zapped
// with its own invalidation and its own clean to PoC, each emptied table
// removed with its own invalidation; the tables end empty and every page
// comes back.
#include "mm/s2_testhooks.h"
#include "mm_test.h"

#define NOFWB (S2_CAP_BBM | S2_CAP_RANGE_INVAL)

static void test_unmap_per_leaf_invalidates_each_leaf(void **state)
{
	struct mmt t;
	uint64_t tables;

	mmt_init_caps(&t, &s2_fmt_arm64_4k, 40, NOFWB);
	// hpa 4K-misaligned for 2M: 2048 leaves of 4K in 4 leaf tables.
	assert_int_equal(s2_map(t.vm, t.root, 0, 8 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	struct host_counts c0 = mmt_counts(&t);
	assert_int_equal(s2_unmap_per_leaf(t.vm, t.root, 0, 8 * MiB), 0);
	struct host_counts c1 = mmt_counts(&t);
	// 2048 leaves and 4 leaf tables (2 MiB each): a range invalidation
	// each; the level-1 table (1 GiB, beyond a range call): one context.
	assert_int_equal(c1.inval_range - c0.inval_range, 2048 + 4);
	assert_int_equal(c1.inval_context - c0.inval_context, 1);
	assert_int_equal(c1.cmo_calls - c0.cmo_calls, 2048);
	assert_int_equal(c1.cmo_bytes - c0.cmo_bytes, 8 * MiB);
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1); // the root alone
	assert_false(mmt_walk(&t, 4 * MiB).mapped);
	assert_int_equal(s2_unmap_per_leaf(t.vm, t.root, 1, 4096), S2_E_UNALIGNED);
	assert_int_equal(s2_unmap_per_leaf(t.vm, NULL, 0, 4096), S2_E_INVAL);
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unmap_per_leaf_invalidates_each_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
