// SPDX-License-Identifier: Apache-2.0
//
// Nested shadow MMU (mm/shadow*): recursive orphan zap empties hash, rmaps and
// used count; a shared child survives its first parent; orphans made by
// emulated L1 writes are reclaimed on that path; quota default, recycling and
// roots-only exhaustion; hash keyed by gfn and role; a memslot delete zaps the
// SPs that shadow L1 tables in the slot; pages are freed only after software
// walkers left; write tracking and large L1 leaves.
#include "shadow_test.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

static void check_clean(struct sht *t)
{
	assert_int_equal(sh_check(t->m), 0);
}

// Four 2 MiB regions in three 1 GiB ranges under one root entry: root, one
// level-2 SP, three level-1 SPs, four level-0 SPs (9 SPs), 32 leaves.
static const uint64_t regions[] = {0, 2 * MiB, 1 * GiB, 2 * GiB};

static uint64_t build_tree(struct sht *t, struct sh_page **root)
{
	uint64_t root_gpa = sht_new_table(t);
	uint64_t data = 4 * MiB;

	assert_int_equal(sh_root_get(t->m, 0, root_gpa, root), 0);
	for (unsigned r = 0; r < 4; r++) {
		for (unsigned p = 0; p < 8; p++) {
			uint64_t l2 = regions[r] + p * SHT_PAGE;

			sht_map(t, root_gpa, l2, data, S2_PROT_RWX);
			sht_touch(t, *root, l2, S2_PROT_W);
			assert_int_equal(sht_xlate(t, *root, l2).hpa, sht_hpa(t, data));
			data += SHT_PAGE;
		}
	}
	return root_gpa;
}

static void test_recursive_zap_empties_everything(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	build_tree(&t, &root);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 9);
	assert_int_equal(s.hashed, 9);
	assert_int_equal(s.rmap_entries, 32);
	check_clean(&t);

	uint64_t fl = sht_flushes(&t);
	sh_root_put(t.m, root); // the root goes, its whole tree with it
	s = sht_stats(&t);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.hashed, 0);
	assert_int_equal(s.rmap_entries, 0);
	assert_int_equal(s.longest_chain, 0);
	assert_int_equal(s.orphans, 0);
	assert_int_equal(s.zapped, 9);
	assert_int_equal(s.zapped_orphans, 8);
	assert_int_equal(s.freed, 9);
	assert_int_equal(sht_flushes(&t) - fl, 1); // one flush for the whole commit
	check_clean(&t);
	sht_fini(&t);
}

// The same on NPT and arm64 stage-2 (48-bit IPA, one 512-entry root page;
// stage-2 table descriptors carry no permissions).
static void test_recursive_zap_other_formats(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 2; i++) {
		struct sht t;
		struct sh_page *root;
		struct sh_config cfg = {.guest_pages = 2048,
					.tables_carry_no_access = fmts[i] == &s2_fmt_arm64_4k};

		sht_init_fmt(&t, fmts[i], 48, 8 * MiB, &cfg);
		build_tree(&t, &root);
		assert_int_equal(sht_stats(&t).used, 9);
		assert_int_equal(sht_stats(&t).rmap_entries, 32);
		check_clean(&t);
		sh_root_put(t.m, root);
		struct sh_stats s = sht_stats(&t);
		assert_int_equal(s.used + s.hashed + s.rmap_entries + s.longest_chain, 0);
		assert_int_equal(s.zapped_orphans, 8);
		sht_fini(&t);
	}
}

// The same tree without recursive reclaim: the root's children stay behind.
static void test_non_recursive_leaves_orphans(void **state)
{
	struct sht t;
	struct sh_page *root;
	struct sh_config cfg = {.guest_pages = 2048, .non_recursive = true};

	sht_init_cfg(&t, 8 * MiB, &cfg);
	build_tree(&t, &root);
	sh_root_put(t.m, root);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 8);
	assert_int_equal(s.hashed, 8);
	assert_int_equal(s.orphans, 1); // the level-2 SP; below it parents remain
	assert_int_equal(s.rmap_entries, 32);
	check_clean(&t);
	sht_fini(&t); // VM teardown zaps them
}

