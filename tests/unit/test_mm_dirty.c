// SPDX-License-Identifier: Apache-2.0
//
// Dirty logging (mm/dirty.c) on EPT, NPT and stage-2: a logging slot maps
// 4 KiB leaves, read-only until written; a harvest reports exactly the pages
// written since the last one, write-protects exactly those with one flush (no
// stale writable translation in the software TLB afterwards), and the
// clear-range form clears and protects only what its mask names. Turning the
// flag on zaps the slot once; off frees the bitmap. Bad requests change
// nothing. A random differential run checks the report against a model.
#include "mm_test.h"

#define HPA   0x100000000ull // 1 GiB aligned: without logging, 2 MiB leaves
#define SLOT  (8 * MiB)
#define PAGES (SLOT / (4 * KiB))
#define WORDS (PAGES / 64)

static const struct s2_fmt *const fmts[] = {&s2_fmt_ept4, &s2_fmt_npt4, &s2_fmt_arm64_4k};

static uint64_t flushes(struct mmt *t)
{
	struct host_counts c = mmt_counts(t);
	return c.inval_context + c.inval_range;
}

static unsigned popcount(const uint64_t *bm, unsigned words)
{
	unsigned n = 0;

	for (unsigned i = 0; i < words; i++)
		n += (unsigned)__builtin_popcountll(bm[i]);
	return n;
}

static bool bit(const uint64_t *bm, uint64_t i)
{
	return (bm[i / 64] >> (i % 64)) & 1;
}

// A guest access as the CPU makes it: through the (software) TLB; a write
// that finds no writable translation faults first.
static void guest_write(struct mmt *t, uint64_t gpa)
{
	struct s2_xlate x = mmt_tlb(t, gpa);

	if (x.mapped && (x.prot & S2_PROT_W))
		return;
	assert_int_equal(s2_fault(t->vm, t->root, gpa, S2_PROT_W, NULL), S2_FAULT_MAPPED);
	x = mmt_tlb(t, gpa);
	assert_true(x.mapped && (x.prot & S2_PROT_W));
}

static void guest_read(struct mmt *t, uint64_t gpa)
{
	if (!mmt_tlb(t, gpa).mapped)
		assert_int_equal(s2_fault(t->vm, t->root, gpa, S2_PROT_R, NULL), S2_FAULT_MAPPED);
}

static void logging_vm(struct mmt *t, const struct s2_fmt *f)
{
	mmt_init(t, f);
	assert_int_equal(s2_slot_add(t->vm, 0, 1, 0, SLOT, HPA, S2_SLOT_DIRTY_LOG), 0);
}

static void test_read_maps_readonly_write_marks(void **state)
{
	for (unsigned i = 0; i < 3; i++) {
		struct mmt t;
		struct s2_fault_info fi;
		uint64_t bm[WORDS];

		logging_vm(&t, fmts[i]);
		assert_int_equal(s2_fault(t.vm, t.root, 5 * 4096, S2_PROT_R, &fi), S2_FAULT_MAPPED);
		assert_int_equal(fi.level, 0); // 2 MiB would fit: logging keeps 4 KiB
		assert_false(mmt_walk(&t, 5 * 4096).prot & S2_PROT_W);
		guest_write(&t, 7 * 4096 + 8);
		guest_write(&t, 7 * 4096 + 16); // no second fault, no second mark
		guest_write(&t, 5 * 4096);	// read-only leaf made writable
		struct s2_stats st;
		s2_vm_stats(t.vm, &st);
		assert_int_equal(st.dirty_marked, 2);
		assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
		assert_int_equal(popcount(bm, WORDS), 2);
		assert_true(bit(bm, 5) && bit(bm, 7));
		mmt_fini(&t);
	}
}

static void test_harvest_reports_and_protects_exactly(void **state)
{
	for (unsigned i = 0; i < 3; i++) {
		struct mmt t;
		uint64_t bm[WORDS];

		logging_vm(&t, fmts[i]);
		for (uint64_t p = 0; p < PAGES; p += 3)
			guest_read(&t, p * 4096);
		for (uint64_t p = 0; p < PAGES; p += 5)
			guest_write(&t, p * 4096);
		uint64_t before = flushes(&t);
		assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), 0);
		assert_int_equal(flushes(&t) - before, 1); // one flush for the whole harvest
		assert_int_equal(popcount(bm, WORDS), (PAGES + 4) / 5);
		for (uint64_t p = 0; p < PAGES; p++) {
			assert_int_equal(bit(bm, p), p % 5 == 0);
			struct s2_xlate x = mmt_tlb(&t, p * 4096);
			assert_false(x.mapped && (x.prot & S2_PROT_W)); // nothing stale
		}
		assert_int_equal(host_tlb_stale(t.be), 0);
		struct s2_stats st;
		s2_vm_stats(t.vm, &st);
		assert_int_equal(st.dirty_protected, (PAGES + 4) / 5);
		// Nothing written since: an empty report and no flush.
		before = flushes(&t);
		assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), 0);
		assert_int_equal(popcount(bm, WORDS), 0);
		assert_int_equal(flushes(&t), before);
		// Written again: reported again.
		guest_write(&t, 10 * 4096);
		assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), 0);
		assert_int_equal(popcount(bm, WORDS), 1);
		assert_true(bit(bm, 10));
		mmt_fini(&t);
	}
}

