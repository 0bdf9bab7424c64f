// SPDX-License-Identifier: Apache-2.0
//
// Second-level table pages for the mm/ engine's arch back ends: zeroed 4 KiB
// pages carved from Slat's region (core/region.h) and recycled, with the live
// and high-water counts the exit summary prints. A spinlock makes it safe
// from every CPU; the region itself never takes pages back.
//
// Recycling keeps what was freed usable for every later request, whatever
// its size: freed single pages go on one list and freed blocks of 2 to
// PAGE_POOL_CLASSES contiguous pages on a list per size. A request is served
// from the list of its size, then by splitting a larger freed block (the
// remainder stays free), and only then from the region. So a steady
// workload of multi-page objects (the shadow engine's 3-page reverse maps)
// runs on the same pages for ever instead of draining the region.
#ifndef SLAT_CORE_PAGE_POOL_H
#define SLAT_CORE_PAGE_POOL_H

#include <stdint.h>

#include "core/region.h"

#define PAGE_POOL_CLASSES 8 // largest block (in pages) kept whole when freed

struct page_pool {
	struct region *region;
	// free[n]: blocks of n contiguous free pages (free[1]: single pages),
	// each linked through its first word; 0 ends a list.
	uint64_t free[PAGE_POOL_CLASSES + 1];
	uint64_t live; // pages handed out and not yet freed
	uint64_t max;  // high-water mark of `live`
	int lock;
};

void page_pool_init(struct page_pool *p, struct region *r);

// `npages` zeroed contiguous pages aligned to `align` bytes. Requests of at
// most PAGE_POOL_CLASSES pages with page alignment are served from freed
// pages first; 0 when neither they nor the region can (nothing changes then).
uint64_t page_pool_alloc(struct page_pool *p, unsigned npages, uint64_t align);

// Gives back `npages` pages starting at `pa` (any that page_pool_alloc returned).
void page_pool_free(struct page_pool *p, uint64_t pa, unsigned npages);

static inline uint64_t page_pool_live(const struct page_pool *p)
{
	return __atomic_load_n(&p->live, __ATOMIC_RELAXED);
}

#endif