// One L1 level-0 table X referenced by two level-1 entries (different 1 GiB
// regions): one SP with two parents, surviving the first.
static void test_shared_child_survives_first_parent(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t a = 0, b = 1 * GiB;
	uint64_t ea = sht_entry(&t, root_gpa, a, 1), eb = sht_entry(&t, root_gpa, b, 1);
	uint64_t x = sht_new_table(&t);
	sht_l1_write(&t, ea, t.f->make_table(x));
	sht_l1_write(&t, eb, t.f->make_table(x));
	for (unsigned p = 0; p < 4; p++) {
		sht_l1_write(&t, x + 8 * p,
			     t.f->make_leaf(4 * MiB + p * SHT_PAGE, 0, S2_PROT_RWX, S2_MT_WB, 0));
		sht_touch(&t, root, a + p * SHT_PAGE, S2_PROT_R);
		sht_touch(&t, root, b + p * SHT_PAGE, S2_PROT_R);
	}
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 5); // root, level 2, 2 x level 1, X once
	assert_int_equal(s.rmap_entries, 4);
	check_clean(&t);

	sht_l1_write(&t, ea, 0); // first parent gone
	s = sht_stats(&t);
	assert_int_equal(s.used, 5);
	assert_int_equal(s.zapped, 0);
	assert_int_equal(s.rmap_entries, 4);
	for (unsigned p = 0; p < 4; p++) {
		assert_false(sht_xlate(&t, root, a + p * SHT_PAGE).mapped);
		assert_true(sht_xlate(&t, root, b + p * SHT_PAGE).mapped);
	}
	check_clean(&t);

	sht_l1_write(&t, eb, 0); // last parent gone: X is reclaimed on this write
	s = sht_stats(&t);
	assert_int_equal(s.used, 4);
	assert_int_equal(s.zapped_orphans, 1);
	assert_int_equal(s.rmap_entries, 0);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// Nine parents (one inline, the rest spilled to descriptors), removed in a