static void test_get_without_clear_keeps_state(void **state)
{
	struct mmt t;
	uint64_t bm[WORDS];

	logging_vm(&t, &s2_fmt_npt4);
	guest_write(&t, 3 * 4096);
	uint64_t before = flushes(&t);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
	assert_int_equal(popcount(bm, WORDS), 1);
	assert_int_equal(flushes(&t), before);
	assert_true(mmt_walk(&t, 3 * 4096).prot & S2_PROT_W);
	// A range: bit 0 is the range's first page.
	guest_write(&t, 70 * 4096);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 64, 64, bm, true), 0);
	assert_int_equal(bm[0], 1ull << 6);
	assert_false(mmt_walk(&t, 70 * 4096).prot & S2_PROT_W);
	assert_true(mmt_walk(&t, 3 * 4096).prot & S2_PROT_W); // outside: untouched
	mmt_fini(&t);
}

static void test_clear_range_only_masked(void **state)
{
	struct mmt t;
	uint64_t bm[WORDS], mask[2];

	logging_vm(&t, &s2_fmt_ept4);
	for (uint64_t p = 64; p < 192; p++)
		guest_write(&t, p * 4096);
	// Pages 64..191 are dirty; clear 128..255 but only the even ones.
	mask[0] = mask[1] = 0x5555555555555555ull;
	uint64_t before = flushes(&t);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 1, 128, 128, mask), 0);
	assert_int_equal(flushes(&t) - before, 1);
	assert_int_equal(mask[0], 0x5555555555555555ull); // 128..191: dirty and masked
	assert_int_equal(mask[1], 0);			  // 192..255: clean
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
	for (uint64_t p = 0; p < 256; p++) {
		bool cleared = p >= 128 && p < 192 && p % 2 == 0;
		assert_int_equal(bit(bm, p), p >= 64 && p < 192 && !cleared);
		assert_int_equal(!!(mmt_walk(&t, p * 4096).prot & S2_PROT_W),
				 p >= 64 && p < 192 && !cleared);
	}
	// A mask with nothing dirty under it: no flush.
	mask[0] = mask[1] = ~0ull;
	before = flushes(&t);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 1, 1024, 128, mask), 0);
	assert_int_equal(mask[0] | mask[1], 0);
	assert_int_equal(flushes(&t), before);
	mmt_fini(&t);
}

static void test_flag_on_zaps_once_off_frees(void **state)
{
	struct mmt t;
	struct s2_fault_info fi;
	uint64_t bm[WORDS];

	mmt_init(&t, &s2_fmt_arm64_4k);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, SLOT, HPA, 0), 0);
	assert_int_equal(s2_fault(t.vm, t.root, 0, S2_PROT_W, &fi), S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), S2_E_INVAL);
	int64_t pages = host_be_live_pages(t.be);
	uint64_t before = flushes(&t);
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 1, S2_SLOT_DIRTY_LOG), 0);
	assert_int_equal(flushes(&t) - before, 1); // the slot's zap
	assert_false(mmt_walk(&t, 0).mapped);
	// Directory + one bitmap page; the emptied tables below the root went.
	assert_true(host_be_live_pages(t.be) <= pages + 2);
	guest_write(&t, 4096);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
	assert_int_equal(popcount(bm, WORDS), 1);
	// Off: the bitmap goes, 2 MiB leaves come back.
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 1, 0), 0);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), S2_E_INVAL);
	assert_int_equal(s2_fault(t.vm, t.root, 0, S2_PROT_W, &fi), S2_FAULT_MAPPED);
	assert_int_equal(fi.level, 1);
	// On again: a fresh bitmap (nothing from before).
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 1, S2_SLOT_DIRTY_LOG), 0);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), 0);
	assert_int_equal(popcount(bm, WORDS), 0);
	mmt_fini(&t); // every page back: bitmaps of live slots freed too
}

static void test_move_keeps_delete_frees(void **state)
{
	struct mmt t;
	uint64_t bm[WORDS];

	logging_vm(&t, &s2_fmt_npt4);
	guest_write(&t, 9 * 4096);
	assert_int_equal(s2_slot_move(t.vm, 0, 1, 64 * MiB), 0);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), 0);
	assert_int_equal(popcount(bm, WORDS), 1);
	assert_true(bit(bm, 9));
	int64_t pages = host_be_live_pages(t.be);
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	assert_true(host_be_live_pages(t.be) <= pages - 2); // directory and bitmap page
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true), S2_E_NOENT);
	mmt_fini(&t);
}

