// SPDX-License-Identifier: Apache-2.0
//
// Memslots and slot-scoped invalidation: delete/move zap exactly the slot in
// every root (valid and invalid) with one flush (none for an empty slot), a
// flush before every yield with pending zaps, no stale software-TLB hit,
// MMIO markers and the generation (stale after create, ignored during an
// update, wrap zaps all), SLOT and ALL modes agree, bad requests refused.
#include "mm_test.h"

#define HPA_A 0x100000000ull
#define HPA_B 0x200001000ull // not 2M-aligned: 4K leaves

static uint64_t flushes(struct mmt *t)
{
	struct host_counts c = mmt_counts(t);
	return c.inval_context + c.inval_range;
}

static void fault_range(struct mmt *t, struct s2_root *root, uint64_t gpa, uint64_t size,
			uint64_t step)
{
	for (uint64_t a = gpa; a < gpa + size; a += step)
		assert_int_equal(s2_fault(t->vm, root, a, S2_PROT_R, NULL), S2_FAULT_MAPPED);
}

static void prime_tlb(struct mmt *t, uint64_t gpa, uint64_t size, uint64_t step)
{
	for (uint64_t a = gpa; a < gpa + size; a += step)
		assert_true(mmt_tlb(t, a).mapped);
}

// Two slots: A [0, 16M) with 2M leaves, B [64M, 72M) with 4K leaves.
static void two_slots(struct mmt *t, const struct s2_fmt *f)
{
	mmt_init(t, f);
	assert_int_equal(s2_slot_add(t->vm, 0, 1, 0, 16 * MiB, HPA_A, 0), 0);
	assert_int_equal(s2_slot_add(t->vm, 0, 2, 64 * MiB, 8 * MiB, HPA_B, 0), 0);
	fault_range(t, t->root, 0, 16 * MiB, 2 * MiB);
	fault_range(t, t->root, 64 * MiB, 8 * MiB, 4 * KiB);
}

