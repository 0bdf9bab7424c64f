// SPDX-License-Identifier: Apache-2.0
//
// boot/image_range.h: which pages the hand-off re-types (docs/boot-handoff.md).
// The range must cover edk2's whole allocation of the image and never reach
// past the memory-map descriptor that holds it.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "boot/image_range.h"

#define PG 4096ull

static void test_edk2_layout_4k_alignment(void **state)
{
	struct image_range r;
	// slat.efi: SizeOfImage 0x25000, SectionAlignment 4 KiB; edk2 allocated
	// 0x26000 at the image base, inside a larger LoaderCode descriptor.
	assert_true(image_range_of(0x3e300000, 0x100, 0x3e360000, 0x25000, 0x1000, &r));
	assert_int_equal(r.base, 0x3e360000);
	assert_int_equal(r.pages, 0x26);
}

static void test_bounded_by_descriptor(void **state)
{
	struct image_range r;
	// A descriptor exactly the image (a firmware that allocates SizeOfImage).
	assert_true(image_range_of(0x7c415000, 0x19, 0x7c415000, 0x19000, 0x1000, &r));
	assert_int_equal(r.base, 0x7c415000);
	assert_int_equal(r.pages, 0x19);
}

static void test_large_section_alignment(void **state)
{
	struct image_range r;
	// 64 KiB alignment: the allocation may start up to 60 KiB below the image.
	assert_true(image_range_of(0x40000000, 0x1000, 0x40100000, 0x20000, 0x10000, &r));
	assert_int_equal(r.base, 0x40100000 - 0xf000);
	assert_int_equal(r.base + r.pages * PG, 0x40100000 + 0x30000);
	// ... but never below the descriptor.
	assert_true(image_range_of(0x400fc000, 0x100, 0x40100000, 0x20000, 0x10000, &r));
	assert_int_equal(r.base, 0x400fc000);
}

static void test_refuses_what_does_not_hold_the_image(void **state)
{
	struct image_range r = {0, 0};
	assert_false(image_range_of(0x1000, 4, 0x9000, 0x1000, 0x1000, &r)); // after it
	assert_false(image_range_of(0x9000, 4, 0x1000, 0x1000, 0x1000, &r)); // before it
	assert_false(image_range_of(0x1000, 0, 0x1000, 0x1000, 0x1000, &r)); // empty
	assert_false(image_range_of(0, 1, 0, UINT64_MAX - 100, 0x1000, &r)); // overflow
	assert_int_equal(r.pages, 0);
}

static void test_image_near_zero_does_not_wrap(void **state)
{
	struct image_range r;
	assert_true(image_range_of(0, 0x40, 0x2000, 0x3000, 0x10000, &r));
	assert_int_equal(r.base, 0);
	assert_int_equal(r.pages, (0x2000 + 0x13000) / PG); // up to image + size + alignment
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_edk2_layout_4k_alignment),
	    cmocka_unit_test(test_bounded_by_descriptor),
	    cmocka_unit_test(test_large_section_alignment),
	    cmocka_unit_test(test_refuses_what_does_not_hold_the_image),
	    cmocka_unit_test(test_image_near_zero_does_not_wrap),
	};
	return cmocka_run_group_tests_name("image_range", tests, NULL, NULL);
}
