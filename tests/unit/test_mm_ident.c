// SPDX-License-Identifier: Apache-2.0
//
// The primary identity builder (s2_map_identity, mm/ident.c) that all three
// paths use: exact leaf counts for a PC-like layout with and without an
// override page, Slat's region never mapped, attributes per range, the 1G /
// 2M / 4K choice by alignment across range boundaries, bad layouts refused
// with nothing mapped; and the teardown's own figures (s2_root_teardown's
// `work`, in the engine's statistics structure).
#include "mm_test.h"

#define APIC	  0xfee00000ull
#define HOLE_BASE (1 * GiB + 2 * MiB)
#define HOLE_SIZE (2 * MiB)

// Below 1 MiB: RAM to 0x9f000, then a gap; RAM from 1 MiB to 3 GiB with
// Slat's region (2 MiB) at 1 GiB + 2 MiB; device gap from 3 GiB to 4 GiB.
static const struct s2_ident_range pc_mem[] = {
    {0, 0x9f000, S2_MT_WB, S2_PROT_RWX},
    {1 * MiB, 3 * GiB - 1 * MiB, S2_MT_WB, S2_PROT_RWX},
};

static struct s2_ident_layout pc_layout(const struct s2_ident_range *over, unsigned n_over)
{
	return (struct s2_ident_layout){
	    .top = 4 * GiB,
	    .mem = pc_mem,
	    .n_mem = 2,
	    .gap_mt = S2_MT_DEVICE,
	    .gap_prot = S2_PROT_RW,
	    .hole_base = HOLE_BASE,
	    .hole_size = HOLE_SIZE,
	    .over = over,
	    .n_over = n_over,
	};
}

static void assert_leaves(const struct s2_stats *st, uint64_t g1, uint64_t m2, uint64_t k4)
{
	assert_int_equal(st->leaves_mapped[2], g1);
	assert_int_equal(st->leaves_mapped[1], m2);
	assert_int_equal(st->leaves_mapped[0], k4);
}

static void test_pc_layout_exact_leaves(void **state)
{
	static const struct s2_ident_range apic = {APIC, 4096, S2_MT_DEVICE, S2_PROT_R};
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 3; i++) {
		struct s2_ident_layout l = pc_layout(&apic, 1);
		struct s2_stats st;
		struct mmt t;

		mmt_init_caps(&t, fmts[i], i == 2 ? 40 : 0, fmts[i]->caps);
		assert_int_equal(s2_map_identity(t.vm, t.root, &l, &st), 0);
		// 1G: [2G, 3G). 2M: [2M, 1G) 511, [1G, 1G+2M) 1, [1G+4M, 2G) 510,
		// [3G, APIC) 503, [APIC+2M.., 4G) 8. 4K: 159 RAM + 97 gap below
		// 1 MiB, 256 in [1M, 2M), the APIC page, 511 after it.
		assert_leaves(&st, 1, 511 + 1 + 510 + 503 + 8, 159 + 97 + 256 + 1 + 511);
		assert_int_equal(mmt_walk(&t, APIC).prot, S2_PROT_R);
		assert_int_equal(mmt_walk(&t, APIC).mt, S2_MT_DEVICE);
		assert_int_equal(mmt_walk(&t, APIC + 4096).prot, S2_PROT_RW);
		mmt_fini(&t);
	}
}

