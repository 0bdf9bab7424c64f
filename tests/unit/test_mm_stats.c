// SPDX-License-Identifier: Apache-2.0
//
// The engine's table accounting in struct s2_stats: tables_live is exactly
// the table pages the VM holds (root header and root pages included; a
// prepare cache's unused pages never count), and tables_max is its exact
// high-water mark: it rises with every allocation past it and never falls.
#include <signal.h>
#include <unistd.h>

#include "mm_test.h"

static struct s2_stats mst_stats(struct mmt *t)
{
	struct s2_stats st;

	s2_vm_stats(t->vm, &st);
	assert_int_equal(st.tables_live, st.tables_alloc - st.tables_freed);
	return st;
}

// The root alone: its header page and its (concatenated) start tables.
static uint64_t mst_root_pages(struct mmt *t)
{
	return 1 + s2_vm_geom(t->vm)->root_pages;
}

// tables_live is the tree (mmt_sum counts the root's pages as one table, the
// header not at all) and, after growth only, also the high-water mark.
// Returns the tree's tables below the root.
static uint64_t mst_check_tree(struct mmt *t)
{
	uint64_t tables;
	struct s2_stats st = mst_stats(t);

	mmt_sum(t, &tables);
	assert_int_equal(st.tables_live, mst_root_pages(t) + tables - 1);
	assert_int_equal(st.tables_max, st.tables_live);
	return tables - 1;
}

static void test_tables_max_is_exact(void **state)
{
	struct mmt t;
	uint64_t pa[16];

	mmt_init(&t, &s2_fmt_arm64_4k);
	uint64_t base = mst_root_pages(&t);
	struct s2_stats st = mst_stats(&t);
	assert_int_equal(st.tables_live, base);
	assert_int_equal(st.tables_max, base);
	for (unsigned i = 0; i < 10; i++) {
		pa[i] = s2_table_alloc(t.vm);
		assert_true(pa[i] != 0);
	}
	st = mst_stats(&t);
	assert_int_equal(st.tables_live, base + 10);
	assert_int_equal(st.tables_max, base + 10);
	for (unsigned i = 6; i < 10; i++)
		s2_table_free_deferred(t.vm, pa[i]);
	st = mst_stats(&t);
	assert_int_equal(st.tables_live, base + 6);
	assert_int_equal(st.tables_max, base + 10); // a free never lowers the mark
	for (unsigned i = 6; i < 8; i++)
		pa[i] = s2_table_alloc(t.vm);
	st = mst_stats(&t);
	assert_int_equal(st.tables_live, base + 8);
	assert_int_equal(st.tables_max, base + 10); // below the mark: unchanged
	for (unsigned i = 8; i < 13; i++)
		pa[i] = s2_table_alloc(t.vm);
	st = mst_stats(&t);
	assert_int_equal(st.tables_live, base + 13);
	assert_int_equal(st.tables_max, base + 13); // past the mark: follows exactly
	for (unsigned i = 0; i < 13; i++)
		s2_table_free_deferred(t.vm, pa[i]);
	st = mst_stats(&t);
	assert_int_equal(st.tables_live, base);
	assert_int_equal(st.tables_max, base + 13);
	mmt_fini(&t);
}

// Map and teardown: tables_live follows the tree (mmt_sum counts the root as
// one table), the prepare cache's leftovers do not count, and the root
// teardown brings it back to the root alone with the peak kept.
static void test_tables_live_follows_the_tree(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_arm64_4k);
	uint64_t base = mst_root_pages(&t);
	// hpa 4K-misaligned for 2M: 4 MiB of 4K leaves, two leaf tables.
	assert_int_equal(s2_map(t.vm, t.root, 0, 4 * MiB, 0x8000001000ull, S2_PROT_RW, S2_MT_WB),
			 0);
	uint64_t below_root = mst_check_tree(&t);
	assert_int_equal(s2_root_teardown(t.vm, t.root, NULL), below_root);
	struct s2_stats st = mst_stats(&t);
	assert_int_equal(st.tables_live, base);
	assert_int_equal(st.tables_max, base + below_root); // the peak stays
	mmt_fini(&t);
}

// Faults: each tops up a cache for a whole path and gives back what it did
// not use; those pages were never tables and must not count.
static void test_tables_live_after_faults(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	// hpa 4K-misaligned: 4K leaves, most faults find their tables in place.
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 64 * MiB, 4 * MiB, 0x200001000ull, 0), 0);
	for (uint64_t a = 64 * MiB; a < 68 * MiB; a += 4 * KiB)
		assert_int_equal(s2_fault(t.vm, t.root, a, S2_PROT_R, NULL), S2_FAULT_MAPPED);
	assert_int_equal(mst_check_tree(&t), 1 + 1 + 2); // PDPT, PD, two page tables
	mmt_fini(&t);
}

static void mst_timeout(int sig)
{
	static const char msg[] = "test_mm_stats: timed out after 30 s (hang)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

int main(void)
{
	signal(SIGALRM, mst_timeout);
	alarm(30); // a hang fails the binary with a message
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables_max_is_exact),
	    cmocka_unit_test(test_tables_live_follows_the_tree),
	    cmocka_unit_test(test_tables_live_after_faults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
