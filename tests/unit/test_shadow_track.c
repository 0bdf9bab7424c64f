// SPDX-License-Identifier: Apache-2.0
//
// mm/shadow: the engine's own walk of L1's tables and its write-tracking
// hooks (struct sh_track_ops). Every L1 page the engine reads as a table was
// handed to `protect` first, once; a page given back goes through
// `unprotect`; a refused protect is an L1 table that cannot be read, a page
// shortage is reclaimed and retried; and the fault says what L1's own walk
// would have seen (present, reserved bits) for the error code L1 is shown.
#include "shadow_test.h"

#define MiB  (1024ull * 1024)
#define GiB  (1024ull * MiB)
#define GFNS (16 * MiB / SHT_PAGE)

// The L1 side of the hooks: which pages are write-protected, and a reader
// of L1 memory that counts every table read of an unprotected page.
struct l1 {
	struct sht *t;
	bool prot[GFNS];
	unsigned protects, unprotects, bad_reads;
	uint64_t refuse_gfn; // protect of this gfn fails with S2_E_INVAL (0: none)
	unsigned nomem_left; // the next protects fail with S2_E_NOMEM
	uint64_t last_unprotect;
};

static int l1_protect(void *ctx, unsigned as, uint64_t gfn)
{
	struct l1 *l = ctx;

	assert_true(gfn < GFNS);
	if (gfn == l->refuse_gfn)
		return S2_E_INVAL;
	if (l->nomem_left) {
		l->nomem_left--;
		return S2_E_NOMEM;
	}
	l->protects++;
	l->prot[gfn] = true;
	return 0;
}

static void l1_unprotect(void *ctx, unsigned as, uint64_t gfn)
{
	struct l1 *l = ctx;

	l->unprotects++;
	l->prot[gfn] = false;
	l->last_unprotect = gfn;
}

static bool l1_read64(void *ctx, unsigned as, uint64_t gpa, uint64_t *val)
{
	struct l1 *l = ctx;

	if (gpa + 8 > l->t->size)
		return false;
	if (!l->prot[gpa / SHT_PAGE])
		l->bad_reads++;
	memcpy(val, l->t->mem + gpa, 8);
	return true;
}

static bool l1_write64(void *ctx, unsigned as, uint64_t gpa, uint64_t val)
{
	struct l1 *l = ctx;

	if (gpa + 8 > l->t->size)
		return false;
	memcpy(l->t->mem + gpa, &val, 8);
	return true;
}

static void init_tracked(struct sht *t, struct l1 *l, const struct s2_fmt *f, uint64_t rsvd)
{
	memset(l, 0, sizeof(*l));
	l->t = t;
	struct sh_config cfg = {
	    .guest_pages = 2048,
	    .mem = {l1_read64, l1_write64, l},
	    .track = {l1_protect, l1_unprotect, l},
	    .l1_rsvd_mask = rsvd,
	};
	sht_init_fmt(t, f, 48, 16 * MiB, &cfg);
}

// Four 2 MiB regions in three 1 GiB ranges: 9 distinct L1 table pages.
static const uint64_t regions[] = {0, 2 * MiB, 1 * GiB, 2 * GiB};

