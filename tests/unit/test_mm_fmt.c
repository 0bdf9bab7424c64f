// SPDX-License-Identifier: Apache-2.0
//
// Formats: geometry per input width (arm64 concatenated start tables, EPT
// 5-level), the index the walker uses at each level (checked against tables
// descended by hand), VTCR_EL2 arithmetic, and the entry codecs.
#include "mm_test.h"

static void check_geom(const struct s2_fmt *f, unsigned ia, unsigned root_level, unsigned entries,
		       unsigned pages)
{
	struct s2_geom g;

	assert_true(s2_fmt_geom(f, ia, &g));
	assert_int_equal(g.root_level, root_level);
	assert_int_equal(g.root_entries, entries);
	assert_int_equal(g.root_pages, pages);
}

static void test_geometry(void **state)
{
	struct s2_geom g;

	check_geom(&s2_fmt_arm64_4k, 32, 1, 2048, 4); // arm start level 2, 4 tables
	check_geom(&s2_fmt_arm64_4k, 33, 1, 4096, 8);
	check_geom(&s2_fmt_arm64_4k, 36, 2, 64, 1);
	check_geom(&s2_fmt_arm64_4k, 40, 2, 1024, 2); // arm start level 1, 2 tables
	check_geom(&s2_fmt_arm64_4k, 43, 2, 8192, 16);
	check_geom(&s2_fmt_arm64_4k, 44, 3, 32, 1); // arm start level 0
	check_geom(&s2_fmt_arm64_4k, 48, 3, 512, 1);
	assert_false(s2_fmt_geom(&s2_fmt_arm64_4k, 31, &g));
	assert_false(s2_fmt_geom(&s2_fmt_arm64_4k, 49, &g));
	check_geom(&s2_fmt_ept4, 48, 3, 512, 1);
	check_geom(&s2_fmt_ept5, 57, 4, 512, 1);
	check_geom(&s2_fmt_npt4, 48, 3, 512, 1);
	assert_false(s2_fmt_geom(&s2_fmt_ept4, 57, &g));

	// VTCR_EL2 of the primary today: 40-bit IPA, PS 40 bits (encoding 2).
	assert_true(s2_fmt_geom(&s2_fmt_arm64_4k, 40, &g));
	assert_int_equal(arm64_s2_vtcr(&g, 2), 0x80023558);
	assert_true(s2_fmt_geom(&s2_fmt_arm64_4k, 48, &g));
	assert_int_equal(arm64_s2_vtcr(&g, 5) & 0xff, (2u << 6) | 16); // SL0 2, T0SZ 16
	assert_true(s2_fmt_geom(&s2_fmt_arm64_4k, 32, &g));
	assert_int_equal(arm64_s2_vtcr(&g, 0) & 0xff, (0u << 6) | 32); // SL0 0, T0SZ 32
}

// Maps one page at `gpa` and descends by hand with the expected indexes.
static void check_indexes(const struct s2_fmt *f, unsigned ia, uint64_t gpa, const unsigned *idx)
{
	struct mmt t;

	mmt_init_caps(&t, f, ia, f->caps);
	const struct s2_geom *g = s2_vm_geom(t.vm);
	assert_int_equal(s2_map(t.vm, t.root, gpa, 4096, 0x123456000ull, S2_PROT_RWX, S2_MT_WB), 0);
	uint64_t table = s2_root_pa(t.root);
	for (int l = (int)g->root_level; l >= 0; l--) {
		const s2_pte_t *tab = (const s2_pte_t *)(uintptr_t)table;
		unsigned n = l == (int)g->root_level ? g->root_entries : 512;

		assert_int_equal(s2_index(g, gpa, (unsigned)l), idx[l]);
		for (unsigned i = 0; i < n; i++) // exactly one entry used per level
			assert_int_equal(f->is_present(tab[i]), i == idx[l]);
		if (l == 0) {
			assert_true(f->is_leaf(tab[idx[0]], 0));
			assert_int_equal(s2_pte_addr(f, tab[idx[0]]), 0x123456000ull);
		} else {
			assert_false(f->is_leaf(tab[idx[l]], (unsigned)l));
			table = s2_pte_addr(f, tab[idx[l]]);
		}
	}
	mmt_fini(&t);
}

