// SPDX-License-Identifier: Apache-2.0
//
// Deferred frees of the SLAT engine: the one grace-period mechanism for table
// pages and root headers (I4.1), over mm/sync.h's epochs.
//
// - Readers: every mmu lock section (read *and* write: s2_mmu_lock enters the
//   epoch after taking the lock), s2_translate, and lockless readers that use
//   s2_read_enter/exit. Each runs on its CPU slot (be->cpu_index: the physical
//   CPU index in slat.efi, a per-thread slot hosted).
// - A table page is queued only after it was unlinked and after the
//   invalidation that made it unreachable for hardware walkers; it waits in
//   the staging list, then in a limbo slot handed to mm_epoch_defer(), whose
//   grace period begins after the hand-over, hence after the unlink.
// - Root headers carry their own epoch node (struct s2_root.free_node).
// - Nothing here allocates: the staging and limbo lists are linked through
//   word 0 of the pages themselves (a page address or the frozen value:
//   both read "not present", so a walker that still holds the page is safe),
//   and a full set of limbo slots only makes the staging list wait longer.
// - Nothing waits except s2_defer_drain(), which runs outside any section.
#include "mm/s2_internal.h"

uint32_t s2_cpu(struct s2_vm *vm)
{
	unsigned c = vm->be->cpu_index ? vm->be->cpu_index(vm->be_ctx) : 0;

	if (c >= vm->ncpus) {
		S2_ASSERT(c < vm->ncpus); // the backend's slot is out of the VM's range
		return 0;
	}
	return c;
}

void s2_read_enter(struct s2_vm *vm)
{
	mm_epoch_enter(&vm->epoch, s2_cpu(vm));
}

void s2_read_exit(struct s2_vm *vm)
{
	mm_epoch_exit(&vm->epoch, s2_cpu(vm));
}

void s2_defer_init(struct s2_vm *vm, struct mm_epoch_cpu *cpus, unsigned ncpus)
{
	vm->ncpus = ncpus;
	mm_epoch_init(&vm->epoch, cpus, ncpus);
	mm_spin_init(&vm->defer_lock);
	for (unsigned i = 0; i < S2_LIMBO_SLOTS; i++)
		vm->limbo[i].vm = vm;
}

void s2_defer_page(struct s2_vm *vm, uint64_t pa)
{
	mm_spin_lock(&vm->defer_lock);
	s2_pte_store(s2_table_ptr(pa), vm->staged_pages ? vm->staged_head : vm->fmt->frozen);
	vm->staged_head = pa;
	__atomic_store_n(&vm->staged_pages, vm->staged_pages + 1, __ATOMIC_RELAXED);
	mm_spin_unlock(&vm->defer_lock);
	__atomic_fetch_add(&vm->defer_pending, 1, __ATOMIC_RELAXED);
}

// Epoch callback: the grace period that began after the hand-over is over.
static void limbo_free(void *obj)
{
	struct s2_limbo *l = obj;
	struct s2_vm *vm = l->vm;
	uint64_t pa = l->head, n = l->pages;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t next = s2_pte_load(s2_table_ptr(pa));

		vm->be->page_free(vm->be_ctx, pa, 1);
		pa = next;
	}
	__atomic_fetch_sub(&vm->defer_pending, n, __ATOMIC_RELAXED);
	__atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE); // the slot may be reused
}

// Hands the staging list to a free limbo slot (none free: it waits).
static void seal(struct s2_vm *vm)
{
	struct s2_limbo *l = NULL;

	if (!__atomic_load_n(&vm->staged_pages, __ATOMIC_RELAXED))
		return;
	mm_spin_lock(&vm->defer_lock);
	for (unsigned i = 0; i < S2_LIMBO_SLOTS && vm->staged_pages; i++) {
		if (!__atomic_load_n(&vm->limbo[i].busy, __ATOMIC_ACQUIRE)) {
			l = &vm->limbo[i];
			l->head = vm->staged_head;
			l->pages = vm->staged_pages;
			__atomic_store_n(&l->busy, 1, __ATOMIC_RELAXED);
			vm->staged_head = 0;
			__atomic_store_n(&vm->staged_pages, 0, __ATOMIC_RELAXED);
		}
	}
	mm_spin_unlock(&vm->defer_lock);
	if (l)
		mm_epoch_defer(&vm->epoch, &l->node, limbo_free, l);
}

static void root_free_cb(void *obj)
{
	struct s2_root *r = obj;
	struct s2_vm *vm = r->vm;
	uint64_t pages = vm->geom.root_pages + 1;

	vm->be->page_free(vm->be_ctx, r->pa, vm->geom.root_pages);
	vm->be->page_free(vm->be_ctx, (uint64_t)(uintptr_t)r, 1); // the node lives here
	__atomic_fetch_sub(&vm->defer_pending, pages, __ATOMIC_RELAXED);
}

void s2_defer_root(struct s2_vm *vm, struct s2_root *root)
{
	__atomic_fetch_add(&vm->defer_pending, vm->geom.root_pages + 1, __ATOMIC_RELAXED);
	s2_tables_count_freed(vm, vm->geom.root_pages + 1);
	S2_STAT_ADD(vm, tables_deferred, vm->geom.root_pages + 1);
	mm_epoch_defer(&vm->epoch, &root->free_node, root_free_cb, root);
}

uint64_t s2_reclaim(struct s2_vm *vm)
{
	if (!__atomic_load_n(&vm->defer_pending, __ATOMIC_RELAXED))
		return 0;
	mm_epoch_poll(&vm->epoch); // frees limbo slots whose grace period ended
	seal(vm);
	mm_epoch_poll(&vm->epoch); // ends the new grace period if no reader holds it
	return __atomic_load_n(&vm->defer_pending, __ATOMIC_RELAXED);
}

// mm_epoch_poll() starts a new grace period at every call, so under constant
// read traffic (vCPUs faulting) it may keep finding a reader and pages pile up.
// Past this many waiting pages, a caller outside any read section waits for
// grace periods instead (bounded memory; see docs/mm.md).
#define S2_DEFER_WAIT_PAGES 4096

void s2_reclaim_bounded(struct s2_vm *vm)
{
	for (unsigned i = 0; i < 2 && s2_reclaim(vm) > S2_DEFER_WAIT_PAGES; i++) {
		if (mm_epoch_in_read(&vm->epoch, s2_cpu(vm)))
			return; // never wait for our own section
		seal(vm);
		mm_epoch_barrier(&vm->epoch);
	}
}

void s2_defer_drain(struct s2_vm *vm)
{
	while (__atomic_load_n(&vm->defer_pending, __ATOMIC_RELAXED)) {
		seal(vm);
		mm_epoch_barrier(&vm->epoch);
	}
}