static void test_fault_maps_largest_leaf(void **state)
{
	struct mmt t;
	struct s2_fault_info fi;

	mmt_init(&t, &s2_fmt_ept4);
	// 1G-aligned slot but 4 MiB long: 2M leaves; hpa 4K-misaligned: 4K.
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 1 * GiB, 4 * MiB, 8 * GiB, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 2, 4 * GiB, 1 * GiB, 16 * GiB, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 8 * GiB, 4 * MiB, 32 * GiB + 4096, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB + 5000, S2_PROT_W, &fi), S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	assert_int_equal(s2_fault(t.vm, t.root, 4 * GiB + 5 * MiB, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 2);
	assert_int_equal(mmt_walk(&t, 4 * GiB + 5 * MiB + 7).hpa, 16 * GiB + 5 * MiB + 7);
	assert_int_equal(s2_fault(t.vm, t.root, 8 * GiB + 2 * MiB, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 0);
	assert_int_equal(mmt_walk(&t, 8 * GiB + 2 * MiB).hpa, 32 * GiB + 4096 + 2 * MiB);
	mmt_fini(&t);
}

// A frame-list backing over a table of host frame numbers.
struct frames {
	struct s2_backing b;
	const uint64_t *pfn;
};

#define PFN_ABSENT (~0ull) // the test's mark for a page without a frame

static uint64_t frames_hpa(const struct s2_backing *b, uint64_t i)
{
	uint64_t pfn = ((const struct frames *)b)->pfn[i];

	return pfn == PFN_ABSENT ? S2_HPA_ABSENT : pfn << 12;
}

static bool frames_contig(const struct s2_backing *b, uint64_t i, uint64_t n)
{
	const uint64_t *p = ((const struct frames *)b)->pfn;

	for (uint64_t k = 1; k < n; k++)
		if (p[i + k] != p[i] + k)
			return false;
	return true;
}

// An 8 MiB slot at 2 MiB: block 0 contiguous and aligned (one 2M leaf),
// block 1 contiguous but misaligned, block 2 aligned with one frame out of
// place, block 3 scattered: 4K leaves for all but block 0, each translating
// to its own frame; a move keeps the frames.
static void test_backed_slot_leaves(void **state)
{
	static uint64_t pfn[2048];
	struct frames fr = {{frames_hpa, frames_contig, 1}, pfn};
	struct s2_fault_info fi;
	struct mmt t;

	for (unsigned i = 0; i < 512; i++) {
		pfn[i] = 0x400000 + i;		      // 2M-aligned run
		pfn[512 + i] = 0x500001 + i;	      // run, off by one frame
		pfn[1024 + i] = 0x600000 + i;	      // aligned run ...
		pfn[1536 + i] = 0x700000 + 7 * i + 3; // scattered
	}
	pfn[1024 + 300] = 0x6ff000; // ... with one frame elsewhere
	mmt_init(&t, &s2_fmt_npt4);
	assert_int_equal(s2_slot_add_backed(t.vm, 0, 1, 2 * MiB, 8 * MiB, &fr.b, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 2 * MiB + 12345, S2_PROT_W, &fi), S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	for (unsigned blk = 1; blk < 4; blk++) {
		uint64_t gpa = 2 * MiB + blk * 2 * MiB + 300 * 4096 + 8;
		assert_int_equal(s2_fault(t.vm, t.root, gpa, S2_PROT_R, &fi), S2_FAULT_MAPPED);
		assert_int_equal(fi.level, 0);
		assert_int_equal(mmt_walk(&t, gpa).hpa, (pfn[blk * 512 + 300] << 12) + 8);
	}
	assert_int_equal(mmt_walk(&t, 2 * MiB + 511 * 4096).hpa, pfn[511] << 12);
	struct s2_stats st;
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_mapped[1], 1);
	assert_int_equal(st.leaves_mapped[0], 3);
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 64 * MiB), 0);
	assert_false(mmt_walk(&t, 2 * MiB).mapped);
	assert_int_equal(s2_fault(t.vm, t.root, 64 * MiB + 6 * MiB + 4096, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(mmt_walk(&t, 64 * MiB + 6 * MiB + 4096).hpa, pfn[1536 + 1] << 12);
	// A backing with an hpa, or none, is refused.
	assert_int_equal(s2_slot_add_backed(t.vm, 0, 2, 0, 1 * MiB, NULL, 0), S2_E_INVAL);
	mmt_fini(&t);
}

static void test_readonly_slot(void **state)
{
	struct mmt t;

	mmt_init(&t, &s2_fmt_npt4);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 2 * MiB, HPA_A, S2_SLOT_READONLY), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 4096, S2_PROT_W, NULL), S2_E_PERM);
	assert_false(mmt_walk(&t, 4096).mapped);
	assert_int_equal(s2_fault(t.vm, t.root, 4096, S2_PROT_R, NULL), S2_FAULT_MAPPED);
	assert_int_equal(mmt_walk(&t, 4096).prot & S2_PROT_W, 0);
	// Making it writable goes through the update flow: the RO leaf is zapped.
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 1, 0), 0);
	assert_false(mmt_walk(&t, 4096).mapped);
	assert_int_equal(s2_fault(t.vm, t.root, 4096, S2_PROT_W, NULL), S2_FAULT_MAPPED);
	assert_true(mmt_walk(&t, 4096).prot & S2_PROT_W);
	mmt_fini(&t);
}

static void snapshot(struct mmt *t, uint64_t gpa, uint64_t size, s2_pte_t *out)
{
	for (uint64_t i = 0; i < size / 4096; i++)
		out[i] = mmt_walk(t, gpa + i * 4096).pte;
}