// scrambled order: the child lives exactly until the last one goes.
static void test_parent_list_spill(void **state)
{
	static const unsigned order[] = {4, 0, 8, 1, 7, 2, 6, 3, 5};
	struct sht t;
	struct sh_page *root;
	uint64_t e[9];

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t x = sht_new_table(&t);
	for (unsigned k = 0; k < 9; k++) {
		e[k] = sht_entry(&t, root_gpa, k * 2 * MiB, 1);
		sht_l1_write(&t, e[k], t.f->make_table(x));
	}
	sht_l1_write(&t, x, t.f->make_leaf(4 * MiB, 0, S2_PROT_RWX, S2_MT_WB, 0));
	for (unsigned k = 0; k < 9; k++)
		sht_touch(&t, root, k * 2 * MiB, S2_PROT_R);
	assert_int_equal(sht_stats(&t).used, 4);
	check_clean(&t);
	for (unsigned i = 0; i < 9; i++) {
		sht_l1_write(&t, e[order[i]], 0);
		check_clean(&t);
		assert_int_equal(sht_stats(&t).used, i < 8 ? 4 : 3);
		for (unsigned k = 0; k < 9; k++) {
			bool gone = false;

			for (unsigned j = 0; j <= i; j++)
				gone |= order[j] == k;
			assert_int_equal(sht_xlate(&t, root, k * 2 * MiB).mapped, !gone);
		}
	}
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// L1 tears its table down bottom-up at 4K granularity (as KVM as L1 does):
// every orphan is reclaimed by the emulated write that orphaned it.
static void teardown_bottom_up(struct sht *t, uint64_t root_gpa, bool recursive)
{
	uint64_t l2 = 0;
	uint64_t e2 = sht_entry(t, root_gpa, l2, 2), e1a = sht_entry(t, root_gpa, 0, 1);
	uint64_t e1b = sht_entry(t, root_gpa, 2 * MiB, 1), e3 = root_gpa + 8 * sht_idx(l2, 3);

	for (unsigned p = 0; p < 8; p++) {
		sht_l1_write(t, sht_entry(t, root_gpa, p * SHT_PAGE, 0), 0);
		sht_l1_write(t, sht_entry(t, root_gpa, 2 * MiB + p * SHT_PAGE, 0), 0);
	}
	struct sh_stats s = sht_stats(t);
	assert_int_equal(s.rmap_entries, 0);
	assert_int_equal(s.emul_zaps, 16);
	assert_int_equal(s.used, 5);

	uint64_t steps[] = {e1a, e1b, e2, e3};
	for (unsigned i = 0; i < 4; i++) {
		sht_l1_write(t, steps[i], 0);
		s = sht_stats(t);
		if (recursive) {
			assert_int_equal(s.used, 4 - i); // the orphan went on this write
			assert_int_equal(s.orphans, 0);
		} else {
			assert_int_equal(s.used, 5);
			assert_int_equal(s.orphans, i + 1);
		}
		check_clean(t);
	}
}

static void emulated_write_case(bool recursive)
{
	struct sht t;
	struct sh_page *root;
	struct sh_config cfg = {.guest_pages = 2048, .non_recursive = !recursive};

	sht_init_cfg(&t, 8 * MiB, &cfg);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	for (unsigned p = 0; p < 8; p++) {
		sht_map(&t, root_gpa, p * SHT_PAGE, 4 * MiB + p * SHT_PAGE, S2_PROT_RWX);
		sht_map(&t, root_gpa, 2 * MiB + p * SHT_PAGE, 5 * MiB + p * SHT_PAGE, S2_PROT_RWX);
		sht_touch(&t, root, p * SHT_PAGE, S2_PROT_R);
		sht_touch(&t, root, 2 * MiB + p * SHT_PAGE, S2_PROT_R);
	}
	assert_int_equal(sht_stats(&t).used, 5);
	teardown_bottom_up(&t, root_gpa, recursive);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.zapped_orphans, recursive ? 4 : 0);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

static void test_emulated_write_orphans_reclaimed(void **state)
{
	emulated_write_case(true);
}

static void test_emulated_write_orphans_leak_when_off(void **state)
{
	emulated_write_case(false);
}

// An aligned write of a leaf updates the shadow leaf in place (no fault).
static void test_emulated_leaf_update(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	sht_map(&t, root_gpa, 0, 4 * MiB, S2_PROT_RWX);
	sht_touch(&t, root, 0, S2_PROT_W);
	uint64_t fl = sht_flushes(&t);
	sht_map(&t, root_gpa, 0, 6 * MiB, S2_PROT_RWX); // tracked page: emulated
	assert_int_equal(sht_xlate(&t, root, 0).hpa, sht_hpa(&t, 6 * MiB));
	assert_int_equal(sht_flushes(&t) - fl, 1);	     // the old target was live
	sht_map(&t, root_gpa, SHT_PAGE, 7 * MiB, S2_PROT_R); // new leaf: installed, no flush
	assert_int_equal(sht_flushes(&t) - fl, 1);
	struct s2_xlate x = sht_xlate(&t, root, SHT_PAGE);
	assert_true(x.mapped);
	assert_int_equal(x.prot, S2_PROT_R);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.emul_updates, 2);
	// A leaf L1 made write-only (an EPT misconfiguration) is not shadowed.
	sht_map(&t, root_gpa, SHT_PAGE, 7 * MiB, S2_PROT_W);
	assert_false(sht_xlate(&t, root, SHT_PAGE).mapped);
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, SHT_PAGE, S2_PROT_W, &fi), SH_FAULT_L1);
	s = sht_stats(&t);
	assert_int_equal(s.emul_updates, 2);
	// A partial write zaps every SP shadowing the page.
	uint64_t e0 = sht_entry(&t, root_gpa, 0, 0);
	assert_int_equal(sh_emulate_write(t.m, 0, e0 + 4, 0, 4), 0);
	s = sht_stats(&t);
	assert_int_equal(s.emul_whole, 1);
	assert_false(sht_xlate(&t, root, 0).mapped);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// Emulated XCHG/CMPXCHG (sh_emulate_update): a matching compare writes L1's
