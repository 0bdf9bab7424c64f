// SPDX-License-Identifier: Apache-2.0
//
// core/own: the frame ownership table. Every transition allowed and refused
// (a table), all-or-nothing requests, "needs memory" and exact node-page
// counts, every page back when a VM's frames are all reclaimed, hostile
// arguments, allocation failure at every site, and a differential test against
// a flat-array model over 10^5 random operations.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/own.h"
#include "tests/unit/own_src.h"

#define MB	     (1ull << 20)
#define RAM0	     (16 * MB) // pfn 0x1000..0x4fff
#define RAM0_SIZE    (64 * MB)
#define RAM1	     (1ull << 50) // another top-level entry
#define RAM1_SIZE    (4 * MB)
#define SLATF	     (32 * MB) // Slat's fixed region, inside RAM0
#define SLATF_SIZE   MB
#define PFN(pa)	     ((pa) >> OWN_FRAME_SHIFT)
#define F	     PFN(RAM0 + 8 * MB) // an ordinary frame (leaf-aligned)
#define NODES_1FRAME 4u			// L1, L2, L3 and a leaf

static const uint64_t ram[2][2] = {{RAM0, RAM0_SIZE}, {RAM1, RAM1_SIZE}};
static const uint64_t slatf[1][2] = {{SLATF, SLATF_SIZE}};

struct fx {
	struct own_src src;
	struct own_table t;
};

static void fx_init(struct fx *f, uint64_t budget)
{
	struct own_page_src ps;

	memset(f, 0, sizeof(*f));
	ps = own_src_of(&f->src);
	f->src.budget = budget;
	assert_int_equal(own_init(&f->t, &ps, ram, 2, slatf, 1), OWN_OK);
}

static void fx_fini(struct fx *f)
{
	own_destroy(&f->t);
	assert_int_equal(own_nodes(&f->t), 0);
	assert_int_equal(f->src.live, 0);
}

static void expect_state(struct own_table *t, uint64_t pfn, enum own_state s, uint32_t vm)
{
	enum own_state gs;
	uint32_t gv;

	assert_int_equal(own_get(t, pfn, &gs, &gv), OWN_OK);
	assert_int_equal(gs, s);
	assert_int_equal(gv, vm);
}

// ---- the transition table ---------------------------------------------------

enum init { I_P, I_S1, I_D1, I_S2, I_D2, I_SC, I_SF, I_OUT, I_COUNT };

static const struct {
	enum own_state s;
	uint32_t vm;
} init_state[I_COUNT] = {
    {OWN_PRIMARY, 0}, {OWN_SHARED, 1}, {OWN_DONATED, 1}, {OWN_SHARED, 2},
    {OWN_DONATED, 2}, {OWN_SLAT, 0},   {OWN_SLAT, 0},	 {OWN_PRIMARY, 0},
};

#define OK_TO(s, v)                                                                                \
	{                                                                                          \
		OWN_OK, s, v                                                                       \
	}
#define NO(e)                                                                                      \
	{                                                                                          \
		e, 0, 0                                                                            \
	}