// Absent pages and the page-range zap: a fault on an absent page answers
// ABSENT and maps nothing; a 2 MiB run with one absent page maps 4K leaves
// around it; zapping three pages of a 2M leaf takes exactly that leaf (one
// flush) and leaves the other slots' and the other block's leaves alone;
// the pages refault as 4K leaves, the absent ones answer ABSENT; bad ranges
// are refused with nothing zapped.
static void test_absent_pages_and_page_zap(void **state)
{
	static uint64_t pfn[1024];
	struct frames fr = {{frames_hpa, frames_contig, 1}, pfn};
	struct s2_fault_info fi;
	struct mmt t;
	struct s2_stats st;

	for (unsigned i = 0; i < 1024; i++)
		pfn[i] = 0x400000 + i; // two aligned 2 MiB runs
	pfn[512 + 7] = PFN_ABSENT;
	two_slots(&t, &s2_fmt_arm64_4k); // slots 1 and 2, mapped (2M and 4K leaves)
	assert_int_equal(s2_slot_add_backed(t.vm, 0, 3, 32 * MiB, 4 * MiB, &fr.b, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 32 * MiB + 100, S2_PROT_W, &fi), S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	assert_int_equal(s2_fault(t.vm, t.root, 34 * MiB + 7 * 4096, S2_PROT_R, &fi),
			 S2_FAULT_ABSENT);
	assert_false(mmt_walk(&t, 34 * MiB + 7 * 4096).mapped);
	assert_int_equal(s2_fault(t.vm, t.root, 34 * MiB + 8 * 4096, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 0); // the run is broken: 4K
	static s2_pte_t before[2048], after[2048];
	snapshot(&t, 64 * MiB, 8 * MiB, before);
	s2_vm_stats(t.vm, &st);
	uint64_t zapped0 = st.leaves_zapped, f0 = flushes(&t);
	// Pages 10..12 of the first block go absent, then the zap.
	for (unsigned i = 10; i < 13; i++)
		pfn[i] = PFN_ABSENT;
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 3, 10, 3), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_zapped - zapped0, 1); // the 2M leaf, once
	assert_int_equal(flushes(&t) - f0, 1);
	assert_false(mmt_walk(&t, 32 * MiB).mapped);
	assert_false(mmt_tlb(&t, 32 * MiB + 11 * 4096).mapped);
	assert_true(mmt_walk(&t, 34 * MiB + 8 * 4096).mapped); // the other block stays
	assert_true(mmt_walk(&t, 0).mapped);		       // slot 1 stays
	snapshot(&t, 64 * MiB, 8 * MiB, after);
	assert_memory_equal(before, after, sizeof(before)); // slot 2 bit-identical
	assert_int_equal(s2_fault(t.vm, t.root, 32 * MiB + 11 * 4096, S2_PROT_R, &fi),
			 S2_FAULT_ABSENT);
	assert_int_equal(s2_fault(t.vm, t.root, 32 * MiB + 9 * 4096, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 0);
	assert_int_equal(mmt_walk(&t, 32 * MiB + 9 * 4096).hpa, (0x400000ull + 9) << 12);
	// Refusals change nothing.
	f0 = flushes(&t);
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 3, 1024, 1), S2_E_RANGE);
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 3, 1000, 25), S2_E_RANGE);
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 3, 0, 0), S2_E_RANGE);
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 9, 0, 1), S2_E_NOENT);
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 1, 0, 1), S2_E_INVAL); // not a frame list
	assert_int_equal(flushes(&t), f0);
	assert_true(mmt_walk(&t, 32 * MiB + 9 * 4096).mapped);
	mmt_fini(&t);
}

