// SPDX-License-Identifier: Apache-2.0
//
// core/plan: plan_fill_gaps() adds memory only where the firmware's memory
// map says nothing, keeps the list sorted, non-overlapping and merged, and
// fails cleanly when the list is full.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/plan.h"

#define N PLAN_MEM_NORMAL
#define D PLAN_MEM_DEVICE

static struct slat_plan plan;

static void set(unsigned n, const struct plan_range *r)
{
	memset(&plan, 0, sizeof(plan));
	if (n)
		memcpy(plan.ranges, r, n * sizeof(*r));
	plan.n_ranges = n;
}

static void expect(unsigned n, const struct plan_range *r)
{
	assert_int_equal(plan.n_ranges, n);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(plan.ranges[i].base, r[i].base);
		assert_int_equal(plan.ranges[i].size, r[i].size);
		assert_int_equal(plan.ranges[i].kind, r[i].kind);
	}
}

static void test_fills_only_gaps(void **state)
{
	// Firmware flash [0, 64M) is missing from the map, varstore [64M, 128M) is
	// device, RAM from 1G: filling [0, 128M) as normal adds only [0, 64M).
	const struct plan_range in[] = {{0x4000000, 0x4000000, D}, {0x40000000, 0x40000000, N}};
	const struct plan_range out[] = {
	    {0, 0x4000000, N}, {0x4000000, 0x4000000, D}, {0x40000000, 0x40000000, N}};
	set(2, in);
	assert_true(plan_fill_gaps(&plan, 0, 0x8000000, N));
	expect(3, out);
}

static void test_merges_both_neighbours(void **state)
{
	const struct plan_range in[] = {
	    {0x1000, 0x1000, N}, {0x3000, 0x1000, N}, {0x5000, 0x1000, D}};
	const struct plan_range out[] = {{0x1000, 0x4000, N}, {0x5000, 0x1000, D}};
	set(3, in);
	// Fills 0x2000 (joining both neighbours into one) and 0x4000 (joining that).
	assert_true(plan_fill_gaps(&plan, 0x1000, 0x4000, N));
	expect(2, out);
}

static void test_spans_several_gaps(void **state)
{
	const struct plan_range in[] = {{0x2000, 0x1000, D}, {0x5000, 0x1000, D}};
	const struct plan_range out[] = {{0x0, 0x2000, N},
					 {0x2000, 0x1000, D},
					 {0x3000, 0x2000, N},
					 {0x5000, 0x1000, D},
					 {0x6000, 0x2000, N}};
	set(2, in);
	assert_true(plan_fill_gaps(&plan, 0, 0x8000, N));
	expect(5, out);
	// Again: nothing left to fill, nothing changes.
	assert_true(plan_fill_gaps(&plan, 0, 0x8000, N));
	expect(5, out);
}

static void test_empty_plan_and_tail(void **state)
{
	const struct plan_range out[] = {{0x10000, 0x1000, D}};
	set(0, NULL);
	assert_true(plan_fill_gaps(&plan, 0x10000, 0x1000, D));
	expect(1, out);
	assert_true(plan_fill_gaps(&plan, 0x10000, 0, N)); // empty: no change
	expect(1, out);
}

static void test_full_list_fails(void **state)
{
	memset(&plan, 0, sizeof(plan));
	for (unsigned i = 0; i < PLAN_MAX_RANGES; i++)
		plan.ranges[i] = (struct plan_range){0x2000ull * i, 0x1000, D};
	plan.n_ranges = PLAN_MAX_RANGES;
	assert_false(plan_fill_gaps(&plan, 0x1000, 0x1000, N)); // a gap, but no slot
	assert_int_equal(plan.n_ranges, PLAN_MAX_RANGES);
	assert_int_equal(plan.ranges[1].base, 0x2000);
	// A gap that merges into a neighbour of the same kind needs no slot.
	assert_true(plan_fill_gaps(&plan, 0x1000, 0x1000, D));
	assert_int_equal(plan.n_ranges, PLAN_MAX_RANGES - 1);
	assert_int_equal(plan.ranges[0].size, 0x3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fills_only_gaps),
	    cmocka_unit_test(test_merges_both_neighbours),
	    cmocka_unit_test(test_spans_several_gaps),
	    cmocka_unit_test(test_empty_plan_and_tail),
	    cmocka_unit_test(test_full_list_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