static void test_bad_requests(void **state)
{
	struct mmt t;
	uint64_t bm[WORDS], mask[2] = {~0ull, ~0ull};

	mmt_init(&t, &s2_fmt_ept4);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, SLOT, HPA, S2_SLOT_DIRTY_LOG | S2_SLOT_DEVICE),
			 S2_E_INVAL);
	assert_int_equal(
	    s2_slot_add(t.vm, 0, 2, 0, S2_DIRTY_MAX_PAGES * 4096 + 4096, HPA, S2_SLOT_DIRTY_LOG),
	    S2_E_RANGE);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 0, SLOT, HPA, 0), 0);
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 3, S2_SLOT_DIRTY_LOG | S2_SLOT_DEVICE),
			 S2_E_INVAL);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 3, 0, PAGES, bm, false), S2_E_INVAL);
	assert_int_equal(s2_slot_set_flags(t.vm, 0, 3, S2_SLOT_DIRTY_LOG), 0);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 3, 64, PAGES, bm, false), S2_E_RANGE);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 3, 64, 0, bm, false), S2_E_RANGE);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 3, 1, 64, bm, false), S2_E_INVAL);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 4, 0, PAGES, bm, false), S2_E_NOENT);
	assert_int_equal(s2_slot_dirty_get(t.vm, S2_NR_AS, 3, 0, PAGES, bm, false), S2_E_AS);
	assert_int_equal(s2_slot_dirty_get(t.vm, 0, 3, 0, PAGES, NULL, false), S2_E_INVAL);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 3, 32, 64, mask), S2_E_INVAL);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 3, 0, 65, mask), S2_E_INVAL);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 3, PAGES - 64, 128, mask), S2_E_RANGE);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 3, 0, 0, mask), S2_E_RANGE);
	// The tail of a slot that is not a multiple of 64 pages is allowed.
	assert_int_equal(s2_slot_add(t.vm, 0, 5, 64 * MiB, 100 * 4096, HPA, S2_SLOT_DIRTY_LOG), 0);
	assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 5, 64, 36, mask), 0);
	mmt_fini(&t);
}

// Allocation failure when logging starts: nothing changes.
static void test_nomem_changes_nothing(void **state)
{
	unsigned refused = 0;

	for (uint64_t fail = 1; fail <= 3; fail++) {
		struct mmt t;
		uint64_t bm[WORDS];

		mmt_init(&t, &s2_fmt_npt4);
		assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 256 * MiB, HPA, 0), 0);
		assert_int_equal(s2_fault(t.vm, t.root, 0, S2_PROT_W, NULL), S2_FAULT_MAPPED);
		struct s2_xlate x = mmt_walk(&t, 0);
		t.be->fail_at = t.be->alloc_seq + fail;
		// 256 MiB: directory and 2 bitmap pages (after the record page).
		int r = s2_slot_set_flags(t.vm, 0, 1, S2_SLOT_DIRTY_LOG);
		t.be->fail_at = 0;
		if (r == 0) { // the failing allocation came after the update
			mmt_fini(&t);
			continue;
		}
		assert_int_equal(r, S2_E_NOMEM);
		refused++;
		assert_int_equal(mmt_walk(&t, 0).level, x.level); // not zapped
		assert_true(mmt_walk(&t, 0).mapped);
		assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false), S2_E_INVAL);
		mmt_fini(&t);
	}
	assert_int_equal(refused, 3); // the record page, the directory, a bitmap page
}

// Random writes and reads between harvests against a model: each harvest
// reports exactly the pages written since the previous one (two-sided).
static void test_random_against_model(void **state)
{
	for (unsigned i = 0; i < 3; i++) {
		struct mmt t;
		uint64_t bm[WORDS], model[WORDS];
		uint64_t seed = 0x9e3779b97f4a7c15ull * (i + 1);

		logging_vm(&t, fmts[i]);
		for (unsigned round = 0; round < 40; round++) {
			memset(model, 0, sizeof(model));
			for (unsigned k = 0; k < 300; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				uint64_t p = (seed >> 33) % PAGES;
				if ((seed >> 20) & 1) {
					guest_write(&t, p * 4096 + (seed & 0xff8));
					model[p / 64] |= 1ull << (p % 64);
				} else {
					guest_read(&t, p * 4096);
				}
			}
			bool manual = round % 2;
			if (manual) { // KVM_GET_DIRTY_LOG then KVM_CLEAR_DIRTY_LOG
				assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, false),
						 0);
				uint64_t cleared[WORDS];
				memcpy(cleared, bm, sizeof(bm));
				assert_int_equal(s2_slot_dirty_clear(t.vm, 0, 1, 0, PAGES, cleared),
						 0);
				assert_memory_equal(cleared, bm, sizeof(bm));
			} else {
				assert_int_equal(s2_slot_dirty_get(t.vm, 0, 1, 0, PAGES, bm, true),
						 0);
			}
			assert_memory_equal(bm, model, sizeof(bm));
			assert_int_equal(host_tlb_stale(t.be), 0);
		}
		mmt_fini(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_maps_readonly_write_marks),
	    cmocka_unit_test(test_harvest_reports_and_protects_exactly),
	    cmocka_unit_test(test_get_without_clear_keeps_state),
	    cmocka_unit_test(test_clear_range_only_masked),
	    cmocka_unit_test(test_flag_on_zaps_once_off_frees),
	    cmocka_unit_test(test_move_keeps_delete_frees),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_nomem_changes_nothing),
	    cmocka_unit_test(test_random_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