// A huge page of the VMM's on every format: a 2 MiB slot at 2 MiB whose
// frames come as one aligned run maps with one 2M leaf; when the VMM breaks
// the huge page (page 5 dropped), the whole leaf goes with one flush and the
// other pages refault as 4K leaves under one table; when the same run backs
// the block again, the next fault collapses the table into one 2M leaf (one
// flush, the table freed, no stale translation).
static void block_split_collapse(const struct s2_fmt *f)
{
	static uint64_t pfn[512];
	struct frames fr = {{frames_hpa, frames_contig, 1}, pfn};
	struct s2_fault_info fi;
	struct s2_stats st0, st;
	struct mmt t;

	for (unsigned i = 0; i < 512; i++)
		pfn[i] = PFN_ABSENT;
	mmt_init(&t, f);
	assert_int_equal(s2_slot_add_backed(t.vm, 0, 1, 2 * MiB, 2 * MiB, &fr.b, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 2 * MiB, S2_PROT_W, &fi), S2_FAULT_ABSENT);
	for (unsigned i = 0; i < 512; i++)
		pfn[i] = 0x400000 + i; // the module's FILL of the whole block
	assert_int_equal(s2_fault(t.vm, t.root, 2 * MiB + 77 * 4096, S2_PROT_W, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	s2_vm_stats(t.vm, &st0);
	assert_int_equal(st0.leaves_mapped[1], 1);
	assert_int_equal(st0.leaves_mapped[0], 0);
	assert_int_equal(mmt_tlb(&t, 2 * MiB + 300 * 4096 + 5).hpa,
			 ((0x400000ull + 300) << 12) + 5);
	// Split: page 5 goes absent (DROP), the block's one leaf is zapped.
	uint64_t f0 = flushes(&t);
	pfn[5] = PFN_ABSENT;
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 1, 5, 1), 0);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_zapped - st0.leaves_zapped, 1);
	assert_int_equal(flushes(&t) - f0, 1);
	for (unsigned i = 0; i < 512; i++)
		assert_false(mmt_tlb(&t, 2 * MiB + i * 4096).mapped);
	for (unsigned i = 0; i < 512; i++) {
		int r = s2_fault(t.vm, t.root, 2 * MiB + i * 4096, S2_PROT_R, &fi);
		assert_int_equal(r, i == 5 ? S2_FAULT_ABSENT : S2_FAULT_MAPPED);
		assert_int_equal(fi.level, 0);
	}
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.leaves_mapped[0], 511);
	assert_int_equal(st.leaves_mapped[1], 1);
	uint64_t live = st.tables_live, z0 = st.leaves_zapped;
	// Collapse: the same run backs page 5 again; its fault maps the block.
	f0 = flushes(&t);
	pfn[5] = 0x400005;
	assert_int_equal(s2_fault(t.vm, t.root, 2 * MiB + 5 * 4096, S2_PROT_W, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.collapses, 1);
	assert_int_equal(st.leaves_mapped[1], 2);
	assert_int_equal(st.leaves_mapped[0], 511);
	assert_int_equal(st.tables_live, live - 1);   // the 4K table is freed
	assert_int_equal(st.leaves_zapped - z0, 511); // its leaves, in one go
	assert_int_equal(flushes(&t) - f0, 1);
	for (unsigned i = 0; i < 512; i++) {
		struct s2_xlate x = mmt_tlb(&t, 2 * MiB + i * 4096);
		assert_true(x.mapped);
		assert_int_equal(x.level, 1);
		assert_int_equal(x.hpa, (0x400000ull + i) << 12);
	}
	assert_int_equal(host_tlb_stale(t.be), 0);
	// A run that breaks again: faults stay at 4K, no collapse.
	pfn[9] = 0x123456;
	assert_int_equal(s2_slot_zap_pages(t.vm, 0, 1, 9, 1), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 2 * MiB + 9 * 4096, S2_PROT_R, &fi),
			 S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 0);
	assert_int_equal(mmt_walk(&t, 2 * MiB + 9 * 4096).hpa, 0x123456ull << 12);
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.collapses, 1);
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	mmt_fini(&t);
}

static void test_block_split_collapse(void **state)
{
	block_split_collapse(&s2_fmt_ept4);
	block_split_collapse(&s2_fmt_npt4);
	block_split_collapse(&s2_fmt_arm64_4k);
}

