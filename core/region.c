// SPDX-License-Identifier: Apache-2.0
//
// Bump allocation over Slat's reserved region (see region.h).
#include "core/region.h"

#include "core/mem.h"

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

bool region_init(struct region *r, uint64_t base, uint64_t size)
{
	*r = (struct region){0};
	if (!size || (base | size) % REGION_PAGE_SIZE || base + size < base)
		return false;
	*r = (struct region){.base = base, .size = size};
	return true;
}

bool region_take_front(struct region *r, uint64_t bytes)
{
	uint64_t rounded = (bytes + REGION_PAGE_SIZE - 1) & ~(uint64_t)(REGION_PAGE_SIZE - 1);

	if (rounded < bytes || rounded > r->size - r->used)
		return false;
	r->used += rounded;
	return true;
}

uint64_t region_alloc(struct region *r, uint64_t pages, uint64_t align)
{
	if (!pages || pages > r->size / REGION_PAGE_SIZE || !is_pow2(align) ||
	    align < REGION_PAGE_SIZE)
		return 0;
	uint64_t start = (r->base + r->used + align - 1) & ~(align - 1);
	uint64_t bytes = pages * REGION_PAGE_SIZE;

	if (start < r->base + r->used || start - r->base > r->size ||
	    bytes > r->size - (start - r->base))
		return 0;
	r->used = start - r->base + bytes;
	memset((void *)(uintptr_t)start, 0, bytes);
	return start;
}

bool region_overlaps(const struct region *r, uint64_t addr, uint64_t len)
{
	if (!r->size || !len)
		return false;
	uint64_t end = addr + len;
	if (end < addr)
		end = UINT64_MAX;
	return addr < r->base + r->size && end > r->base;
}
