// SPDX-License-Identifier: Apache-2.0
//
// The pages a firmware allocated for a loaded PE image (pure arithmetic, unit
// tested hosted: tests/unit/test_image_range.c). edk2's CoreLoadPeImage
// allocates SizeOfImage + SectionAlignment bytes and places the image at the
// first SectionAlignment boundary inside, so the allocation starts at most
// SectionAlignment - 4 KiB below ImageBase and ends at most
// page_up(SizeOfImage + SectionAlignment) above it. The memory-map descriptor
// that holds ImageBase (of the image's memory type) bounds both, so pages of
// another type are never included.
#ifndef SLAT_BOOT_IMAGE_RANGE_H
#define SLAT_BOOT_IMAGE_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#define IMAGE_RANGE_PAGE 4096ull

struct image_range {
	uint64_t base;
	uint64_t pages;
};

// False when the descriptor [d_start, d_start + d_pages pages) does not hold
// the image base or the result would be empty.
static inline bool image_range_of(uint64_t d_start, uint64_t d_pages, uint64_t image_base,
				  uint64_t image_size, uint64_t section_align,
				  struct image_range *out)
{
	const uint64_t page = IMAGE_RANGE_PAGE;
	uint64_t align = section_align > page ? section_align : page;
	uint64_t below = align - page;
	uint64_t span = (image_size + align + page - 1) & ~(page - 1);
	uint64_t d_end = d_start + d_pages * page;

	if (d_pages == 0 || image_base < d_start || image_base >= d_end ||
	    image_size > UINT64_MAX - align - page)
		return false;
	uint64_t lo = image_base - d_start > below ? image_base - below : d_start;
	uint64_t hi = d_end - image_base > span ? image_base + span : d_end;
	lo &= ~(page - 1);
	if (hi <= lo)
		return false;
	out->base = lo;
	out->pages = (hi - lo + page - 1) / page;
	return true;
}

#endif
