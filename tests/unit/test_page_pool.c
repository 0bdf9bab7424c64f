// SPDX-License-Identifier: Apache-2.0
//
// core/page_pool: table pages for the arch back ends come zeroed, freed pages
// are reused (and zeroed again) before the region is touched, the live and
// high-water counts follow every call, and exhaustion changes nothing.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/page_pool.h"

#define PAGES 16

struct fixture {
	uint8_t *mem;
	struct region r;
	struct page_pool pool;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->mem = aligned_alloc(1 << 16, PAGES * REGION_PAGE_SIZE);
	memset(f->mem, 0xa5, PAGES * REGION_PAGE_SIZE);
	assert_true(region_init(&f->r, (uint64_t)(uintptr_t)f->mem, PAGES * REGION_PAGE_SIZE));
	page_pool_init(&f->pool, &f->r);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->mem);
	free(f);
	return 0;
}

static bool page_is_zero(uint64_t pa)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)pa;

	for (unsigned i = 0; i < REGION_PAGE_SIZE; i++)
		if (p[i])
			return false;
	return true;
}

static void test_freed_page_reused_zeroed(void **state)
{
	struct fixture *f = *state;
	uint64_t a = page_pool_alloc(&f->pool, 1, 4096), used;

	assert_true(a && page_is_zero(a));
	memset((void *)(uintptr_t)a, 0x5a, REGION_PAGE_SIZE);
	page_pool_free(&f->pool, a, 1);
	assert_int_equal(page_pool_live(&f->pool), 0);
	used = f->r.used;
	assert_int_equal(page_pool_alloc(&f->pool, 1, 4096), a); // from the free list
	assert_true(page_is_zero(a));
	assert_int_equal(f->r.used, used); // the region was not touched
}

static void test_counts_and_high_water(void **state)
{
	struct fixture *f = *state;
	uint64_t a = page_pool_alloc(&f->pool, 1, 4096);
	uint64_t b = page_pool_alloc(&f->pool, 2, 8192);

	assert_true(a && b);
	assert_int_equal(b % 8192, 0);
	assert_int_equal(page_pool_live(&f->pool), 3);
	page_pool_free(&f->pool, b, 2);
	assert_int_equal(page_pool_live(&f->pool), 1);
	assert_int_equal(f->pool.max, 3);
	// Both freed pages of the block come back one by one.
	uint64_t c = page_pool_alloc(&f->pool, 1, 4096), d = page_pool_alloc(&f->pool, 1, 4096);
	assert_true((c == b || c == b + 4096) && (d == b || d == b + 4096) && c != d);
}

static void test_exhaustion_changes_nothing(void **state)
{
	struct fixture *f = *state;
	unsigned got = 0;

	while (page_pool_alloc(&f->pool, 1, 4096))
		got++;
	assert_int_equal(got, PAGES);
	assert_int_equal(page_pool_alloc(&f->pool, 2, 4096), 0);
	assert_int_equal(page_pool_live(&f->pool), PAGES);
	assert_int_equal(page_pool_alloc(&f->pool, 0, 4096), 0);
}

// The shadow engine's pattern: 3-page objects made and freed for ever. The
// region holds PAGES pages; without block reuse the 6th round would fail.
static void test_blocks_reused_for_ever(void **state)
{
	struct fixture *f = *state;

	for (unsigned round = 0; round < 1000; round++) {
		uint64_t a = page_pool_alloc(&f->pool, 3, 4096);
		uint64_t b = page_pool_alloc(&f->pool, 1, 4096);

		assert_true(a && b);
		assert_true(page_is_zero(a) && page_is_zero(a + 4096) && page_is_zero(a + 8192));
		memset((void *)(uintptr_t)a, 0x5a, 3 * REGION_PAGE_SIZE);
		page_pool_free(&f->pool, a, 3);
		page_pool_free(&f->pool, b, 1);
	}
	assert_int_equal(f->r.used, 4 * REGION_PAGE_SIZE); // the first round's pages only
	assert_int_equal(page_pool_live(&f->pool), 0);
	assert_int_equal(f->pool.max, 4);
}

// A freed larger block serves a smaller request before the region does, and
// its tail stays free for the next one.
static void test_larger_block_split(void **state)
{
	struct fixture *f = *state;
	uint64_t a = page_pool_alloc(&f->pool, 5, 4096);

	assert_true(a);
	page_pool_free(&f->pool, a, 5);
	uint64_t used = f->r.used;
	uint64_t b = page_pool_alloc(&f->pool, 2, 4096);
	uint64_t c = page_pool_alloc(&f->pool, 3, 4096);
	assert_int_equal(b, a);
	assert_int_equal(c, a + 2 * REGION_PAGE_SIZE);
	assert_int_equal(f->r.used, used);
	assert_int_equal(page_pool_live(&f->pool), 5);
}

// Once the region is gone, freed pages are all that is left, and they serve.
static void test_freed_blocks_after_exhaustion(void **state)
{
	struct fixture *f = *state;
	uint64_t blk[PAGES / 4];

	for (unsigned i = 0; i < PAGES / 4; i++)
		assert_true((blk[i] = page_pool_alloc(&f->pool, 4, 4096)) != 0);
	assert_int_equal(page_pool_alloc(&f->pool, 1, 4096), 0);
	page_pool_free(&f->pool, blk[1], 4);
	assert_int_equal(page_pool_alloc(&f->pool, 4, 4096), blk[1]);
	assert_int_equal(page_pool_alloc(&f->pool, 4, 4096), 0);
	assert_int_equal(page_pool_live(&f->pool), PAGES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_freed_page_reused_zeroed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counts_and_high_water, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exhaustion_changes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blocks_reused_for_ever, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_larger_block_split, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_freed_blocks_after_exhaustion, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