// A CPU without 1 GiB pages (NPT: CPUID Page1GB clear; EPT: VMX cap bit 17):
// the x86 formats without 1 GiB leaves map [2G, 3G) with 512 2 MiB leaves.
static void test_pc_layout_without_1g_leaves(void **state)
{
	static const struct s2_ident_range apic = {APIC, 4096, S2_MT_DEVICE, S2_PROT_R};
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4_2m, &s2_fmt_npt4_2m};

	for (unsigned i = 0; i < 2; i++) {
		struct s2_ident_layout l = pc_layout(&apic, 1);
		struct s2_stats st;
		struct mmt t;

		mmt_init_caps(&t, fmts[i], 0, fmts[i]->caps);
		assert_int_equal(s2_map_identity(t.vm, t.root, &l, &st), 0);
		assert_leaves(&st, 0, 511 + 1 + 510 + 512 + 503 + 8, 159 + 97 + 256 + 1 + 511);
		assert_int_equal(mmt_walk(&t, 2 * GiB + 4096).prot, S2_PROT_RWX);
		assert_int_equal(mmt_walk(&t, APIC).prot, S2_PROT_R);
		mmt_fini(&t);
	}
}

static void test_no_override_exact_leaves_and_attributes(void **state)
{
	struct s2_ident_layout l = pc_layout(NULL, 0);
	struct s2_stats st;
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map_identity(t.vm, t.root, &l, &st), 0);
	// 1G: [2G, 3G) WB and [3G, 4G) device are two runs.
	assert_leaves(&st, 2, 511 + 1 + 510, 159 + 97 + 256);
	struct s2_xlate ram = mmt_walk(&t, 0x9e000), gap = mmt_walk(&t, 0x9f000);
	assert_true(ram.mapped && gap.mapped);
	assert_int_equal(ram.mt, S2_MT_WB);
	assert_int_equal(ram.prot, S2_PROT_RWX);
	assert_int_equal(gap.mt, S2_MT_DEVICE);
	assert_int_equal(gap.prot, S2_PROT_RW);
	assert_int_equal(mmt_walk(&t, 3 * GiB).mt, S2_MT_DEVICE);
	assert_int_equal(mmt_walk(&t, 3 * GiB - 4096).mt, S2_MT_WB);
	mmt_fini(&t);
}

static void test_slat_region_never_mapped(void **state)
{
	struct s2_ident_layout l = pc_layout(NULL, 0);
	struct mmt t;

	mmt_init(&t, &s2_fmt_npt4);
	assert_int_equal(s2_map_identity(t.vm, t.root, &l, NULL), 0);
	for (uint64_t a = HOLE_BASE; a < HOLE_BASE + HOLE_SIZE; a += 4096)
		assert_false(mmt_walk(&t, a).mapped);
	struct s2_xlate below = mmt_walk(&t, HOLE_BASE - 4096);
	struct s2_xlate above = mmt_walk(&t, HOLE_BASE + HOLE_SIZE);
	assert_true(below.mapped && above.mapped);
	assert_int_equal(below.hpa, HOLE_BASE - 4096); // identity
	assert_int_equal(above.hpa, HOLE_BASE + HOLE_SIZE);
	mmt_fini(&t);
}

// A hole of one page inside a 1 GiB-aligned range: 1G -> 2M -> 4K around it.
static void test_largest_leaves_by_alignment(void **state)
{
	// Two ranges with the same attributes meet at 1.5 GiB: one run, 3 x 1G.
	static const struct s2_ident_range split[] = {
	    {0, 1536 * MiB, S2_MT_WB, S2_PROT_RWX},
	    {1536 * MiB, 1536 * MiB, S2_MT_WB, S2_PROT_RWX},
	};
	struct s2_ident_layout l = {.top = 3 * GiB, .mem = split, .n_mem = 2};
	struct s2_stats st;
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map_identity(t.vm, t.root, &l, &st), 0);
	assert_leaves(&st, 3, 0, 0);
	mmt_fini(&t);

	l.hole_base = 1 * GiB + 6 * MiB + 4096; // one page
	l.hole_size = 4096;
	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map_identity(t.vm, t.root, &l, &st), 0);
	// [1G, 2G): 3 + 508 2M leaves, 511 4K leaves in the 2M block of the hole.
	assert_leaves(&st, 2, 3 + 508, 511);
	assert_false(mmt_walk(&t, l.hole_base).mapped);
	assert_int_equal(mmt_walk(&t, l.hole_base + 4096).level, 0);
	assert_int_equal(mmt_walk(&t, l.hole_base + 2 * MiB).level, 1);
	mmt_fini(&t);
}