static const struct {
	int rc;
	enum own_state s;
	uint32_t vm;
} expect[OWN_OP_COUNT][I_COUNT] = {
    [OWN_OP_SHARE] = {OK_TO(OWN_SHARED, 1), NO(OWN_E_ALREADY_SHARED), NO(OWN_E_NOT_OWNED),
		      NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), NO(OWN_E_SLAT), NO(OWN_E_SLAT),
		      NO(OWN_E_RANGE)},
    [OWN_OP_UNSHARE] = {NO(OWN_E_NOT_OWNED), OK_TO(OWN_PRIMARY, 0), NO(OWN_E_NOT_OWNED),
			NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), NO(OWN_E_SLAT), NO(OWN_E_SLAT),
			NO(OWN_E_RANGE)},
    [OWN_OP_DONATE] = {OK_TO(OWN_DONATED, 1), NO(OWN_E_ALREADY_SHARED), NO(OWN_E_NOT_OWNED),
		       NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), NO(OWN_E_SLAT), NO(OWN_E_SLAT),
		       NO(OWN_E_RANGE)},
    [OWN_OP_RECLAIM] = {NO(OWN_E_NOT_OWNED), NO(OWN_E_NOT_OWNED), OK_TO(OWN_PRIMARY, 0),
			NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), NO(OWN_E_SLAT), NO(OWN_E_SLAT),
			NO(OWN_E_RANGE)},
    [OWN_OP_CLAIM] = {OK_TO(OWN_SLAT, 0), NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM),
		      NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), NO(OWN_E_SLAT), NO(OWN_E_SLAT),
		      NO(OWN_E_RANGE)},
    [OWN_OP_RELEASE] = {NO(OWN_E_NOT_OWNED), NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM),
			NO(OWN_E_OTHER_VM), NO(OWN_E_OTHER_VM), OK_TO(OWN_PRIMARY, 0),
			NO(OWN_E_SLAT), NO(OWN_E_RANGE)},
};

static uint64_t init_frame(struct fx *f, enum init i)
{
	static const enum own_op setup_op[I_COUNT] = {OWN_OP_COUNT, OWN_OP_SHARE,  OWN_OP_DONATE,
						      OWN_OP_SHARE, OWN_OP_DONATE, OWN_OP_CLAIM,
						      OWN_OP_COUNT, OWN_OP_COUNT};

	if (i == I_SF)
		return PFN(SLATF);
	if (i == I_OUT)
		return PFN(RAM0) - 1;
	if (setup_op[i] != OWN_OP_COUNT)
		assert_int_equal(
		    own_list_op(&f->t, setup_op[i], init_state[i].vm, &(uint64_t){F}, 1, NULL),
		    OWN_OK);
	return F;
}

static void test_transition_table(void **state)
{
	for (unsigned op = 0; op < OWN_OP_COUNT; op++)
		for (unsigned i = 0; i < I_COUNT; i++) {
			struct fx f;
			uint32_t vm = op == OWN_OP_CLAIM || op == OWN_OP_RELEASE ? 0 : 1;
			uint64_t bad = ~0ull, pfn;
			int rc;

			fx_init(&f, 100);
			pfn = init_frame(&f, i);
			rc = own_list_op(&f.t, op, vm, &pfn, 1, &bad);
			if (rc != expect[op][i].rc)
				fail_msg("op %u from state %u: %d, expected %d", op, i, rc,
					 expect[op][i].rc);
			if (i == I_OUT) {
				fx_fini(&f);
				continue;
			}
			if (rc == OWN_OK)
				expect_state(&f.t, pfn, expect[op][i].s, expect[op][i].vm);
			else
				expect_state(&f.t, pfn, init_state[i].s, init_state[i].vm);
			assert_int_equal(bad, rc ? 0 : ~0ull);
			// Exact node count: a lone non-primary frame holds 4 pages, none else.
			enum own_state s;
			uint32_t v;

			own_get(&f.t, pfn, &s, &v);
			assert_int_equal(own_nodes(&f.t),
					 s == OWN_PRIMARY || i == I_SF ? 0 : NODES_1FRAME);
			assert_int_equal(f.src.live, own_nodes(&f.t));
			fx_fini(&f);
		}
}

// ---- all or nothing ---------------------------------------------------------

static void check_all_primary(struct own_table *t, uint64_t pfn, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		expect_state(t, pfn + i, OWN_PRIMARY, 0);
}

