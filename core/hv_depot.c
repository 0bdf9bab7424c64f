// SPDX-License-Identifier: Apache-2.0
//
// The deposit pool (core/hv_internal.h): pages the primary gave Slat, handed
// out one at a time for VM records, SLAT tables, frame lists and ownership
// nodes. A page is zeroed when it is handed out (and by WITHDRAW, before it
// goes back), never when it is freed: a free page may hold a destroyed VM's
// data, which only Slat can see.
#include "core/hv_internal.h"
#include "core/mem.h"

void hv_depot_init(struct hv_depot *d)
{
	memset(d, 0, sizeof(*d));
	mm_spin_init(&d->lock);
}

static void push_locked(struct hv_depot *d, uint64_t pa)
{
	*(uint64_t *)(uintptr_t)pa = d->free_list;
	d->free_list = pa;
	d->nfree++;
}

uint64_t hv_depot_alloc(struct hv_depot *d)
{
	mm_spin_lock(&d->lock);
	uint64_t pa = d->free_list;
	if (pa) {
		d->free_list = *(uint64_t *)(uintptr_t)pa;
		d->nfree--;
	}
	mm_spin_unlock(&d->lock);
	if (pa)
		memset((void *)(uintptr_t)pa, 0, HV_PAGE);
	return pa;
}

uint64_t hv_depot_nfree(struct hv_depot *d)
{
	mm_spin_lock(&d->lock);
	uint64_t n = d->nfree;
	mm_spin_unlock(&d->lock);
	return n;
}

void hv_depot_free(struct hv_depot *d, uint64_t pa)
{
	mm_spin_lock(&d->lock);
	push_locked(d, pa);
	mm_spin_unlock(&d->lock);
}

void hv_depot_add(struct hv_depot *d, uint64_t pa, uint64_t n)
{
	mm_spin_lock(&d->lock);
	for (uint64_t i = n; i-- > 0;) // the lowest page ends up first
		push_locked(d, pa + i * HV_PAGE);
	mm_spin_unlock(&d->lock);
}

uint64_t hv_depot_remove_range(struct hv_depot *d, uint64_t pa, uint64_t n)
{
	uint64_t removed = 0, end = pa + n * HV_PAGE;

	mm_spin_lock(&d->lock);
	uint64_t *link = &d->free_list;
	while (*link) {
		uint64_t p = *link;
		if (p >= pa && p < end) {
			*link = *(uint64_t *)(uintptr_t)p;
			*(uint64_t *)(uintptr_t)p = 0;
			d->nfree--;
			removed++;
		} else {
			link = (uint64_t *)(uintptr_t)p;
		}
	}
	mm_spin_unlock(&d->lock);
	return removed;
}