static void test_delete_zaps_only_slot(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 3; i++) {
		struct mmt t;
		static s2_pte_t before[2048], after[2048];

		two_slots(&t, fmts[i]);
		prime_tlb(&t, 0, 16 * MiB, 64 * KiB);
		snapshot(&t, 64 * MiB, 8 * MiB, before);
		uint64_t f0 = flushes(&t);
		assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
		assert_int_equal(flushes(&t) - f0, 1); // exactly one flush
		for (uint64_t a = 0; a < 16 * MiB; a += 64 * KiB) {
			assert_false(mmt_walk(&t, a).mapped);
			assert_false(mmt_tlb(&t, a).mapped); // no stale TLB hit
		}
		snapshot(&t, 64 * MiB, 8 * MiB, after);
		assert_memory_equal(before, after, sizeof(before)); // B bit-identical
		assert_int_equal(host_tlb_stale(t.be), 0);
		mmt_fini(&t);
	}
}

static void test_empty_slot_delete_no_flush(void **state)
{
	struct mmt t;

	two_slots(&t, &s2_fmt_ept4);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 1 * GiB, 1 * GiB, HPA_A, 0), 0);
	uint64_t f0 = flushes(&t);
	assert_int_equal(s2_slot_delete(t.vm, 0, 3), 0); // never faulted in
	assert_int_equal(flushes(&t) - f0, 0);
	mmt_fini(&t);
}

static void test_flush_before_yield(void **state)
{
	struct mmt t;
	struct s2_stats st;

	two_slots(&t, &s2_fmt_ept4);
	prime_tlb(&t, 64 * MiB, 8 * MiB, 4 * KiB); // 2048 cached translations
	t.be->resched_every = 1;		   // every check asks to yield
	assert_int_equal(s2_slot_delete(t.vm, 0, 2), 0);
	struct host_counts c = mmt_counts(&t);
	// 2048 leaves, a check at most every S2_YIELD_EVERY entries, and every
	// check after progress yields: at least 2048 / 512 - 1 yields (a bound,
	// the exact number depends on how the restarts re-count upper entries).
	assert_true(c.yields >= 3);
	assert_int_equal(c.stale_at_yield, 0); // zaps were flushed before each yield
	s2_vm_stats(t.vm, &st);
	assert_true(st.max_entries_between_checks <= S2_YIELD_EVERY); // the promised bound
	assert_int_equal(st.restarts, c.yields); // each yield restarts the walk once
	assert_int_equal(st.yields, c.yields);
	for (uint64_t a = 64 * MiB; a < 72 * MiB; a += 4 * KiB)
		assert_false(mmt_tlb(&t, a).mapped);
	t.be->resched_every = 0;
	mmt_fini(&t);
}

static void test_move_no_stale(void **state)
{
	struct mmt t;

	two_slots(&t, &s2_fmt_arm64_4k);
	prime_tlb(&t, 64 * MiB, 8 * MiB, 4 * KiB);
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 128 * MiB), 0);
	for (uint64_t a = 64 * MiB; a < 72 * MiB; a += 4 * KiB)
		assert_false(mmt_tlb(&t, a).mapped);
	assert_int_equal(s2_fault(t.vm, t.root, 128 * MiB + 8192, S2_PROT_R, NULL),
			 S2_FAULT_MAPPED);
	assert_int_equal(mmt_tlb(&t, 128 * MiB + 8192).hpa, HPA_B + 8192);
	struct s2_slot sl;
	assert_true(s2_slot_find(t.vm, 0, 128 * MiB, &sl));
	assert_int_equal(sl.id, 2);
	assert_false(s2_slot_find(t.vm, 0, 64 * MiB, &sl));
	mmt_fini(&t);
}