static void test_last_frame_bad_changes_nothing(void **state)
{
	struct fx f;
	uint64_t bad = 0, n = 2048, base = RAM0 + 8 * MB;
	uint64_t list[OWN_LIST_MAX];

	fx_init(&f, 1000);
	// The range's last frame is VM 2's.
	assert_int_equal(
	    own_list_op(&f.t, OWN_OP_DONATE, 2, &(uint64_t){PFN(base) + n - 1}, 1, NULL), OWN_OK);
	uint64_t nodes = own_nodes(&f.t);

	for (unsigned op = OWN_OP_SHARE; op <= OWN_OP_DONATE; op += 2) {
		assert_int_equal(own_range_op(&f.t, op, 1, base, n * OWN_FRAME_SIZE, &bad),
				 OWN_E_OTHER_VM);
		assert_int_equal(bad, base + (n - 1) * OWN_FRAME_SIZE);
		check_all_primary(&f.t, PFN(base), n - 1);
		assert_int_equal(own_nodes(&f.t), nodes);
		assert_int_equal(f.src.live, nodes);
	}
	// A list whose last frame is Slat's (fixed region), spread over two leaves
	// and the far RAM range (so that the first frames would need new nodes).
	for (unsigned i = 0; i < OWN_LIST_MAX - 1; i++)
		list[i] = i % 2 ? PFN(RAM1) + i : PFN(RAM0) + 3 * i;
	list[OWN_LIST_MAX - 1] = PFN(SLATF) + 7;
	assert_int_equal(own_list_op(&f.t, OWN_OP_SHARE, 1, list, OWN_LIST_MAX, &bad), OWN_E_SLAT);
	assert_int_equal(bad, OWN_LIST_MAX - 1);
	for (unsigned i = 0; i < OWN_LIST_MAX - 1; i++)
		expect_state(&f.t, list[i], OWN_PRIMARY, 0);
	assert_int_equal(own_nodes(&f.t), nodes);
	// And a list whose last frame is outside RAM.
	list[OWN_LIST_MAX - 1] = PFN(RAM1 + RAM1_SIZE);
	assert_int_equal(own_list_op(&f.t, OWN_OP_DONATE, 1, list, OWN_LIST_MAX, &bad),
			 OWN_E_RANGE);
	assert_int_equal(bad, OWN_LIST_MAX - 1);
	for (unsigned i = 0; i < OWN_LIST_MAX - 1; i++)
		expect_state(&f.t, list[i], OWN_PRIMARY, 0);
	assert_int_equal(own_nodes(&f.t), nodes);
	fx_fini(&f);
}

// ---- needs memory -----------------------------------------------------------

static void test_needs_memory_then_deposit(void **state)
{
	struct fx f;
	uint64_t base = RAM0 + 8 * MB; // leaf-aligned (1024 frames = 4 MiB)

	fx_init(&f, 0);
	for (unsigned have = 0; have < NODES_1FRAME; have++) {
		f.src.budget = have;
		assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, base, 4096, NULL),
				 OWN_E_NOMEM);
		expect_state(&f.t, PFN(base), OWN_PRIMARY, 0);
		assert_int_equal(own_nodes(&f.t), 0);
		assert_int_equal(f.src.live, 0);
		assert_int_equal(f.src.budget, have); // every page taken went back
	}
	f.src.budget = NODES_1FRAME; // the deposit
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, base, 4096, NULL), OWN_OK);
	assert_int_equal(own_nodes(&f.t), NODES_1FRAME);
	assert_int_equal(f.src.budget, 0);
	// The rest of that leaf needs nothing more; one frame beyond it needs a leaf.
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, base + 4096, 1023 * 4096, NULL),
			 OWN_OK);
	assert_int_equal(own_range_op(&f.t, OWN_OP_DONATE, 1, base + 4 * MB, 4096, NULL),
			 OWN_E_NOMEM);
	f.src.budget = 1;
	assert_int_equal(own_range_op(&f.t, OWN_OP_DONATE, 1, base + 4 * MB, 4096, NULL), OWN_OK);
	assert_int_equal(own_nodes(&f.t), NODES_1FRAME + 1);
	// 1 GiB of the far range is not RAM; its 4 MiB: one L1, L2, L3 and one leaf.
	f.src.budget = 3;
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 2, RAM1, RAM1_SIZE, NULL), OWN_E_NOMEM);
	assert_int_equal(f.src.budget, 3);
	f.src.budget = 4;
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 2, RAM1, RAM1_SIZE, NULL), OWN_OK);
	assert_int_equal(own_nodes(&f.t), 2 * NODES_1FRAME + 1);
	fx_fini(&f);
}