// entry and updates the shadow leaf; a failed one writes nothing, changes no
// shadow entry and reports what is there.
static void test_emulated_cmpxchg(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	sht_map(&t, root_gpa, 0, 4 * MiB, S2_PROT_RWX);
	sht_touch(&t, root, 0, S2_PROT_W);
	uint64_t e0 = sht_entry(&t, root_gpa, 0, 0);
	uint64_t cur = sht_read(&t, e0), old = 0;
	uint64_t to6 = t.f->make_leaf(6 * MiB, 0, S2_PROT_RWX, S2_MT_WB, 0);
	uint64_t wrong = cur ^ 1;
	uint64_t w0 = sht_stats(&t).emul_writes, u0 = sht_stats(&t).emul_updates;

	assert_int_equal(sh_emulate_update(t.m, 0, e0, 8, &wrong, to6, &old), 0);
	assert_int_equal(old, cur);
	assert_int_equal(sht_read(&t, e0), cur);
	assert_int_equal(sht_xlate(&t, root, 0).hpa, sht_hpa(&t, 4 * MiB));
	assert_int_equal(sht_stats(&t).emul_writes, w0);
	assert_int_equal(sh_emulate_update(t.m, 0, e0, 8, &cur, to6, &old), 0);
	assert_int_equal(old, cur);
	assert_int_equal(sht_read(&t, e0), to6);
	assert_int_equal(sht_xlate(&t, root, 0).hpa, sht_hpa(&t, 6 * MiB));
	// XCHG: no compare; zero clears the shadow leaf.
	assert_int_equal(sh_emulate_update(t.m, 0, e0, 8, NULL, 0, &old), 0);
	assert_int_equal(old, to6);
	assert_false(sht_xlate(&t, root, 0).mapped);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.emul_writes - w0, 2);
	assert_int_equal(s.emul_updates - u0, 1);
	assert_int_equal(s.emul_zaps, 1);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// Unprotecting an L1 table page zaps exactly the SPs shadowing it, reclaims
// the children they orphan, and leaves the page untracked; the next fault
// shadows it again.
static void test_unprotect_gfn(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = build_tree(&t, &root);
	assert_int_equal(sht_stats(&t).used, 9);
	// The level-1 table that maps the 1 GiB region (one level-0 SP under it).
	uint64_t l1_table = s2_pte_addr(t.f, sht_read(&t, sht_entry(&t, root_gpa, 1 * GiB, 2)));
	uint64_t gfn = l1_table / SHT_PAGE;
	assert_true(sh_gfn_tracked(t.m, 0, gfn));
	assert_int_equal(sh_unprotect_gfn(t.m, 0, gfn), 1);
	assert_false(sh_gfn_tracked(t.m, 0, gfn));
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 7); // the level-1 SP and its one level-0 child
	assert_int_equal(s.unprotects, 1);
	assert_int_equal(s.orphans, 0);
	assert_false(sht_xlate(&t, root, 1 * GiB).mapped);
	assert_true(sht_xlate(&t, root, 2 * GiB).mapped);
	assert_int_equal(sh_unprotect_gfn(t.m, 0, gfn), 0); // nothing left to zap
	sht_touch(&t, root, 1 * GiB, S2_PROT_R);
	assert_true(sh_gfn_tracked(t.m, 0, gfn));
	assert_int_equal(sht_stats(&t).used, 9);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// L1 memory taken away without a slot change (sh_zap_range): SPs shadowing
// tables there and leaves mapping it go; everything else stays.
static void test_zap_range(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	build_tree(&t, &root);
	// Data page of region 0, page 1 (build_tree maps from 4 MiB up, in order).
	uint64_t data = 4 * MiB + SHT_PAGE;
	assert_true(sht_xlate(&t, root, SHT_PAGE).mapped);
	sh_zap_range(t.m, 0, data, SHT_PAGE);
	assert_false(sht_xlate(&t, root, SHT_PAGE).mapped);
	assert_true(sht_xlate(&t, root, 0).mapped);
	assert_true(sht_xlate(&t, root, 2 * SHT_PAGE).mapped);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 9);
	assert_int_equal(s.rmap_entries, 31);
	assert_int_equal(s.slot_zaps, 0);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