static void test_delete_reaches_invalid_roots(void **state)
{
	struct mmt t;
	struct s2_root *r2;
	struct s2_xlate x;

	two_slots(&t, &s2_fmt_ept4);
	struct s2_root *r1 = t.root;
	s2_roots_mark_invalid(t.vm); // invalid, not yet zapped
	assert_true(s2_root_is_invalid(r1));
	assert_int_equal(s2_root_get(t.vm, (struct s2_role){0, 0}, &r2), 0);
	assert_ptr_not_equal(r1, r2);
	s2_translate(t.vm, r1, 4096, &x);
	assert_true(x.mapped);
	// The valid root maps nothing of slot A: no flush is needed at all.
	uint64_t f0 = flushes(&t);
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	assert_int_equal(flushes(&t) - f0, 0);
	for (uint64_t a = 0; a < 16 * MiB; a += 2 * MiB) {
		s2_translate(t.vm, r1, a, &x);
		assert_false(x.mapped);
	}
	s2_translate(t.vm, r1, 64 * MiB, &x);
	assert_true(x.mapped); // slot B untouched in the invalid root too
	// Now the valid root has leaves of B: deleting B flushes once.
	fault_range(&t, r2, 64 * MiB, 1 * MiB, 4 * KiB);
	f0 = flushes(&t);
	assert_int_equal(s2_slot_delete(t.vm, 0, 2), 0);
	assert_int_equal(flushes(&t) - f0, 1);
	host_tlb_unload(t.be, r1);
	s2_root_put(t.vm, r1); // the vCPU's reference
	s2_roots_zap_invalid(t.vm);
	t.root = r2;
	host_tlb_load(t.be, t.vm, r2);
	mmt_fini(&t);
}

static void test_mmio_marker_stale_after_create(void **state)
{
	struct mmt t;
	struct s2_fault_info fi;

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_R, &fi), S2_FAULT_MMIO);
	assert_false(fi.from_marker);
	assert_true(mmt_walk(&t, 1 * GiB).mmio_marker);
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_W, &fi), S2_FAULT_MMIO);
	assert_true(fi.from_marker); // answered by the cached marker
	// A slot created over the marker: the marker's generation is old.
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 1 * GiB, 2 * MiB, HPA_A, 0), 0);
	assert_true(mmt_walk(&t, 1 * GiB).mmio_marker); // still there, but stale
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_R, &fi), S2_FAULT_MAPPED);
	assert_int_equal(mmt_walk(&t, 1 * GiB).hpa, HPA_A);
	mmt_fini(&t);
}

struct during {
	struct mmt *t;
	int result_old_root, result_new_root;
	bool marker_cached, in_progress;
	struct s2_fault_info fi;
};

static void fault_during_update(struct host_be *be, struct s2_vm *vm)
{
	struct during *d = be->test_ctx;
	struct s2_root *r2;

	d->in_progress = s2_slots_generation(vm) & S2_GEN_IN_PROGRESS;
	d->result_old_root = s2_fault(vm, d->t->root, 1 * GiB, S2_PROT_R, NULL);
	assert_int_equal(s2_root_get(vm, (struct s2_role){0, 0}, &r2), 0);
	d->result_new_root = s2_fault(vm, r2, 1 * GiB, S2_PROT_R, &d->fi);
	struct s2_xlate x;
	s2_translate(vm, r2, 1 * GiB, &x);
	d->marker_cached = x.mmio_marker;
	s2_root_put(vm, r2);
}

static void test_mmio_marker_ignored_during_update(void **state)
{
	struct mmt t;
	struct during d = {.t = &t};

	mmt_init(&t, &s2_fmt_npt4);
	s2_vm_set_zap_mode(t.vm, S2_ZAP_ALL);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 2 * MiB, HPA_A, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_R, NULL), S2_FAULT_MMIO);
	t.be->test_ctx = &d;
	t.be->on_kick = fault_during_update; // runs in the middle of the delete
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	t.be->on_kick = NULL;
	assert_true(d.in_progress);
	assert_int_equal(d.result_old_root, S2_FAULT_RETRY); // invalid root: reload
	assert_int_equal(d.result_new_root, S2_FAULT_MMIO);
	assert_false(d.fi.from_marker);
	assert_false(d.marker_cached); // nothing cached while in progress
	host_tlb_unload(t.be, t.root);
	s2_root_put(t.vm, t.root);
	assert_int_equal(s2_root_get(t.vm, (struct s2_role){0, 0}, &t.root), 0);
	host_tlb_load(t.be, t.vm, t.root);
	mmt_fini(&t);
}