// ---- every page back ------------------------------------------------------

static void test_reclaim_all_returns_every_page(void **state)
{
	struct fx f;
	uint64_t list[OWN_LIST_MAX];

	fx_init(&f, 100000);
	// VM 1: 40 MiB shared, a donated list scattered over both ranges.
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, RAM0 + 17 * MB + 4096, 40 * MB, NULL),
			 OWN_OK);
	for (unsigned i = 0; i < OWN_LIST_MAX; i++)
		list[i] = i % 3 ? PFN(RAM1) + 2 * i : PFN(RAM0 + 60 * MB) + i;
	assert_int_equal(own_list_op(&f.t, OWN_OP_DONATE, 1, list, OWN_LIST_MAX, NULL), OWN_OK);
	uint64_t peak = own_nodes(&f.t);

	// 40 MiB not leaf-aligned: 11 leaves; 1 leaf at RAM0+60M; L1, L2, L3 of RAM0;
	// RAM1: L1, L2, L3 and 1 leaf.
	assert_int_equal(peak, 11 + 1 + 3 + 4);
	assert_int_equal(f.src.live, peak);
	assert_int_equal(own_list_op(&f.t, OWN_OP_RECLAIM, 1, list, OWN_LIST_MAX, NULL), OWN_OK);
	assert_int_equal(
	    own_range_op(&f.t, OWN_OP_UNSHARE, 1, RAM0 + 17 * MB + 4096, 40 * MB, NULL), OWN_OK);
	assert_int_equal(own_nodes(&f.t), 0);
	assert_int_equal(f.src.live, 0);
	assert_int_equal(f.src.budget, 100000);
	check_all_primary(&f.t, PFN(SLATF + SLATF_SIZE),
			  PFN(RAM0 + RAM0_SIZE - SLATF - SLATF_SIZE));
	check_all_primary(&f.t, PFN(RAM1), PFN(RAM1_SIZE));
}

// A frame listed twice acts once, also when its first occurrence empties (and
// frees) its leaf.
static void test_duplicates_in_a_list(void **state)
{
	struct fx f;
	uint64_t list[3] = {F, F + 1, F};

	fx_init(&f, 100);
	for (unsigned op = OWN_OP_SHARE; op <= OWN_OP_RECLAIM; op++) {
		bool to_vm = op == OWN_OP_SHARE || op == OWN_OP_DONATE;
		enum own_state st = op == OWN_OP_SHARE ? OWN_SHARED : OWN_DONATED;

		assert_int_equal(own_list_op(&f.t, op, 1, list, 3, NULL), OWN_OK);
		expect_state(&f.t, F, to_vm ? st : OWN_PRIMARY, to_vm);
		expect_state(&f.t, F + 1, to_vm ? st : OWN_PRIMARY, to_vm);
		assert_int_equal(own_nodes(&f.t), to_vm ? NODES_1FRAME : 0);
	}
	assert_int_equal(f.src.live, 0);
	fx_fini(&f);
}

// ---- hostile arguments ------------------------------------------------------