static void test_quota_default(void **state)
{
	struct sht t;
	struct sh_config big = {.guest_pages = 100000};

	sht_init(&t, 8 * MiB); // 2048 pages: 2048 / 50 < 64
	assert_int_equal(sht_stats(&t).quota, 64);
	sh_set_quota(t.m, 10);
	assert_int_equal(sht_stats(&t).quota, 10);
	sh_set_quota(t.m, 0);
	assert_int_equal(sht_stats(&t).quota, 64);
	sht_fini(&t);
	sht_init_cfg(&t, 8 * MiB, &big);
	assert_int_equal(sht_stats(&t).quota, 2000); // 20 per 1000 guest pages
	sht_fini(&t);
}

// Under a quota of 12, 40 regions of 3 SPs each (one per 512 GiB root entry):
// the oldest non-root SPs are
// recycled, the root never (I2.5), and every touched page is mapped.
// L2 touches one page in each of 40 regions, one per 512 GiB root entry (3 new
// SPs each): every touch maps the right page, the root stays valid, the
// engine stays consistent and never holds more than `max_used` SPs.
static void touch_40_regions(struct sht *t, uint64_t root_gpa, struct sh_page *root,
			     uint64_t max_used)
{
	for (unsigned r = 0; r < 40; r++) {
		uint64_t l2 = (uint64_t)r << 39;

		sht_map(t, root_gpa, l2, 8 * MiB + r * SHT_PAGE, S2_PROT_RWX);
		sht_touch(t, root, l2, S2_PROT_R);
		assert_int_equal(sht_xlate(t, root, l2).hpa, sht_hpa(t, 8 * MiB + r * SHT_PAGE));
		assert_true(sht_stats(t).used <= max_used);
		assert_false(sh_root_is_invalid(root));
		check_clean(t);
	}
}

static void test_quota_recycling(void **state)
{
	struct sht t;
	struct sh_page *root;
	struct sh_config cfg = {.guest_pages = 2048, .quota = 12};

	sht_init_cfg(&t, 16 * MiB, &cfg);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	touch_40_regions(&t, root_gpa, root, 12);
	struct sh_stats s = sht_stats(&t);
	assert_true(s.evicted >= 30);
	assert_int_equal(s.nospc, 0);
	assert_true(s.used_max <= 12);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// Only referenced roots left: the next root gets a clean SH_E_NOSPC.
static void test_quota_roots_only(void **state)
{
	struct sht t;
	struct sh_page *roots[5];
	struct sh_config cfg = {.guest_pages = 2048, .quota = 4};

	sht_init_cfg(&t, 8 * MiB, &cfg);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(sh_root_get(t.m, 0, sht_new_table(&t), &roots[i]), 0);
	uint64_t extra = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, extra, &roots[4]), SH_E_NOSPC);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.evicted, 0);
	assert_int_equal(s.used, 4);
	for (unsigned i = 0; i < 4; i++)
		assert_false(sh_root_is_invalid(roots[i]));
	check_clean(&t);
	sh_root_put(t.m, roots[0]);
	assert_int_equal(sh_root_get(t.m, 0, extra, &roots[4]), 0);
	for (unsigned i = 1; i < 5; i++)
		sh_root_put(t.m, roots[i]);
	assert_int_equal(sht_stats(&t).used, 0);
	sht_fini(&t);
}

static uint64_t live_pages(struct sht *t)
{
	struct host_counts c;

	host_be_counts(t->be, &c);
	return c.alloc_pages - c.free_pages;
}