static void test_mmio_generation_wrap(void **state)
{
	struct mmt t;
	struct s2_stats st;
	struct s2_fault_info fi;

	t.be = host_be_new();
	struct s2_vm_config cfg = host_be_config(t.be, &s2_fmt_ept4);
	cfg.mmio_gen_bits = 3; // markers hold gen & 7: wraps every 4 updates
	assert_int_equal(s2_vm_create(&cfg, &t.vm), 0);
	assert_int_equal(s2_root_get(t.vm, (struct s2_role){0, 0}, &t.root), 0);
	host_tlb_load(t.be, t.vm, t.root);

	assert_int_equal(s2_slot_add(t.vm, 0, 9, 4 * GiB, 2 * MiB, HPA_A, 0), 0); // gen 2
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_R, NULL), S2_FAULT_MMIO);
	uint64_t g0 = s2_slots_generation(t.vm);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 1 * GiB, 2 * MiB, HPA_A, 0), 0);
	unsigned updates = 1, zap_alls = 0;
	// Unrelated updates until the truncated generation comes back to g0's.
	while ((s2_slots_generation(t.vm) & 7) != (g0 & 7)) {
		if (updates++ % 2)
			assert_int_equal(s2_slot_add(t.vm, 0, 2, 8 * GiB, 4096, HPA_A, 0), 0);
		else
			assert_int_equal(s2_slot_delete(t.vm, 0, 2), 0);
		assert_true(updates < 10); // loop guard
	}
	s2_vm_stats(t.vm, &st);
	zap_alls = (unsigned)st.zap_all;
	assert_int_equal(zap_alls, 1); // exactly one wrap in these updates
	assert_int_equal(updates, 4);  // each update steps the generation by 2: 8 / 2
	// The old marker would match the generation again: the wrap removed it.
	assert_false(mmt_walk(&t, 1 * GiB).mmio_marker);
	assert_int_equal(s2_fault(t.vm, t.root, 1 * GiB, S2_PROT_R, &fi), S2_FAULT_MAPPED);
	mmt_fini(&t);
}

static void test_slot_vs_all_same_range_state(void **state)
{
	struct mmt m[2];

	for (int mode = 0; mode < 2; mode++) {
		two_slots(&m[mode], &s2_fmt_ept4);
		s2_vm_set_zap_mode(m[mode].vm, mode ? S2_ZAP_ALL : S2_ZAP_SLOT);
		prime_tlb(&m[mode], 0, 16 * MiB, 1 * MiB);
		assert_int_equal(s2_slot_delete(m[mode].vm, 0, 1), 0);
	}
	struct s2_stats st;
	s2_vm_stats(m[1].vm, &st);
	assert_int_equal(st.zap_all, 1);
	assert_true(s2_root_is_invalid(m[1].root));
	// ALL: the vCPU reloads a root; both then refault the other slot.
	host_tlb_unload(m[1].be, m[1].root);
	s2_root_put(m[1].vm, m[1].root);
	assert_int_equal(s2_root_get(m[1].vm, (struct s2_role){0, 0}, &m[1].root), 0);
	host_tlb_load(m[1].be, m[1].vm, m[1].root);
	for (int mode = 0; mode < 2; mode++)
		fault_range(&m[mode], m[mode].root, 64 * MiB, 8 * MiB, 64 * KiB);
	for (uint64_t a = 0; a < 16 * MiB; a += 64 * KiB) {
		assert_false(mmt_tlb(&m[0], a).mapped);
		assert_false(mmt_tlb(&m[1], a).mapped);
	}
	for (uint64_t a = 64 * MiB; a < 72 * MiB; a += 64 * KiB)
		assert_int_equal(mmt_tlb(&m[0], a).hpa, mmt_tlb(&m[1], a).hpa);
	mmt_fini(&m[0]);
	mmt_fini(&m[1]);
}

