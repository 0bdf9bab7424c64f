// SPDX-License-Identifier: Apache-2.0
//
// Slat's own memory: one physically contiguous region that the firmware gave
// Slat as reserved memory and that no VM ever maps. Everything Slat keeps after
// the OS boots lives here (its resident image, page tables, per-CPU stacks,
// logs). A region hands out page-aligned, zeroed blocks from its low end and
// never gives them back one by one: page tables that come and go are recycled
// by the mm/ allocator on top of it, not by the region.
//
// Addresses are physical; Slat runs identity-mapped, so they are also the
// addresses it dereferences.
#ifndef SLAT_CORE_REGION_H
#define SLAT_CORE_REGION_H

#include <stdbool.h>
#include <stdint.h>

#define REGION_PAGE_SIZE 4096u

struct region {
	uint64_t base; // page-aligned
	uint64_t size; // bytes, a multiple of REGION_PAGE_SIZE
	uint64_t used; // bytes handed out from base (kept page-aligned)
};

// Describes [base, base + size). Returns false (and leaves `r` empty) when the
// range is not page-aligned, empty, or wraps around.
bool region_init(struct region *r, uint64_t base, uint64_t size);

// Marks the first `bytes` (rounded up to a page) as taken, e.g. by the
// resident image copied there. Returns false when they do not fit.
bool region_take_front(struct region *r, uint64_t bytes);

// `pages` zeroed pages aligned to `align` bytes (a power of two >= one page).
// Returns their address, or 0 when the region cannot satisfy the request
// (nothing is taken then).
uint64_t region_alloc(struct region *r, uint64_t pages, uint64_t align);

// True when [addr, addr + len) overlaps the region.
bool region_overlaps(const struct region *r, uint64_t addr, uint64_t len);

static inline uint64_t region_free_bytes(const struct region *r)
{
	return r->size - r->used;
}

#endif
