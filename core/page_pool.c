// SPDX-License-Identifier: Apache-2.0
//
// See page_pool.h.
#include "core/page_pool.h"
#include "core/mem.h"

static void pool_lock(struct page_pool *p)
{
	while (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&p->lock, __ATOMIC_RELAXED))
			;
}

static void pool_unlock(struct page_pool *p)
{
	__atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE);
}

void page_pool_init(struct page_pool *p, struct region *r)
{
	*p = (struct page_pool){.region = r};
}

uint64_t page_pool_alloc(struct page_pool *p, unsigned npages, uint64_t align)
{
	uint64_t pa;

	if (!npages)
		return 0;
	pool_lock(p);
	if (npages == 1 && align <= REGION_PAGE_SIZE && p->free_list) {
		pa = p->free_list;
		p->free_list = *(uint64_t *)(uintptr_t)pa;
		memset((void *)(uintptr_t)pa, 0, REGION_PAGE_SIZE);
	} else {
		pa = region_alloc(p->region, npages,
				  align < REGION_PAGE_SIZE ? REGION_PAGE_SIZE : align);
	}
	if (pa) {
		p->live += npages;
		if (p->live > p->max)
			p->max = p->live;
	}
	pool_unlock(p);
	return pa;
}

void page_pool_free(struct page_pool *p, uint64_t pa, unsigned npages)
{
	pool_lock(p);
	for (unsigned i = 0; i < npages; i++) {
		uint64_t page = pa + (uint64_t)REGION_PAGE_SIZE * i;

		*(uint64_t *)(uintptr_t)page = p->free_list;
		p->free_list = page;
	}
	p->live -= npages;
	pool_unlock(p);
}