static void test_bad_requests(void **state)
{
	struct mmt t;
	struct s2_slot sl;

	mmt_init_caps(&t, &s2_fmt_arm64_4k, 40, s2_fmt_arm64_4k.caps);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 16 * MiB, HPA_A, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 2, 1 * GiB, 16 * MiB, HPA_A, 0), 0);
	uint64_t g = s2_slots_generation(t.vm);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 4097, 4096, HPA_A, 0), S2_E_UNALIGNED);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 2 * GiB, 100, HPA_A, 0), S2_E_UNALIGNED);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 2 * GiB, 4096, HPA_A + 1, 0), S2_E_UNALIGNED);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 2 * GiB, 0, HPA_A, 0), S2_E_ZERO);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, (1ull << 40) - 4096, 8192, HPA_A, 0), S2_E_RANGE);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, UINT64_MAX - 4095, 8192, HPA_A, 0), S2_E_RANGE);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 8 * MiB, 16 * MiB, HPA_A, 0), S2_E_OVERLAP);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 1 * GiB - 4096, 8192, HPA_A, 0), S2_E_OVERLAP);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 4 * GiB, 4096, HPA_A, 0), S2_E_EXIST);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 4 * GiB, 4096, HPA_A, 1u << 3), S2_E_INVAL);
	assert_int_equal(s2_slot_add(t.vm, S2_NR_AS, 3, 4 * GiB, 4096, HPA_A, 0), S2_E_AS);
	assert_int_equal(s2_slot_delete(t.vm, 0, 7), S2_E_NOENT);
	assert_int_equal(s2_slot_delete(t.vm, 1, 1), S2_E_NOENT); // other address space
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 8 * MiB), S2_E_OVERLAP);
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 1ull << 40), S2_E_RANGE);
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 4097), S2_E_UNALIGNED);
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 2, 0x100), S2_E_INVAL);
	// Nothing changed.
	assert_int_equal(s2_slots_generation(t.vm), g);
	assert_true(s2_slot_find(t.vm, 0, 1 * GiB, &sl) && sl.id == 2 && sl.size == 16 * MiB);
	assert_true(s2_slot_find(t.vm, 0, 0, &sl) && sl.id == 1);
	assert_false(s2_slot_find(t.vm, 0, 2 * GiB, &sl));
	// A move onto itself (overlapping its own old range) is fine.
	assert_int_equal(s2_slot_move(t.vm, 0, 2, 1 * GiB + 8 * MiB), 0);
	assert_int_equal(s2_slots_generation(t.vm), g + 2);
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fault_maps_largest_leaf),
	    cmocka_unit_test(test_backed_slot_leaves),
	    cmocka_unit_test(test_absent_pages_and_page_zap),
	    cmocka_unit_test(test_block_split_collapse),
	    cmocka_unit_test(test_readonly_slot),
	    cmocka_unit_test(test_delete_zaps_only_slot),
	    cmocka_unit_test(test_empty_slot_delete_no_flush),
	    cmocka_unit_test(test_flush_before_yield),
	    cmocka_unit_test(test_move_no_stale),
	    cmocka_unit_test(test_delete_reaches_invalid_roots),
	    cmocka_unit_test(test_mmio_marker_stale_after_create),
	    cmocka_unit_test(test_mmio_marker_ignored_during_update),
	    cmocka_unit_test(test_mmio_generation_wrap),
	    cmocka_unit_test(test_slot_vs_all_same_range_state),
	    cmocka_unit_test(test_bad_requests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
