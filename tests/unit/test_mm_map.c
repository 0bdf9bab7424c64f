// SPDX-License-Identifier: Apache-2.0
//
// mm/ map, unmap, protect: largest leaves, split and collapse, empty-table
// reclaim, break-before-make order, the CMO policy, and prepare/commit under
// an allocation failure injected at every allocation site in turn.
#include "mm_test.h"

static const uint64_t HPA = 0x4000000000ull; // 256 GiB: 1G-aligned backing

static void test_largest_leaves(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	// [1G - 4K, 2G + 2M + 4K): one 4K, one 1G, one 2M, one 4K.
	uint64_t gpa = 1 * GiB - 4 * KiB, size = 4 * KiB + 1 * GiB + 2 * MiB + 4 * KiB;
	assert_int_equal(s2_map(t.vm, t.root, gpa, size, HPA + gpa, S2_PROT_RWX, S2_MT_WB), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_mapped[0], 2);
	assert_int_equal(st.leaves_mapped[1], 1);
	assert_int_equal(st.leaves_mapped[2], 1);
	assert_int_equal(mmt_walk(&t, 1 * GiB + 12345).level, 2);
	assert_int_equal(mmt_walk(&t, 1 * GiB + 12345).hpa, HPA + 1 * GiB + 12345);
	assert_int_equal(mmt_walk(&t, 2 * GiB + 4096).level, 1);
	assert_int_equal(mmt_walk(&t, gpa).level, 0);
	assert_false(mmt_walk(&t, gpa - 4096).mapped);
	assert_false(mmt_walk(&t, gpa + size).mapped);
	// hpa misaligned by 4K: everything at 4K.
	assert_int_equal(s2_map(t.vm, t.root, 8 * GiB, 4 * MiB, HPA + 4096, S2_PROT_R, S2_MT_WB),
			 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_mapped[0], 2 + 1024);
	mmt_fini(&t);
}