// The page source runs dry long before the quota (the machine's table pages
// are shared): 40 regions of 3 SPs each need about 320 pages and only 48 are
// there. Every fault still maps (the oldest SPs are zapped and their pages
// reused), the root is never taken, and the figures say what happened. The
// [nested-core] defect: the fault failed and left L1 without L2 guests.
static void test_pressure_reclaims_and_refills(void **state)
{
	struct sht t;
	struct sh_page *root;
	struct sh_config cfg = {.guest_pages = 100000}; // quota 2000: never the limit

	sht_init_cfg(&t, 16 * MiB, &cfg);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	t.be->page_limit = live_pages(&t) + 48;
	touch_40_regions(&t, root_gpa, root, 2000);
	struct sh_stats s = sht_stats(&t);
	assert_true(s.nomem > 0);
	assert_true(s.reclaims > 0 && s.reclaims <= s.nomem);
	assert_true(s.evicted > 0);
	assert_int_equal(s.nospc, 0);
	assert_int_equal(s.created, 1 + 3 * 40); // nothing made twice: no retry loop
	assert_true(live_pages(&t) <= t.be->page_limit);
	// The most recent region is still mapped: eviction took the oldest.
	assert_true(sht_xlate(&t, root, 39ull << 39).mapped);
	t.be->page_limit = 0;
	sh_root_put(t.m, root);
	assert_int_equal(sht_stats(&t).used, 0);
	sht_fini(&t);
}

// No page and nothing but a root in use to take one from: the fault fails
// cleanly (S2_E_NOMEM, nothing half built) and works once pages are back.
static void test_pressure_only_roots(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	sht_map(&t, root_gpa, 0, 4 * MiB, S2_PROT_RWX);
	t.be->page_limit = live_pages(&t);
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, 0, S2_PROT_R, &fi), S2_E_NOMEM);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 1);
	assert_int_equal(s.reclaims, 0);
	check_clean(&t);
	t.be->page_limit = 0;
	sht_touch(&t, root, 0, S2_PROT_R);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// The same L1 table page reached with different access is two SPs.
static void test_hash_role_keying(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t ea = sht_entry(&t, root_gpa, 0, 1), eb = sht_entry(&t, root_gpa, 2 * MiB, 1);
	uint64_t x = sht_new_table(&t);
	sht_l1_write(&t, ea, t.f->make_table(x));
	sht_l1_write(&t, eb, t.f->make_table(x) & ~EPT_W); // read-only subtree
	sht_l1_write(&t, x, t.f->make_leaf(4 * MiB, 0, S2_PROT_RWX, S2_MT_WB, 0));
	sht_touch(&t, root, 0, S2_PROT_W);
	sht_touch(&t, root, 2 * MiB, S2_PROT_R);
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, 2 * MiB, S2_PROT_W, &fi), SH_FAULT_L1);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 5); // root, level 2, level 1, X twice
	assert_true(s.longest_chain >= 2);
	assert_int_equal(sht_xlate(&t, root, 0).prot, S2_PROT_RWX);
	assert_int_equal(sht_xlate(&t, root, 2 * MiB).prot, S2_PROT_R | S2_PROT_X);
	assert_int_equal(sht_xlate(&t, root, 0).hpa, sht_xlate(&t, root, 2 * MiB).hpa);
	check_clean(&t);
	// Dropping one role's parent reclaims exactly that SP.
	sht_l1_write(&t, eb, 0);
	assert_int_equal(sht_stats(&t).used, 4);
	assert_true(sht_xlate(&t, root, 0).mapped);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// Slots: A = [0, 2M) root and upper tables, B = [2M, 4M), C = [4M, 8M).
