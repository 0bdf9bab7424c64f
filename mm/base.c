// SPDX-License-Identifier: Apache-2.0
//
// Base layer of the SLAT engine: the ground every topic file stands on and
// that calls no topic file (docs/mm.md, "Layers"): the page source (backend
// pages, table accounting, deferred frees through mm/defer.c), the
// prepare/commit page cache, and the mmu and roots locks (each mmu lock
// section is also an epoch read section).
#include "core/mem.h"
#include "mm/s2_internal.h"

uint64_t s2_page_alloc(struct s2_vm *vm, unsigned npages, uint64_t align)
{
	return vm->be->page_alloc(vm->be_ctx, npages, align);
}

// `deferred`: the pages may still be read by a walker (mm/defer.c); they go
// one by one through the VM's grace period.
void s2_page_free(struct s2_vm *vm, uint64_t pa, unsigned npages, bool deferred)
{
	if (deferred) {
		for (unsigned i = 0; i < npages; i++)
			s2_defer_page(vm, pa + (uint64_t)i * S2_PAGE_SIZE);
		S2_STAT_ADD(vm, tables_deferred, npages);
	} else {
		vm->be->page_free(vm->be_ctx, pa, npages);
	}
	s2_tables_count_freed(vm, npages);
}

uint64_t s2_table_alloc(struct s2_vm *vm)
{
	uint64_t pa = s2_page_alloc(vm, 1, S2_PAGE_SIZE);

	if (pa)
		s2_tables_count_alloc(vm, 1);
	return pa;
}

int s2_cache_topup(struct s2_vm *vm, struct s2_cache *c, uint64_t n)
{
	while (c->n < n) {
		uint64_t pa = s2_page_alloc(vm, 1, S2_PAGE_SIZE);

		if (!pa)
			return S2_E_NOMEM;
		*s2_table_ptr(pa) = c->head;
		c->head = pa;
		c->n++;
	}
	return 0;
}

uint64_t s2_cache_take(struct s2_vm *vm, struct s2_cache *c)
{
	uint64_t pa = c->head;

	// Prepare counted every page the commit takes: running dry is a bug.
	if (!pa)
		return 0;
	c->head = *s2_table_ptr(pa);
	*s2_table_ptr(pa) = 0;
	c->n--;
	return pa;
}

void s2_cache_put(struct s2_cache *c, uint64_t pa)
{
	*s2_table_ptr(pa) = c->head;
	c->head = pa;
	c->n++;
}

void s2_cache_release(struct s2_vm *vm, struct s2_cache *c)
{
	while (c->head) {
		uint64_t pa = s2_cache_take(vm, c);

		vm->be->page_free(vm->be_ctx, pa, 1); // never a table: not counted
	}
}

void s2_mmu_lock(struct s2_vm *vm, enum s2_lock_mode m)
{
	if (m == S2_LOCK_NONE)
		return;
	if (m == S2_LOCK_READ)
		mm_rwlock_read_lock(&vm->mmu_lock);
	else
		mm_rwlock_write_lock(&vm->mmu_lock);
	s2_read_enter(vm); // after the lock: never wait for it inside a section
}

void s2_mmu_unlock(struct s2_vm *vm, enum s2_lock_mode m)
{
	if (m == S2_LOCK_NONE)
		return;
	s2_read_exit(vm);
	if (m == S2_LOCK_READ) {
		mm_rwlock_read_unlock(&vm->mmu_lock);
	} else {
		mm_rwlock_write_unlock(&vm->mmu_lock);
		s2_reclaim_bounded(vm); // writers free; fault paths and root loads do not poll
	}
}

void s2_roots_lock(struct s2_vm *vm)
{
	mm_spin_lock(&vm->roots_lock);
}

void s2_roots_unlock(struct s2_vm *vm)
{
	mm_spin_unlock(&vm->roots_lock);
}