static void test_hostile_arguments(void **state)
{
	struct fx f;
	uint64_t bad = 12345;

	fx_init(&f, 1000);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, RAM0 + 1, 4096, &bad), OWN_E_ALIGN);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, RAM0, 4095, &bad), OWN_E_ALIGN);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, ~0xfffull, 8192, &bad), OWN_E_RANGE);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, RAM0, ~0xfffull, &bad), OWN_E_RANGE);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, 0, 1ull << 40, &bad), OWN_E_TOO_MANY);
	assert_int_equal(
	    own_range_op(&f.t, OWN_OP_SHARE, 1, RAM0, (OWN_RANGE_MAX + 1) * 4096, &bad),
	    OWN_E_TOO_MANY);
	assert_int_equal(bad, 12345); // argument errors name no frame
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 0, RAM0, 4096, NULL), OWN_E_BAD_VM);
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, OWN_VM_MAX + 1, RAM0, 4096, NULL),
			 OWN_E_BAD_VM);
	assert_int_equal(own_range_op(&f.t, OWN_OP_CLAIM, 1, RAM0, 4096, NULL), OWN_E_BAD_VM);
	assert_int_equal(own_range_op(&f.t, (enum own_op)OWN_OP_COUNT, 1, RAM0, 4096, NULL),
			 OWN_E_BAD_OP);
	assert_int_equal(own_range_op(&f.t, (enum own_op) - 1, 1, RAM0, 4096, NULL), OWN_E_BAD_OP);
	assert_int_equal(own_list_op(&f.t, OWN_OP_SHARE, 1, NULL, 1, NULL), OWN_E_RANGE);
	assert_int_equal(own_list_op(&f.t, OWN_OP_SHARE, 1, NULL, ~0ull, NULL), OWN_E_TOO_MANY);
	assert_int_equal(own_list_op(&f.t, OWN_OP_SHARE, 1, &(uint64_t){~0ull}, 1, &bad),
			 OWN_E_RANGE);
	assert_int_equal(bad, 0);
	assert_int_equal(own_list_op(&f.t, OWN_OP_SHARE, 1, &(uint64_t){1ull << 40}, 1, NULL),
			 OWN_E_RANGE);
	// A range that starts in RAM and runs past its end: the first frame outside.
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, RAM1 + RAM1_SIZE - 4096, 8192, &bad),
			 OWN_E_RANGE);
	assert_int_equal(bad, RAM1 + RAM1_SIZE);
	enum own_state s;
	uint32_t v;

	assert_int_equal(own_get(&f.t, 1ull << 40, &s, &v), OWN_E_RANGE);
	assert_int_equal(own_get(&f.t, ~0ull, &s, &v), OWN_E_RANGE);
	// Size 0 is an empty request.
	assert_int_equal(own_range_op(&f.t, OWN_OP_SHARE, 1, ~0xfffull, 0, NULL), OWN_OK);
	assert_int_equal(own_nodes(&f.t), 0);
	assert_int_equal(f.src.attempts, 0);
	// Bad init arguments.
	struct own_table t;
	struct own_page_src ps = own_src_of(&f.src);
	const uint64_t unal[1][2] = {{4097, 4096}}, wrap[1][2] = {{~0xfffull, 8192}},
		       big[1][2] = {{1ull << 52, 4096}}, empty[1][2] = {{0, 0}};

	assert_int_equal(own_init(&t, &ps, unal, 1, NULL, 0), OWN_E_ALIGN);
	assert_int_equal(own_init(&t, &ps, wrap, 1, NULL, 0), OWN_E_RANGE);
	assert_int_equal(own_init(&t, &ps, big, 1, NULL, 0), OWN_E_RANGE);
	assert_int_equal(own_init(&t, &ps, empty, 1, NULL, 0), OWN_E_RANGE);
	assert_int_equal(own_init(&t, &ps, ram, OWN_MAX_RANGES + 1, NULL, 0), OWN_E_TOO_MANY);
	assert_int_equal(own_init(&t, &ps, NULL, 1, NULL, 0), OWN_E_RANGE);
	fx_fini(&f);
}

// ---- allocation failure at every site -----------------------------------------