// P's level-0 table lives in B, Q's in A; Q maps 4 pages of B and 4 of C.
static void test_slot_delete_zaps_shadowing_sps(void **state)
{
	struct sht t;
	struct sh_page *root;
	uint64_t p = 0, q = 1 * GiB;

	sht_init(&t, 8 * MiB);
	uint64_t base = (uint64_t)(uintptr_t)t.mem;
	assert_int_equal(s2_slot_delete(t.vm, 0, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, 2 * MiB, base, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 2, 2 * MiB, 2 * MiB, base + 2 * MiB, 0), 0);
	assert_int_equal(s2_slot_add(t.vm, 0, 3, 4 * MiB, 4 * MiB, base + 4 * MiB, 0), 0);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t ep = sht_entry(&t, root_gpa, p, 1);
	sht_entry(&t, root_gpa, q, 0); // Q's tables, all in A
	uint64_t saved = t.next_table;
	t.next_table = 2 * MiB;
	uint64_t px = sht_new_table(&t); // in B
	t.next_table = saved;
	sht_l1_write(&t, ep, t.f->make_table(px));
	for (unsigned i = 0; i < 8; i++) {
		sht_map(&t, root_gpa, p + i * SHT_PAGE, 4 * MiB + i * SHT_PAGE, S2_PROT_RWX);
		uint64_t qd = i < 4 ? 3 * MiB + i * SHT_PAGE : 5 * MiB + i * SHT_PAGE;
		sht_map(&t, root_gpa, q + i * SHT_PAGE, qd, S2_PROT_RWX);
		sht_touch(&t, root, p + i * SHT_PAGE, S2_PROT_R);
		sht_touch(&t, root, q + i * SHT_PAGE, S2_PROT_R);
	}
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 6);
	assert_int_equal(s.rmap_entries, 16);

	uint64_t fl = sht_flushes(&t);
	assert_int_equal(s2_slot_delete(t.vm, 0, 2), 0);
	s = sht_stats(&t);
	assert_int_equal(s.slot_zaps, 1); // P's level-0 SP, whose L1 table was in B
	assert_int_equal(s.used, 5);
	assert_int_equal(s.rmap_entries, 4); // Q's pages in C
	assert_true(sht_flushes(&t) - fl >= 1);
	for (unsigned i = 0; i < 8; i++) {
		assert_false(sht_xlate(&t, root, p + i * SHT_PAGE).mapped);
		assert_int_equal(sht_xlate(&t, root, q + i * SHT_PAGE).mapped, i >= 4);
	}
	check_clean(&t);
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, q, S2_PROT_R, &fi), SH_FAULT_MMIO);
	assert_int_equal(sh_fault(t.m, root, p, S2_PROT_R, &fi), SH_FAULT_L1);

	// Deleting the slot holding the root table invalidates the root in use.
	assert_int_equal(s2_slot_delete(t.vm, 0, 1), 0);
	assert_true(sh_root_is_invalid(root));
	assert_int_equal(sh_fault(t.m, root, q + 4 * SHT_PAGE, S2_PROT_R, &fi), SH_FAULT_RELOAD);
	s = sht_stats(&t);
	assert_int_equal(s.used, 1); // the invalid root, until its last put
	assert_int_equal(s.hashed, 0);
	assert_int_equal(s.rmap_entries, 0);
	check_clean(&t);
	sh_root_put(t.m, root);
	assert_int_equal(sht_stats(&t).used, 0);
	sht_fini(&t);
}

// Zap-all slot mode: the engine's destroy_all hook takes every SP.
static void test_slot_delete_zap_all_mode(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	build_tree(&t, &root);
	assert_int_equal(s2_slot_add(t.vm, 0, 9, 64 * MiB, 2 * MiB, 0x40000000ull, 0), 0);
	s2_vm_set_zap_mode(t.vm, S2_ZAP_ALL);
	assert_int_equal(s2_slot_delete(t.vm, 0, 9), 0);
	struct sh_stats s = sht_stats(&t);
	assert_true(sh_root_is_invalid(root));
	assert_int_equal(s.used, 1);
	assert_int_equal(s.rmap_entries, 0);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

// I2.3: a software walker inside its read section keeps zapped pages alive.
static void test_free_after_walkers(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	build_tree(&t, &root);
	int64_t live = host_be_live_pages(t.be);
	sh_walk_enter(t.m, 3);
	uint64_t l2 = regions[2];
	assert_true(sht_xlate(&t, root, l2).mapped);
	sh_root_put(t.m, root);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.pending_free, 9);
	assert_int_equal(s.freed, 0);
	assert_int_equal(host_be_live_pages(t.be), live);
	sh_walk_exit(t.m, 3);
	s = sht_stats(&t); // polls the epoch: the grace period is over
	assert_int_equal(s.pending_free, 0);
	assert_int_equal(s.freed, 9);
	assert_true(host_be_live_pages(t.be) < live);
	sht_fini(&t);
}

