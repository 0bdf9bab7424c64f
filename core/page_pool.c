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

static void push(struct page_pool *p, unsigned n, uint64_t pa)
{
	*(uint64_t *)(uintptr_t)pa = p->free[n];
	p->free[n] = pa;
}

static uint64_t pop(struct page_pool *p, unsigned n)
{
	uint64_t pa = p->free[n];

	if (pa)
		p->free[n] = *(uint64_t *)(uintptr_t)pa;
	return pa;
}

// Frees pages [pa, pa + n pages) onto the lists, whole blocks where they fit.
static void give_back(struct page_pool *p, uint64_t pa, unsigned n)
{
	while (n) {
		unsigned k = n < PAGE_POOL_CLASSES ? n : PAGE_POOL_CLASSES;

		push(p, k, pa);
		pa += (uint64_t)k * REGION_PAGE_SIZE;
		n -= k;
	}
}

// `n` pages from freed blocks: a block of exactly n, else the smallest larger
// one, split (its tail stays free). 0 when none is free.
static uint64_t take_freed(struct page_pool *p, unsigned n)
{
	for (unsigned k = n; k <= PAGE_POOL_CLASSES; k++) {
		uint64_t pa = pop(p, k);

		if (!pa)
			continue;
		if (k > n)
			give_back(p, pa + (uint64_t)n * REGION_PAGE_SIZE, k - n);
		memset((void *)(uintptr_t)pa, 0, (uint64_t)n * REGION_PAGE_SIZE);
		return pa;
	}
	return 0;
}

uint64_t page_pool_alloc(struct page_pool *p, unsigned npages, uint64_t align)
{
	uint64_t pa = 0;

	if (!npages)
		return 0;
	pool_lock(p);
	if (npages <= PAGE_POOL_CLASSES && align <= REGION_PAGE_SIZE)
		pa = take_freed(p, npages);
	if (!pa)
		pa = region_alloc(p->region, npages,
				  align < REGION_PAGE_SIZE ? REGION_PAGE_SIZE : align);
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
	give_back(p, pa, npages);
	p->live -= npages;
	pool_unlock(p);
}