static void test_protect_before_every_table_read(void **state)
{
	struct sht t;
	struct l1 l;
	struct sh_page *root;

	init_tracked(&t, &l, &s2_fmt_ept4, 0);
	uint64_t root_gpa = sht_new_table(&t);
	uint64_t data = 8 * MiB;
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	for (unsigned r = 0; r < 4; r++) {
		for (unsigned p = 0; p < 4; p++) {
			sht_map(&t, root_gpa, regions[r] + p * SHT_PAGE, data, S2_PROT_RWX);
			sht_touch(&t, root, regions[r] + p * SHT_PAGE, S2_PROT_R);
			data += SHT_PAGE;
		}
	}
	assert_int_equal(l.bad_reads, 0);
	assert_int_equal(l.protects, 9); // each table page once
	assert_int_equal(sht_stats(&t).protects, 9);
	assert_int_equal(l.unprotects, 0);
	for (uint64_t g = 0; g < GFNS; g++)
		assert_int_equal(l.prot[g], sh_gfn_tracked(t.m, 0, g));

	// Give back the level-0 table of region 0: its SP goes, then the page.
	uint64_t pt = s2_pte_addr(t.f, sht_read(&t, sht_entry(&t, root_gpa, 0, 1)));
	assert_int_equal(sh_unprotect_gfn(t.m, 0, pt / SHT_PAGE), 1);
	assert_int_equal(l.unprotects, 1);
	assert_int_equal(l.last_unprotect, pt / SHT_PAGE);
	assert_false(l.prot[pt / SHT_PAGE]);
	assert_false(sht_xlate(&t, root, 0).mapped);
	// The next fault there shadows (and protects) the page again.
	sht_touch(&t, root, 0, S2_PROT_R);
	assert_int_equal(l.protects, 10);
	assert_int_equal(l.bad_reads, 0);
	assert_int_equal(sh_check(t.m), 0);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// A table page L1's map refuses to protect (not L1's RAM): the fault is L1's,
// at that level, with nothing present; a page shortage is reclaimed and the
// walk retried.
static void test_protect_refused_and_short(void **state)
{
	struct sht t;
	struct l1 l;
	struct sh_page *root;
	struct sh_fault_info fi;

	init_tracked(&t, &l, &s2_fmt_ept4, 0);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	sht_map(&t, root_gpa, 0, 8 * MiB, S2_PROT_RWX);
	sht_map(&t, root_gpa, 1 * GiB, 8 * MiB + SHT_PAGE, S2_PROT_RWX);
	sht_touch(&t, root, 0, S2_PROT_R);
	uint64_t l1_table = s2_pte_addr(t.f, sht_read(&t, sht_entry(&t, root_gpa, 1 * GiB, 2)));
	l.refuse_gfn = l1_table / SHT_PAGE;
	assert_int_equal(sh_fault(t.m, root, 1 * GiB, S2_PROT_R, &fi), SH_FAULT_L1);
	assert_int_equal(fi.level, 1);
	assert_false(fi.present);
	assert_int_equal(l.bad_reads, 0);

	l.refuse_gfn = 0;
	l.nomem_left = 1; // one shortage: the oldest SPs go, the walk is retried
	assert_int_equal(sh_fault(t.m, root, 1 * GiB, S2_PROT_R, &fi), SH_FAULT_MAPPED);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.reclaims, 1);
	assert_true(s.evicted >= 1);
	assert_int_equal(l.bad_reads, 0);
	assert_int_equal(sh_check(t.m), 0);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// What L1's walk would have seen, on NPT (PS is reserved in the top level;
// address bits beyond the physical width are reserved everywhere).
static void test_l1_fault_info(void **state)
{
	const uint64_t rsvd = 0x000ff00000000000ull; // bits 51:44
	struct sht t;
	struct l1 l;
	struct sh_page *root;
	struct sh_fault_info fi;

	init_tracked(&t, &l, &s2_fmt_npt4, rsvd);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);

	// Not mapped: not present, at the level where the walk stopped.
	assert_int_equal(sh_fault(t.m, root, 0, S2_PROT_R, &fi), SH_FAULT_L1);
	assert_false(fi.present || fi.rsvd);
	assert_int_equal(fi.level, 3);

	// Read-only leaf, written: present, no reserved bit.
	sht_map(&t, root_gpa, 0, 8 * MiB, S2_PROT_R | S2_PROT_X);
	assert_int_equal(sh_fault(t.m, root, 0, S2_PROT_W, &fi), SH_FAULT_L1);
	assert_true(fi.present);
	assert_false(fi.rsvd);
	assert_int_equal(sh_fault(t.m, root, 0, S2_PROT_R, &fi), SH_FAULT_MAPPED);

	// A leaf with an address bit beyond the width: present and reserved.
	uint64_t e = sht_entry(&t, root_gpa, SHT_PAGE, 0);
	sht_l1_write(&t, e, t.f->make_leaf(8 * MiB, 0, S2_PROT_RWX, S2_MT_WB, 0) | (1ull << 45));
	assert_int_equal(sh_fault(t.m, root, SHT_PAGE, S2_PROT_R, &fi), SH_FAULT_L1);
	assert_true(fi.present && fi.rsvd);
	assert_int_equal(fi.level, 0);

	// PS in the top level (a 512 GiB page does not exist).
	uint64_t top = root_gpa + 8 * 1;
	sht_l1_write(&t, top, t.f->make_leaf(0, 2, S2_PROT_RWX, S2_MT_WB, 0));
	assert_int_equal(sh_fault(t.m, root, 1ull << 39, S2_PROT_R, &fi), SH_FAULT_L1);
	assert_true(fi.present && fi.rsvd);
	assert_int_equal(fi.level, 3);
	assert_int_equal(l.bad_reads, 0);
	assert_int_equal(sh_check(t.m), 0);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_protect_before_every_table_read),
	    cmocka_unit_test(test_protect_refused_and_short),
	    cmocka_unit_test(test_l1_fault_info),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