static void test_index_math(void **state)
{
	// gpa = idx4 << 48 | idx3 << 39 | idx2 << 30 | idx1 << 21 | idx0 << 12
	unsigned e5[] = {7, 300, 5, 511, 200};
	uint64_t g5 =
	    (200ull << 48) | (511ull << 39) | (5ull << 30) | (300ull << 21) | (7ull << 12);
	check_indexes(&s2_fmt_ept5, 57, g5, e5);
	unsigned e4[] = {1, 2, 3, 257};
	uint64_t g4 = (257ull << 39) | (3ull << 30) | (2ull << 21) | (1ull << 12);
	check_indexes(&s2_fmt_ept4, 48, g4, e4);
	check_indexes(&s2_fmt_npt4, 48, g4, e4);
	check_indexes(&s2_fmt_arm64_4k, 48, g4, e4);
	// 40 bits: the root has 1024 entries over two concatenated pages.
	unsigned e40[] = {9, 8, 700};
	uint64_t g40 = (700ull << 30) | (8ull << 21) | (9ull << 12);
	check_indexes(&s2_fmt_arm64_4k, 40, g40, e40);
	// 32 bits: 2048 entries of 2 MiB at the root (four pages).
	unsigned e32[] = {17, 1500};
	check_indexes(&s2_fmt_arm64_4k, 32, (1500ull << 21) | (17ull << 12), e32);
	// 44 bits: arm level 0 start with 32 entries.
	unsigned e44[] = {1, 1, 1, 31};
	check_indexes(&s2_fmt_arm64_4k, 44, (31ull << 39) | (1ull << 30) | (1ull << 21) | 4096,
		      e44);
}

static void test_codecs(void **state)
{
	const struct s2_fmt *fmts[] = {&s2_fmt_ept4, &s2_fmt_ept5, &s2_fmt_npt4, &s2_fmt_arm64_4k};

	for (unsigned i = 0; i < 4; i++) {
		const struct s2_fmt *f = fmts[i];
		unsigned caps_set[] = {0, f->caps};

		// A bare page address (detached table), 0 and the frozen value are
		// non-present in every format.
		assert_false(f->is_present(0x12345000ull));
		assert_false(f->is_present(0));
		assert_false(f->is_present(f->frozen));
		assert_true(f->is_present(f->make_table(0x5000)));
		assert_false(f->is_leaf(f->make_table(0x5000), 1));
		assert_int_equal(s2_pte_addr(f, f->make_table(0x7000)), 0x7000);
		for (unsigned c = 0; c < 2; c++) {
			for (unsigned level = 0; level <= f->max_leaf_level; level++) {
				for (unsigned mt = 0; mt <= S2_MT_DEVICE; mt++) {
					unsigned prots[] = {S2_PROT_R, S2_PROT_RW, S2_PROT_RWX,
							    S2_PROT_R | S2_PROT_X};
					for (unsigned p = 0; p < 4; p++) {
						uint64_t pa = 0x40000000ull;
						s2_pte_t e = f->make_leaf(pa, level, prots[p], mt,
									  caps_set[c]);

						assert_true(f->is_present(e));
						assert_true(f->is_leaf(e, level));
						assert_int_equal(s2_pte_addr(f, e), pa);
						assert_int_equal(f->leaf_prot(e), prots[p]);
						assert_int_equal(f->leaf_memtype(e, caps_set[c]),
								 mt);
					}
				}
			}
		}
		if (f->caps & S2_CAP_MMIO_MARKER) {
			s2_pte_t m = f->make_mmio(0x5a5a5);

			assert_false(f->is_present(m));
			assert_true(f->is_mmio(m));
			assert_false(f->is_mmio(0));
			assert_false(f->is_mmio(f->frozen));
			assert_int_equal(f->mmio_gen(m), 0x5a5a5 & ((1u << f->mmio_gen_bits) - 1));
		}
	}
	// EPT: the marker is write-only (an EPT misconfiguration).
	assert_int_equal(s2_fmt_ept4.make_mmio(3) & 7, 2);
	// arm64: FWB changes the MemAttr encoding of write-back memory.
	assert_int_not_equal(s2_fmt_arm64_4k.make_leaf(0, 1, S2_PROT_R, S2_MT_WB, 0),
			     s2_fmt_arm64_4k.make_leaf(0, 1, S2_PROT_R, S2_MT_WB, S2_CAP_FWB));
	assert_int_equal((s2_fmt_arm64_4k.make_leaf(0, 1, S2_PROT_R, S2_MT_WB, 0) >> 2) & 0xf, 0xf);
	assert_int_equal((s2_fmt_arm64_4k.make_leaf(0, 0, S2_PROT_R, S2_MT_DEVICE, 0) >> 2) & 0xf,
			 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_geometry),
	    cmocka_unit_test(test_index_math),
	    cmocka_unit_test(test_codecs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