// Write tracking: a page L1 starts using as a table becomes read-only in
// the shadow leaves that map it; L2 writes to it must be emulated.
static void test_write_tracking(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t z = 1 * MiB; // an L1 page, first L2 data
	sht_map(&t, root_gpa, 0, z, S2_PROT_RWX);
	sht_touch(&t, root, 0, S2_PROT_W);
	assert_int_equal(sht_xlate(&t, root, 0).prot, S2_PROT_RWX);
	// L1 now uses z as the level-0 table of another region.
	uint64_t e = sht_entry(&t, root_gpa, 1 * GiB, 1);
	sht_l1_write(&t, e, t.f->make_table(z));
	sht_l1_write(&t, z, t.f->make_leaf(4 * MiB, 0, S2_PROT_RWX, S2_MT_WB, 0));
	sht_touch(&t, root, 1 * GiB, S2_PROT_R);
	assert_true(sh_gfn_tracked(t.m, 0, z / SHT_PAGE));
	assert_int_equal(sht_xlate(&t, root, 0).prot, S2_PROT_R | S2_PROT_X);
	assert_int_equal(sht_stats(&t).write_protects, 1);
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, 0, S2_PROT_W, &fi), SH_FAULT_EMULATE);
	assert_int_equal(fi.l1_gpa, z);
	check_clean(&t);
	sh_root_put(t.m, root);
	assert_false(sh_gfn_tracked(t.m, 0, z / SHT_PAGE));
	sht_fini(&t);
}

// A 2 MiB L1 leaf is shadowed by a direct level-0 SP; dropping it reclaims
// the direct SP as an orphan.
static void test_large_l1_leaf(void **state)
{
	struct sht t;
	struct sh_page *root;

	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	uint64_t e = sht_entry(&t, root_gpa, 6 * MiB, 1);
	sht_l1_write(&t, e, t.f->make_leaf(4 * MiB, 1, S2_PROT_RW, S2_MT_WB, 0));
	sht_touch(&t, root, 6 * MiB, S2_PROT_W);
	sht_touch(&t, root, 6 * MiB + 5 * SHT_PAGE + 8, S2_PROT_R);
	struct s2_xlate x = sht_xlate(&t, root, 6 * MiB + 5 * SHT_PAGE + 8);
	assert_int_equal(x.hpa, sht_hpa(&t, 4 * MiB + 5 * SHT_PAGE + 8));
	assert_int_equal(x.prot, S2_PROT_RW);
	assert_int_equal(sht_stats(&t).used, 4); // root, level 2, level 1, direct
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t.m, root, 6 * MiB, S2_PROT_X, &fi), SH_FAULT_L1);
	check_clean(&t);
	sht_l1_write(&t, e, 0);
	struct sh_stats s = sht_stats(&t);
	assert_int_equal(s.used, 3);
	assert_int_equal(s.rmap_entries, 0);
	check_clean(&t);
	sh_root_put(t.m, root);
	sht_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recursive_zap_empties_everything),
	    cmocka_unit_test(test_recursive_zap_other_formats),
	    cmocka_unit_test(test_non_recursive_leaves_orphans),
	    cmocka_unit_test(test_shared_child_survives_first_parent),
	    cmocka_unit_test(test_parent_list_spill),
	    cmocka_unit_test(test_emulated_write_orphans_reclaimed),
	    cmocka_unit_test(test_emulated_write_orphans_leak_when_off),
	    cmocka_unit_test(test_emulated_leaf_update),
	    cmocka_unit_test(test_emulated_cmpxchg),
	    cmocka_unit_test(test_unprotect_gfn),
	    cmocka_unit_test(test_zap_range),
	    cmocka_unit_test(test_quota_default),
	    cmocka_unit_test(test_quota_recycling),
	    cmocka_unit_test(test_quota_roots_only),
	    cmocka_unit_test(test_pressure_reclaims_and_refills),
	    cmocka_unit_test(test_pressure_only_roots),
	    cmocka_unit_test(test_hash_role_keying),
	    cmocka_unit_test(test_slot_delete_zaps_shadowing_sps),
	    cmocka_unit_test(test_slot_delete_zap_all_mode),
	    cmocka_unit_test(test_free_after_walkers),
	    cmocka_unit_test(test_write_tracking),
	    cmocka_unit_test(test_large_l1_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
