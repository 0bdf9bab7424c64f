// SPDX-License-Identifier: Apache-2.0
//
// core/region: Slat's reserved-region allocator hands out aligned, zeroed,
// non-overlapping blocks, refuses what does not fit without taking anything,
// and rejects malformed regions.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/region.h"

#define PAGES 64

static uint8_t *backing(void)
{
	uint8_t *mem = aligned_alloc(1 << 16, PAGES * REGION_PAGE_SIZE);
	assert_non_null(mem);
	memset(mem, 0xa5, PAGES * REGION_PAGE_SIZE); // allocations must come back zeroed
	return mem;
}

static void test_init_rejects_bad_ranges(void **state)
{
	struct region r;

	assert_false(region_init(&r, 0x1000, 0));
	assert_false(region_init(&r, 0x1001, 0x1000));
	assert_false(region_init(&r, 0x1000, 0x1800));
	assert_false(region_init(&r, UINT64_MAX - 0xfff, 0x2000));
	assert_int_equal(r.size, 0);
	assert_true(region_init(&r, 0x200000, 0x400000));
	assert_int_equal(r.used, 0);
}

static void test_alloc_aligned_zeroed_disjoint(void **state)
{
	uint8_t *mem = backing();
	struct region r;
	uint64_t base = (uint64_t)(uintptr_t)mem;

	assert_true(region_init(&r, base, PAGES * REGION_PAGE_SIZE));
	assert_true(region_take_front(&r, 5000)); // rounds up to two pages
	assert_int_equal(r.used, 2 * REGION_PAGE_SIZE);

	uint64_t a = region_alloc(&r, 1, REGION_PAGE_SIZE);
	uint64_t b = region_alloc(&r, 2, 4 * REGION_PAGE_SIZE);
	assert_int_equal(a, base + 2 * REGION_PAGE_SIZE);
	assert_int_equal(b % (4 * REGION_PAGE_SIZE), 0);
	assert_true(b >= a + REGION_PAGE_SIZE);
	for (size_t i = 0; i < 2 * REGION_PAGE_SIZE; i++)
		assert_int_equal(((uint8_t *)(uintptr_t)b)[i], 0);
	assert_int_equal(((uint8_t *)(uintptr_t)a)[REGION_PAGE_SIZE - 1], 0);
	assert_int_equal(r.used, b - base + 2 * REGION_PAGE_SIZE);
	free(mem);
}

static void test_exhaustion_takes_nothing(void **state)
{
	uint8_t *mem = backing();
	struct region r;

	assert_true(region_init(&r, (uint64_t)(uintptr_t)mem, PAGES * REGION_PAGE_SIZE));
	assert_int_not_equal(region_alloc(&r, PAGES - 1, REGION_PAGE_SIZE), 0);
	uint64_t used = r.used;
	assert_int_equal(region_alloc(&r, 2, REGION_PAGE_SIZE), 0);
	assert_int_equal(region_alloc(&r, 0, REGION_PAGE_SIZE), 0);
	assert_int_equal(region_alloc(&r, 1, 3 * REGION_PAGE_SIZE), 0); // not a power of two
	assert_int_equal(region_alloc(&r, UINT64_MAX / 2, REGION_PAGE_SIZE), 0);
	assert_int_equal(r.used, used);
	assert_false(region_take_front(&r, 2 * REGION_PAGE_SIZE));
	assert_int_not_equal(region_alloc(&r, 1, REGION_PAGE_SIZE), 0); // the last page
	assert_int_equal(region_free_bytes(&r), 0);
	free(mem);
}

static void test_overlaps(void **state)
{
	struct region r;

	assert_true(region_init(&r, 0x10000, 0x4000));
	assert_true(region_overlaps(&r, 0x10000, 1));
	assert_true(region_overlaps(&r, 0x13fff, 1));
	assert_true(region_overlaps(&r, 0xf000, 0x1001));
	assert_false(region_overlaps(&r, 0xf000, 0x1000));
	assert_false(region_overlaps(&r, 0x14000, 0x1000));
	assert_false(region_overlaps(&r, 0x10000, 0));
	assert_true(region_overlaps(&r, 0x0, UINT64_MAX)); // wraps: clamped, still overlaps
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_rejects_bad_ranges),
	    cmocka_unit_test(test_alloc_aligned_zeroed_disjoint),
	    cmocka_unit_test(test_exhaustion_takes_nothing),
	    cmocka_unit_test(test_overlaps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