static void test_alloc_failure_every_site(void **state)
{
	uint64_t list[64];
	struct fx f;
	uint64_t need;

	// 64 frames over both RAM ranges, 3 leaves: 4 + 1 + 4 = 9 pages.
	for (unsigned i = 0; i < 64; i++)
		list[i] = i < 20 ? PFN(RAM0) + i : i < 40 ? PFN(RAM0 + 4 * MB) + i : PFN(RAM1) + i;
	fx_init(&f, 1000);
	assert_int_equal(own_list_op(&f.t, OWN_OP_DONATE, 3, list, 64, NULL), OWN_OK);
	need = own_nodes(&f.t);
	assert_int_equal(need, 9);
	fx_fini(&f);
	// With a frame of VM 3's on a third leaf of RAM0 already: 6 more pages.
	for (int64_t k = 0; k < 6; k++) {
		fx_init(&f, 1000);
		assert_int_equal(
		    own_list_op(&f.t, OWN_OP_SHARE, 3, &(uint64_t){PFN(RAM0 + 12 * MB)}, 1, NULL),
		    OWN_OK);
		f.src.attempts = 0;
		f.src.fail_at = k;
		assert_int_equal(own_list_op(&f.t, OWN_OP_DONATE, 3, list, 64, NULL), OWN_E_NOMEM);
		assert_int_equal(f.src.attempts, k + 1); // it stopped at the failing site
		for (unsigned i = 0; i < 64; i++)
			expect_state(&f.t, list[i], OWN_PRIMARY, 0);
		expect_state(&f.t, PFN(RAM0 + 12 * MB), OWN_SHARED, 3);
		assert_int_equal(own_nodes(&f.t), NODES_1FRAME);
		assert_int_equal(f.src.live, NODES_1FRAME);
		f.src.fail_at = -1;
		f.src.attempts = 0;
		assert_int_equal(own_list_op(&f.t, OWN_OP_DONATE, 3, list, 64, NULL), OWN_OK);
		assert_int_equal(f.src.attempts, 6);
		assert_int_equal(own_nodes(&f.t), 10);
		for (unsigned i = 0; i < 64; i++)
			expect_state(&f.t, list[i], OWN_DONATED, 3);
		fx_fini(&f);
	}
}

// ---- differential test against a flat array -----------------------------------

#define M_FRAMES0 (RAM0_SIZE / 4096)
#define M_FRAMES1 (RAM1_SIZE / 4096)
#define M_FRAMES  (M_FRAMES0 + M_FRAMES1)

struct model {
	uint8_t st[M_FRAMES];
	uint32_t vm[M_FRAMES];
};

static uint64_t m_pfn(unsigned i)
{
	return i < M_FRAMES0 ? PFN(RAM0) + i : PFN(RAM1) + (i - M_FRAMES0);
}

static int m_index(uint64_t pfn)
{
	if (pfn - PFN(RAM0) < M_FRAMES0)
		return (int)(pfn - PFN(RAM0));
	if (pfn - PFN(RAM1) < M_FRAMES1)
		return (int)(M_FRAMES0 + pfn - PFN(RAM1));
	return -1;
}

static int m_check(const struct model *m, uint64_t pfn, enum own_op op, uint32_t vm)
{
	static const uint8_t need[OWN_OP_COUNT] = {OWN_PRIMARY, OWN_SHARED,  OWN_PRIMARY,
						   OWN_DONATED, OWN_PRIMARY, OWN_SLAT};
	int i = m_index(pfn);

	if (i < 0)
		return OWN_E_RANGE;
	if (pfn - PFN(SLATF) < SLATF_SIZE / 4096)
		return OWN_E_SLAT;
	uint8_t s = m->st[i];
	uint32_t v = m->vm[i];
	bool needvm = need[op] == OWN_SHARED || need[op] == OWN_DONATED;

	if (s == need[op] && (!needvm || v == vm))
		return OWN_OK;
	if (s == OWN_SLAT)
		return OWN_E_SLAT;
	if (s != OWN_PRIMARY && v != vm)
		return OWN_E_OTHER_VM;
	if (s == OWN_SHARED && need[op] == OWN_PRIMARY)
		return OWN_E_ALREADY_SHARED;
	return OWN_E_NOT_OWNED;
}

