// SPDX-License-Identifier: Apache-2.0
//
// Second-level table pages for the mm/ engine's arch back ends: zeroed 4 KiB
// pages carved from Slat's region (core/region.h), recycled through a free
// list linked by each free page's first word, with the live and high-water
// counts the exit summary prints. A spinlock makes it safe from every CPU;
// the region itself never takes pages back.
#ifndef SLAT_CORE_PAGE_POOL_H
#define SLAT_CORE_PAGE_POOL_H

#include <stdint.h>

#include "core/region.h"

struct page_pool {
	struct region *region;
	uint64_t free_list; // physical address of the first free page, 0: none
	uint64_t live;	    // pages handed out and not yet freed
	uint64_t max;	    // high-water mark of `live`
	int lock;
};

void page_pool_init(struct page_pool *p, struct region *r);

// `npages` zeroed pages aligned to `align` bytes; single pages come from the
// free list first. 0 when the region is exhausted (nothing changes then).
uint64_t page_pool_alloc(struct page_pool *p, unsigned npages, uint64_t align);

// Gives back `npages` pages starting at `pa` (any that page_pool_alloc returned).
void page_pool_free(struct page_pool *p, uint64_t pa, unsigned npages);

static inline uint64_t page_pool_live(const struct page_pool *p)
{
	return __atomic_load_n(&p->live, __ATOMIC_RELAXED);
}

#endif
