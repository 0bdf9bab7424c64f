// SPDX-License-Identifier: Apache-2.0
//
// Nested churn: an L1 hypervisor boots and destroys L2 guests for 200 cycles
// (tests/unit/shadow_sim.c, scaled down from benchmark B5). With recursive
// reclaim the used count and the longest hash chain stay flat; with it
// switched off the same simulation leaks orphaned shadow pages every cycle.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "shadow_sim.h"

#define CYCLES 200

// 1 GiB L1, 4 L2 guests x 4 MiB alive at once: per guest a root, a level-2,
// a level-1 and two level-0 shadow pages.
static struct shsim_config base_cfg(bool recursive, enum shsim_teardown td)
{
	return (struct shsim_config){
	    .l1_pages = 1ull << 18,
	    .contexts = 4,
	    .l2_pages = 1024,
	    .batch = 512,
	    .non_recursive = !recursive,
	    .teardown = td,
	};
}

static void flat_case(enum shsim_teardown td)
{
	struct shsim_config cfg = base_cfg(true, td);
	struct shsim *s = shsim_create(&cfg);
	struct shsim_cycle c0 = {0}, c;
	uint64_t chain_max = 0;

	for (unsigned i = 0; i < CYCLES; i++) {
		assert_int_equal(shsim_cycle(s, &c), 0);
		if (i == 0)
			c0 = c;
		assert_int_equal(c.used_peak, 5 * cfg.contexts);
		assert_int_equal(c.used_peak, c0.used_peak);
		assert_int_equal(c.used_end, 0);
		assert_int_equal(c.chain_end, 0);
		assert_int_equal(c.orphans_end, 0);
		assert_int_equal(c.zapped, 5 * cfg.contexts);
		if (c.chain_peak > chain_max)
			chain_max = c.chain_peak;
		if (i % 50 == 49)
			assert_int_equal(sh_check(shsim_mmu(s)), 0);
	}
	// 20 pages in 4096 buckets: a chain of 3 is already unlikely; a leak
	// would make it grow with the cycles.
	assert_true(chain_max <= 3);
	printf("flat (%s): used peak %llu, longest chain <= %llu over %d cycles\n",
	       td == SHSIM_TEARDOWN_WRITES ? "4K writes" : "drop", (unsigned long long)c0.used_peak,
	       (unsigned long long)chain_max, CYCLES);
	assert_int_equal(shsim_destroy(s), 0);
}

static void test_churn_flat_bottom_up_writes(void **state)
{
	flat_case(SHSIM_TEARDOWN_WRITES);
}

static void test_churn_flat_drop(void **state)
{
	flat_case(SHSIM_TEARDOWN_DROP);
}

// Without recursive reclaim each destroyed guest leaves its four non-root
// shadow pages behind (orphans, or children of orphans), in the hash and on
// the active list, until L1 reuses their pages; the slot-0 delete at the end
// takes them all.
static void leak_case(enum shsim_teardown td)
{
	struct shsim_config cfg = base_cfg(false, td);
	struct shsim *s = shsim_create(&cfg);
	struct shsim_cycle c, first = {0};
	uint64_t prev = 0;

	for (unsigned i = 0; i < CYCLES; i++) {
		assert_int_equal(shsim_cycle(s, &c), 0);
		if (i == 0)
			first = c;
		// Before L1's page allocator wraps (about 60 cycles) no leaked
		// page is reused: exactly 4 per guest per cycle.
		if (i < 50)
			assert_int_equal(c.used_end, 4ull * cfg.contexts * (i + 1));
		assert_true(c.used_end >= prev || i >= 50);
		prev = c.used_end;
	}
	assert_true(c.used_end > 50 * first.used_end);
	assert_true(c.chain_end > first.chain_end);
	assert_true(c.orphans_end > 0);
	assert_int_equal(sh_check(shsim_mmu(s)), 0);
	printf("leak (%s): used after cycle 1 %llu, after %d %llu; longest chain %llu -> %llu\n",
	       td == SHSIM_TEARDOWN_WRITES ? "4K writes" : "drop",
	       (unsigned long long)first.used_end, CYCLES, (unsigned long long)c.used_end,
	       (unsigned long long)first.chain_end, (unsigned long long)c.chain_end);

	// The final slot-0 delete zaps every SP shadowing an L1 table (I1.5).
	assert_int_equal(shsim_delete_slot0(s), 0);
	struct sh_stats st;
	sh_stats(shsim_mmu(s), &st);
	assert_int_equal(st.used, 0);
	assert_int_equal(st.rmap_entries, 0);
	assert_int_equal(st.slot_zaps, c.used_end); // one by one: no recursion
	assert_int_equal(shsim_destroy(s), 0);
}

static void test_churn_leaks_without_recursion_writes(void **state)
{
	leak_case(SHSIM_TEARDOWN_WRITES);
}

static void test_churn_leaks_without_recursion_drop(void **state)
{
	leak_case(SHSIM_TEARDOWN_DROP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_churn_flat_bottom_up_writes),
	    cmocka_unit_test(test_churn_flat_drop),
	    cmocka_unit_test(test_churn_leaks_without_recursion_writes),
	    cmocka_unit_test(test_churn_leaks_without_recursion_drop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