// Node pages the tree must hold for the model's state: distinct leaves, L3,
// L2 and L1 nodes over every non-primary frame.
static uint64_t m_nodes(const struct model *m)
{
	uint64_t n = 0, last[4] = {~0ull, ~0ull, ~0ull, ~0ull};
	static const unsigned shift[4] = {37, 28, 19, 10};

	for (unsigned i = 0; i < M_FRAMES; i++) // frame order is pfn order
		if (m->st[i] && m_pfn(i) - PFN(SLATF) >= SLATF_SIZE / 4096) // fixed: no record
			for (unsigned k = 0; k < 4; k++)
				if (m_pfn(i) >> shift[k] != last[k]) {
					last[k] = m_pfn(i) >> shift[k];
					n++;
				}
	return n;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t rnd_pfn(void)
{
	switch (rnd() % 16) {
	case 0:
		return PFN(SLATF) + rnd() % 300; // around Slat's region
	case 1:
		return rnd(); // hostile
	case 2:
		return PFN(RAM1) + M_FRAMES1 - 4 + rnd() % 8; // the end of RAM
	default: // a small window so that frames collide
		return m_pfn((unsigned)(rnd() % 2 ? rnd() % 6000 : rnd() % M_FRAMES));
	}
}

static void model_compare_all(struct fx *f, const struct model *m)
{
	for (unsigned i = 0; i < M_FRAMES; i++) {
		enum own_state s;
		uint32_t v;

		assert_int_equal(own_get(&f->t, m_pfn(i), &s, &v), OWN_OK);
		if (s != m->st[i] || v != m->vm[i])
			fail_msg("frame %#llx: table %d/%u model %d/%u",
				 (unsigned long long)m_pfn(i), s, v, m->st[i], m->vm[i]);
	}
	assert_int_equal(own_nodes(&f->t), m_nodes(m));
}

// Gives every frame back one by one (the op each state needs), then checks that
// every node page went back and withdraws the pages: the tree churns.
static void model_sweep(struct fx *f, struct model *m)
{
	static const enum own_op back[4] = {OWN_OP_COUNT, OWN_OP_UNSHARE, OWN_OP_RECLAIM,
					    OWN_OP_RELEASE};

	for (unsigned i = 0; i < M_FRAMES; i++) {
		uint64_t pfn = m_pfn(i);

		if (!m->st[i] || pfn - PFN(SLATF) < SLATF_SIZE / 4096)
			continue;
		assert_int_equal(own_list_op(&f->t, back[m->st[i]], m->vm[i], &pfn, 1, NULL),
				 OWN_OK);
		m->st[i] = OWN_PRIMARY;
		m->vm[i] = 0;
	}
	assert_int_equal(own_nodes(&f->t), 0);
	assert_int_equal(f->src.live, 0);
	f->src.budget = 0;
}

static void test_random_differential(void **state)
{
	static struct model m;
	static uint64_t list[OWN_LIST_MAX];
	const char *env = getenv("OWN_SEED");
	struct fx f;
	unsigned ops = 100000, nomem = 0, ok = 0;

	rng_state = env ? strtoull(env, NULL, 0) : 0x5eed0f0a7ull;
	printf("own differential: seed %#llx, %u ops\n", (unsigned long long)rng_state, ops);
	memset(&m, 0, sizeof(m));
	for (unsigned i = 0; i < SLATF_SIZE / 4096; i++)
		m.st[m_index(PFN(SLATF) + i)] = OWN_SLAT;
	fx_init(&f, 0);
	for (unsigned it = 0; it < ops; it++) {
		enum own_op op = (enum own_op)(rnd() % OWN_OP_COUNT);
		uint32_t vm = op >= OWN_OP_CLAIM ? 0 : 1 + (uint32_t)(rnd() % 3);
		bool is_list = rnd() % 2;
		uint64_t n = is_list ? rnd() % 16 : rnd() % 4 ? rnd() % 8 : rnd() % 3000;
		uint64_t first = rnd_pfn() & ((1ull << 52) - 1), bad = ~0ull,
			 nodes0 = own_nodes(&f.t);
		int fx = m_index(first);

		if (fx >= 0 && m.st[fx] != OWN_PRIMARY && rnd() % 2) { // give it back: churn
			static const enum own_op back[4] = {OWN_OP_COUNT, OWN_OP_UNSHARE,
							    OWN_OP_RECLAIM, OWN_OP_RELEASE};

			op = back[m.st[fx]];
			vm = m.vm[fx];
		}
		int want = OWN_OK, rc;
		uint64_t want_bad = ~0ull;

		if (rnd() % 8 == 0)
			f.src.budget += rnd() % 3; // a deposit
		if (rnd() % 256 == 0)
			f.src.budget = 0; // a withdrawal
		if (is_list)
			for (uint64_t i = 0; i < n; i++)
				list[i] = i && rnd() % 4 == 0 ? list[rnd() % i] // a duplicate
					  : rnd() % 4	      ? first + rnd() % 2048
							      : rnd_pfn();
		for (uint64_t i = 0; i < n && want == OWN_OK; i++)
			if ((want = m_check(&m, is_list ? list[i] : first + i, op, vm)) != OWN_OK)
				want_bad = is_list ? i : (first + i) << 12;
		if (!is_list && n && first + n > 1ull << 40)
			want = OWN_E_RANGE, want_bad = ~0ull;
		uint64_t budget0 = f.src.budget;

		rc = is_list ? own_list_op(&f.t, op, vm, list, n, &bad)
			     : own_range_op(&f.t, op, vm, first << 12, n << 12, &bad);
		if (want == OWN_OK) {
			static struct model next;
			static const uint8_t to[OWN_OP_COUNT] = {OWN_SHARED,  OWN_PRIMARY,
								 OWN_DONATED, OWN_PRIMARY,
								 OWN_SLAT,    OWN_PRIMARY};

			next = m;
			for (uint64_t i = 0; i < n; i++) {
				int x = m_index(is_list ? list[i] : first + i);

				next.st[x] = to[op];
				next.vm[x] = to[op] == OWN_SHARED || to[op] == OWN_DONATED ? vm : 0;
			}
			uint64_t need = m_nodes(&next);

			if (need > nodes0 && need - nodes0 > budget0)
				want = OWN_E_NOMEM;
			else
				m = next;
		}
		if (rc != want && !(want_bad == ~0ull && want == OWN_E_RANGE && rc == OWN_E_RANGE))
			fail_msg("op %u: op %d vm %u n %llu: %d, expected %d", it, op, vm,
				 (unsigned long long)n, rc, want);
		if (want != OWN_OK && want != OWN_E_NOMEM && want_bad != ~0ull)
			assert_int_equal(bad, want_bad);
		if (rc == OWN_E_NOMEM)
			nomem++, assert_int_equal(own_nodes(&f.t), nodes0);
		ok += rc == OWN_OK;
		for (uint64_t i = 0; i < n && i < 64; i++) { // the frames it touched
			uint64_t pfn = is_list ? list[i] : first + i;
			int x = m_index(pfn);

			if (x >= 0)
				expect_state(&f.t, pfn, m.st[x], m.vm[x]);
		}
		assert_int_equal(f.src.live, own_nodes(&f.t));
		if (it % 5000 == 0)
			model_compare_all(&f, &m);
		if (it % 2000 == 1999)
			model_sweep(&f, &m);
	}
	model_compare_all(&f, &m);
	printf("own differential: %u ok, %u needs-memory, %llu node pages allocated, %llu at the "
	       "end\n",
	       ok, nomem, (unsigned long long)f.src.allocs, (unsigned long long)own_nodes(&f.t));
	assert_true(ok > ops / 10 && nomem > 500 && f.src.allocs > 1000); // every path, churn
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_transition_table),
	    cmocka_unit_test(test_last_frame_bad_changes_nothing),
	    cmocka_unit_test(test_needs_memory_then_deposit),
	    cmocka_unit_test(test_reclaim_all_returns_every_page),
	    cmocka_unit_test(test_duplicates_in_a_list),
	    cmocka_unit_test(test_hostile_arguments),
	    cmocka_unit_test(test_alloc_failure_every_site),
	    cmocka_unit_test(test_random_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