static void check_refused(const struct s2_ident_layout *l, int err)
{
	struct s2_stats st;
	uint64_t tables;
	struct mmt t;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map_identity(t.vm, t.root, l, NULL), err);
	s2_vm_stats(t.vm, &st);
	assert_leaves(&st, 0, 0, 0);
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1); // nothing but the root
	mmt_fini(&t);
}

static void test_bad_layouts_refused_unchanged(void **state)
{
	static const struct s2_ident_range unsorted[] = {
	    {2 * GiB, 4096, S2_MT_WB, S2_PROT_RWX},
	    {0, 4096, S2_MT_WB, S2_PROT_RWX},
	};
	static const struct s2_ident_range overlap[] = {
	    {0, 8192, S2_MT_WB, S2_PROT_RWX},
	    {4096, 4096, S2_MT_WB, S2_PROT_RWX},
	};
	static const struct s2_ident_range odd[] = {{0x800, 4096, S2_MT_WB, S2_PROT_RWX}};
	struct s2_ident_layout l = {.top = 4 * GiB, .mem = unsorted, .n_mem = 2};
	struct mmt t;

	check_refused(&l, S2_E_INVAL);
	l.mem = overlap;
	check_refused(&l, S2_E_INVAL);
	l.mem = odd;
	l.n_mem = 1;
	check_refused(&l, S2_E_INVAL); // a bad range is S2_E_INVAL
	l.n_mem = 0;
	l.hole_base = 4096 + 1;
	check_refused(&l, S2_E_UNALIGNED);
	l.hole_base = 0;
	l.top = 1ull << 49; // beyond EPT4's 48 bits
	check_refused(&l, S2_E_RANGE);
	l.top = 0;
	check_refused(&l, S2_E_ZERO);
	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map_identity(t.vm, t.root, NULL, NULL), S2_E_INVAL);
	assert_int_equal(s2_map_identity(NULL, t.root, &l, NULL), S2_E_INVAL);
	mmt_fini(&t);
}

// The teardown reports its own work: one context invalidation and every
// table page below the root, equal to what the backend received.
static void test_teardown_work_from_engine(void **state)
{
	struct s2_ident_layout l = pc_layout(NULL, 0);
	struct s2_stats work;
	uint64_t tables;
	struct mmt t;

	mmt_init(&t, &s2_fmt_arm64_4k);
	assert_int_equal(s2_map_identity(t.vm, t.root, &l, NULL), 0);
	mmt_sum(&t, &tables);
	struct host_counts c0 = mmt_counts(&t);
	uint64_t freed = s2_root_teardown(t.vm, t.root, &work);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(freed, tables - s2_vm_geom(t.vm)->root_pages);
	assert_int_equal(work.tables_freed, freed);
	assert_int_equal(work.tables_freed, c1.free_pages - c0.free_pages);
	assert_int_equal(work.inval_context, 1);
	assert_int_equal(c1.inval_context - c0.inval_context, 1);
	assert_int_equal(work.inval_range + work.cmo_calls + work.leaves_zapped, 0);
	assert_int_equal(s2_root_teardown(t.vm, t.root, &work), 0);
	assert_int_equal(work.inval_context + work.tables_freed, 0); // nothing attached
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pc_layout_exact_leaves),
	    cmocka_unit_test(test_pc_layout_without_1g_leaves),
	    cmocka_unit_test(test_no_override_exact_leaves_and_attributes),
	    cmocka_unit_test(test_slat_region_never_mapped),
	    cmocka_unit_test(test_largest_leaves_by_alignment),
	    cmocka_unit_test(test_bad_layouts_refused_unchanged),
	    cmocka_unit_test(test_teardown_work_from_engine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