static void test_split_and_reclaim(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_npt4);
	int64_t base_pages = host_be_live_pages(t.be);
	assert_int_equal(s2_map(t.vm, t.root, 2 * MiB, 2 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	int64_t mapped_pages = host_be_live_pages(t.be);
	assert_int_equal(mapped_pages - base_pages, 2); // PDPT + PD tables
	// Unmap one 4K page in the middle: the 2M leaf splits into 512 4K leaves.
	struct host_counts c0 = mmt_counts(&t);
	assert_int_equal(s2_unmap(t.vm, t.root, 3 * MiB, 4 * KiB), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.splits, 1);
	assert_false(mmt_walk(&t, 3 * MiB).mapped);
	assert_true(mmt_walk(&t, 3 * MiB + 4096).mapped);
	assert_int_equal(mmt_walk(&t, 3 * MiB + 4096).hpa, HPA + 1 * MiB + 4096);
	assert_int_equal(mmt_walk(&t, 3 * MiB - 4096).level, 0);
	struct host_counts c1 = mmt_counts(&t);
	assert_int_equal(c1.inval_context - c0.inval_context, 1); // one flush for the op
	// Unmap the rest: every table below the root is reclaimed.
	assert_int_equal(s2_unmap(t.vm, t.root, 2 * MiB, 2 * MiB), 0);
	assert_int_equal(host_be_live_pages(t.be), base_pages);
	struct host_counts c2 = mmt_counts(&t);
	assert_int_equal(c2.inval_context - c1.inval_context, 1);
	uint64_t tables;
	mmt_sum(&t, &tables);
	assert_int_equal(tables, 1); // the root alone
	mmt_fini(&t);
}

static void test_collapse(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	int64_t base_pages = host_be_live_pages(t.be);
	// 4K leaves (hpa misaligned for 2M), then a remap with aligned hpa.
	assert_int_equal(s2_map(t.vm, t.root, 0, 2 * MiB, HPA + 4096, S2_PROT_RWX, S2_MT_WB), 0);
	assert_int_equal(host_be_live_pages(t.be) - base_pages, 3);
	assert_int_equal(s2_map(t.vm, t.root, 0, 2 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.collapses, 1);
	assert_int_equal(mmt_walk(&t, 4096).level, 1);
	assert_int_equal(mmt_walk(&t, 4096).hpa, HPA + 4096);
	assert_int_equal(host_be_live_pages(t.be) - base_pages, 2); // the 4K table is gone
	mmt_fini(&t);
}

static void test_protect(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_arm64_4k);
	assert_int_equal(s2_map(t.vm, t.root, 0, 4 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	assert_int_equal(s2_protect(t.vm, t.root, 2 * MiB, 4096, S2_PROT_R), 0);
	assert_int_equal(mmt_walk(&t, 2 * MiB).prot, S2_PROT_R);
	assert_int_equal(mmt_walk(&t, 2 * MiB + 4096).prot, S2_PROT_RWX);
	assert_int_equal(mmt_walk(&t, 0).prot, S2_PROT_RWX);
	assert_int_equal(mmt_walk(&t, 0).level, 1);
	assert_int_equal(mmt_walk(&t, 2 * MiB + 4096).hpa, HPA + 2 * MiB + 4096);
	mmt_fini(&t);
}

// ---- break-before-make ----------------------------------------------------------

struct bbm_probe {
	struct mmt *t;
	uint64_t gpa;
	unsigned invals, invals_while_mapped;
};

static void bbm_on_inval(struct host_be *be, struct s2_vm *vm, uint64_t gpa, uint64_t size,
			 bool context)
{
	struct bbm_probe *p = be->test_ctx;
	struct s2_xlate x;

	if (!context && !(p->gpa >= gpa && p->gpa < gpa + size))
		return;
	p->invals++;
	s2_translate(vm, p->t->root, p->gpa, &x);
	if (x.mapped)
		p->invals_while_mapped++;
}

static void test_bbm_order(void **state)
{
	struct mmt t;
	struct bbm_probe p = {.t = &t, .gpa = 2 * MiB + 8192};
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_arm64_4k);
	assert_int_equal(s2_map(t.vm, t.root, 2 * MiB, 2 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	assert_true(mmt_tlb(&t, p.gpa).mapped); // cached
	t.be->test_ctx = &p;
	t.be->on_inval = bbm_on_inval;
	// valid -> valid with a new output address: the old entry must be
	// invalid and invalidated before the new one is written.
	assert_int_equal(
	    s2_map(t.vm, t.root, 2 * MiB, 2 * MiB, HPA + 2 * MiB, S2_PROT_RWX, S2_MT_WB), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.bbm, 1);
	assert_int_equal(p.invals, 1);
	assert_int_equal(p.invals_while_mapped, 0);
	assert_int_equal(mmt_tlb(&t, p.gpa).hpa, HPA + 2 * MiB + 8192); // no stale hit
	// Block -> table (split) also breaks first.
	p.invals = 0;
	assert_int_equal(s2_unmap(t.vm, t.root, 2 * MiB, 4096), 0);
	// Exactly the block's break-before-make invalidation: the new table is
	// written without the unmapped page, so nothing else needs one.
	assert_int_equal(p.invals, 1);
	assert_int_equal(p.invals_while_mapped, 0);
	assert_int_equal(mmt_tlb(&t, p.gpa).hpa, HPA + 2 * MiB + 8192);
	// A permission-only change is written in place (no extra BBM).
	s2_vm_stats(t.vm, &st);
	uint64_t bbm = st.bbm;
	assert_int_equal(s2_protect(t.vm, t.root, 2 * MiB + 8192, 4096, S2_PROT_R), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.bbm, bbm);
	assert_int_equal(mmt_tlb(&t, p.gpa).prot, S2_PROT_R);
	t.be->on_inval = NULL;
	mmt_fini(&t);
}

// x86 formats need no BBM: a remap writes in place, one flush at the end.
static void test_no_bbm_on_x86(void **state)
{
	struct mmt t;
	struct s2_stats st;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_map(t.vm, t.root, 0, 2 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	assert_true(mmt_tlb(&t, 4096).mapped);
	struct host_counts c0 = mmt_counts(&t);
	assert_int_equal(s2_map(t.vm, t.root, 0, 2 * MiB, HPA + 2 * MiB, S2_PROT_RWX, S2_MT_WB), 0);
	struct host_counts c1 = mmt_counts(&t);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.bbm, 0);
	assert_int_equal(c1.inval_context - c0.inval_context, 1);
	assert_int_equal(mmt_tlb(&t, 4096).hpa, HPA + 2 * MiB + 4096);
	mmt_fini(&t);
}

// ---- CMO policy -----------------------------------------------------------------------

static uint64_t cmos_for_unmap(unsigned caps, enum s2_memtype mt)
{
	struct mmt t;

	mmt_init_caps(&t, &s2_fmt_arm64_4k, 40, caps);
	assert_int_equal(s2_map(t.vm, t.root, 2 * MiB, 2 * MiB, HPA, S2_PROT_RW, mt), 0);
	assert_int_equal(s2_map(t.vm, t.root, 8 * MiB, 8 * KiB, HPA, S2_PROT_RW, mt), 0);
	struct host_counts c0 = mmt_counts(&t);
	assert_int_equal(s2_unmap(t.vm, t.root, 0, 16 * MiB), 0);
	struct host_counts c1 = mmt_counts(&t);
	uint64_t calls = c1.cmo_calls - c0.cmo_calls;
	if (calls)
		assert_int_equal(c1.cmo_bytes - c0.cmo_bytes, 2 * MiB + 8 * KiB);
	mmt_fini(&t);
	return calls;
}

static void test_cmo_policy(void **state)
{
	unsigned nofwb = S2_CAP_BBM | S2_CAP_RANGE_INVAL;

	assert_int_equal(cmos_for_unmap(nofwb, S2_MT_WB), 3);		   // one per cacheable leaf
	assert_int_equal(cmos_for_unmap(nofwb, S2_MT_DEVICE), 0);	   // never device memory
	assert_int_equal(cmos_for_unmap(nofwb | S2_CAP_FWB, S2_MT_WB), 0); // FWB: never
}

// ---- prepare/commit -------------------------------------------------------------------

typedef int (*op_fn)(struct mmt *t);

static void pre_state(struct mmt *t)
{
	assert_int_equal(s2_map(t->vm, t->root, 0, 4 * MiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
	assert_int_equal(s2_map(t->vm, t->root, 1 * GiB, 1 * GiB, HPA, S2_PROT_RWX, S2_MT_WB), 0);
}

static int op_map_misaligned(struct mmt *t)
{
	return s2_map(t->vm, t->root, 1 * MiB, 6 * MiB, HPA + 4096, S2_PROT_RW, S2_MT_WB);
}

static int op_map_far(struct mmt *t)
{
	return s2_map(t->vm, t->root, 300 * GiB + 4096, 3 * MiB, HPA, S2_PROT_RW, S2_MT_WB);
}

static int op_unmap_split(struct mmt *t)
{
	return s2_unmap(t->vm, t->root, 1 * GiB + 3 * MiB + 4096, 8192);
}

static int op_protect_split(struct mmt *t)
{
	return s2_protect(t->vm, t->root, 1 * GiB + 5 * MiB, 4096, S2_PROT_R);
}

static void check_all_sites(const struct s2_fmt *f, op_fn op)
{
	struct mmt t;

	// How many allocations does the op make when nothing fails?
	mmt_init(&t, f);
	pre_state(&t);
	uint64_t before = t.be->alloc_seq;
	assert_int_equal(op(&t), 0);
	uint64_t sites = t.be->alloc_seq - before;
	mmt_fini(&t);
	assert_true(sites > 0); // a guard: the loop below must test something

	for (uint64_t k = 1; k <= sites; k++) {
		uint64_t n0, n1;

		mmt_init(&t, f);
		pre_state(&t);
		uint64_t sum0 = mmt_sum(&t, &n0);
		int64_t live0 = host_be_live_pages(t.be);
		t.be->fail_at = t.be->alloc_seq + k;
		assert_int_equal(op(&t), S2_E_NOMEM);
		assert_int_equal(mmt_sum(&t, &n1), sum0); // tables exactly as before
		assert_int_equal(n1, n0);
		assert_int_equal(host_be_live_pages(t.be), live0); // nothing leaked
		t.be->fail_at = 0;
		assert_int_equal(op(&t), 0); // and the op still works afterwards
		mmt_fini(&t);
	}
}

static void test_alloc_failure_every_site(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_npt4, &s2_fmt_arm64_4k};
	op_fn ops[] = {op_map_misaligned, op_map_far, op_unmap_split, op_protect_split};

	for (unsigned i = 0; i < 3; i++) {
		for (unsigned j = 0; j < 4; j++)
			check_all_sites(fmts[i], ops[j]);
	}
}

static void test_bad_ranges(void **state)
{
	struct mmt t;

	mmt_init_caps(&t, &s2_fmt_arm64_4k, 36, s2_fmt_arm64_4k.caps);
	assert_int_equal(s2_map(t.vm, t.root, 4097, 4096, HPA, S2_PROT_R, S2_MT_WB),
			 S2_E_UNALIGNED);
	assert_int_equal(s2_map(t.vm, t.root, 0, 0, HPA, S2_PROT_R, S2_MT_WB), S2_E_ZERO);
	assert_int_equal(s2_map(t.vm, t.root, 64 * GiB - 4096, 8192, HPA, S2_PROT_R, S2_MT_WB),
			 S2_E_RANGE);
	assert_int_equal(s2_map(t.vm, t.root, 0, 4096, HPA, 8, S2_MT_WB), S2_E_INVAL);
	assert_int_equal(s2_unmap(t.vm, t.root, 64 * GiB, 4096), S2_E_RANGE);
	mmt_fini(&t);
}

// The software TLB that every other test relies on: a range invalidation
// drops exactly the cached pages it covers, every other entry still hits.
static void test_host_tlb_drops_exactly_the_range(void **state)
{
	struct mmt t;
	uint64_t seed = 0x71b;

	mmt_init(&t, &s2_fmt_arm64_4k); // range invalidation
	assert_int_equal(s2_map(t.vm, t.root, 0, 16 * MiB, 0x40001000ull, S2_PROT_RW, S2_MT_WB), 0);
	for (unsigned round = 0; round < 8; round++) {
		for (uint64_t a = 0; a < 16 * MiB; a += 4096)
			assert_true(mmt_tlb(&t, a).mapped); // caches every page
		assert_int_equal(host_tlb_size(t.be), 4096);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t lo = (seed >> 33) % 4000 * 4096, n = 1 + (seed >> 20) % 96;
		struct host_counts c0 = mmt_counts(&t);
		assert_int_equal(s2_unmap(t.vm, t.root, lo, n * 4096), 0);
		struct host_counts c1 = mmt_counts(&t);
		assert_int_equal(c1.inval_range - c0.inval_range, 1);
		assert_int_equal(c1.inval_context, c0.inval_context);
		assert_int_equal(host_tlb_size(t.be), 4096 - n);
		for (uint64_t a = 0; a < 16 * MiB; a += 4096)
			assert_int_equal(mmt_tlb(&t, a).mapped, a < lo || a >= lo + n * 4096);
		struct host_counts c2 = mmt_counts(&t);
		assert_int_equal(c2.tlb_hits - c1.tlb_hits, 4096 - n);
		assert_int_equal(c2.tlb_misses - c1.tlb_misses, n);
		assert_int_equal(
		    s2_map(t.vm, t.root, lo, n * 4096, 0x40001000ull + lo, S2_PROT_RW, S2_MT_WB),
		    0);
	}
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_largest_leaves),
	    cmocka_unit_test(test_split_and_reclaim),
	    cmocka_unit_test(test_collapse),
	    cmocka_unit_test(test_protect),
	    cmocka_unit_test(test_bbm_order),
	    cmocka_unit_test(test_no_bbm_on_x86),
	    cmocka_unit_test(test_cmo_policy),
	    cmocka_unit_test(test_alloc_failure_every_site),
	    cmocka_unit_test(test_bad_ranges),
	    cmocka_unit_test(test_host_tlb_drops_exactly_the_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
