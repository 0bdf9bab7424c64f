// SPDX-License-Identifier: Apache-2.0
//
// Lock-light root management (design section 4).
//
// - The root list is read under the mmu lock (read or write); links change
//   only under roots_lock (I4.2), and a root header or table is freed only
//   through the VM's epoch (mm/defer.c), after a grace period that starts
//   after it was unlinked (I4.1).
// - Get-or-allocate runs under the mmu lock held for *read*: look, take the
//   roots lock, look again, allocate with two references (vCPU + MMU). The
//   `invalid` bit is written only under the write lock, so two valid roots of
//   one role never coexist (I4.3).
// - A reference is taken only while the count is non-zero; the last put is
//   legal only on an invalid root (I4.4): the MMU's own reference keeps a
//   valid root alive, and passes to the zapper at invalidation (I4.5).
#include "core/mem.h"
#include "mm/s2_internal.h"
#include "mm/s2_testhooks.h"

bool s2_root_tryget(struct s2_root *r)
{
	uint32_t v = __atomic_load_n(&r->refs, __ATOMIC_RELAXED);

	while (v) {
		if (__atomic_compare_exchange_n(&r->refs, &v, v + 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static bool role_eq(struct s2_role a, struct s2_role b)
{
	return a.as == b.as && a.kind == b.kind;
}

static struct s2_root *find_valid(struct s2_vm *vm, struct s2_role role)
{
	for (struct s2_root *r = __atomic_load_n(&vm->roots, __ATOMIC_ACQUIRE); r;
	     r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE)) {
		if (role_eq(r->role, role) && !__atomic_load_n(&r->invalid, __ATOMIC_ACQUIRE) &&
		    s2_root_tryget(r))
			return r;
	}
	return NULL;
}

static struct s2_root *root_alloc(struct s2_vm *vm, struct s2_role role)
{
	uint64_t hdr = s2_page_alloc(vm, 1, S2_PAGE_SIZE);
	uint64_t pages = vm->geom.root_pages;
	uint64_t pa;

	if (!hdr)
		return NULL;
	s2_tables_count_alloc(vm, 1); // the header, freed (and counted) with the root
	// Concatenated start tables must be aligned to their total size.
	pa = s2_page_alloc(vm, (unsigned)pages, pages * S2_PAGE_SIZE);
	if (!pa) {
		s2_page_free(vm, hdr, 1, false);
		return NULL;
	}
	s2_tables_count_alloc(vm, pages);
	struct s2_root *r = (struct s2_root *)(uintptr_t)hdr;
	r->role = role;
	r->pa = pa;
	r->refs = 2; // the caller's and the MMU's
	r->vm = vm;
	S2_STAT_ADD(vm, roots_alloc, 1);
	return r;
}

int s2_root_get(struct s2_vm *vm, struct s2_role role, struct s2_root **out)
{
	struct s2_root *r;

	if (!vm || !out || role.as >= S2_NR_AS)
		return S2_E_INVAL;
	enum s2_lock_mode mode =
	    __atomic_load_n(&vm->root_lock_write, __ATOMIC_RELAXED) ? S2_LOCK_WRITE : S2_LOCK_READ;
	s2_mmu_lock(vm, mode);
	r = find_valid(vm, role);
	if (!r) {
		s2_roots_lock(vm);
		r = find_valid(vm, role);
		if (!r) {
			r = root_alloc(vm, role);
			if (r) {
				r->next = vm->roots;
				// Publish only an initialised header (I4.6).
				__atomic_store_n(&vm->roots, r, __ATOMIC_RELEASE);
			}
		}
		s2_roots_unlock(vm);
	}
	s2_mmu_unlock(vm, mode);
	*out = r;
	return r ? 0 : S2_E_NOMEM;
}

// Frees a root whose last reference is gone: unlink, then let the tree and
// the header go after the grace period (readers may still be on the list).
static void root_free(struct s2_vm *vm, struct s2_root *root)
{
	s2_roots_lock(vm);
	for (struct s2_root **pp = &vm->roots; *pp; pp = &(*pp)->next) {
		if (*pp == root) {
			__atomic_store_n(pp, root->next, __ATOMIC_RELEASE);
			break;
		}
	}
	s2_roots_unlock(vm);
	// An invalid root has been zapped by its zapper; free what a racing
	// fault may have left (nothing reaches this root any more).
	s2_pte_t *t = s2_table_ptr(root->pa);
	for (unsigned i = 0; i < vm->geom.root_entries; i++) {
		s2_pte_t e = s2_pte_load(&t[i]);

		if (s2_is_table(vm, e, vm->geom.root_level)) {
			struct s2_walk w;

			s2_walk_begin(&w, vm, S2_WALK_LEAF | S2_WALK_TABLE_POST | S2_WALK_SKIP_CMO,
				      S2_LOCK_NONE);
			w.root_invalid = true;
			s2_walk_zap(&w, &(struct s2_walk_entry){.addr = 0,
								.level = vm->geom.root_level,
								.ptep = &t[i],
								.old = e});
			s2_walk_end(&w);
		}
	}
	S2_STAT_ADD(vm, roots_freed, 1);
	s2_defer_root(vm, root); // header and root pages, after the grace period
	s2_reclaim_bounded(vm);
}

// B3 baseline switch. Get and put read it once per call, so flipping it
// while vCPUs run is safe (each call locks and unlocks in one mode); the
// zapper drops the MMU's reference lock-light in both modes (it already
// holds the read lock).
void s2_vm_set_root_lock_write(struct s2_vm *vm, bool write)
{
	__atomic_store_n(&vm->root_lock_write, write, __ATOMIC_RELAXED);
}

void s2_root_put(struct s2_vm *vm, struct s2_root *root)
{
	if (!__atomic_load_n(&vm->root_lock_write, __ATOMIC_RELAXED)) {
		s2_root_drop(vm, root);
		return;
	}
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	s2_root_drop(vm, root);
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
}

void s2_root_drop(struct s2_vm *vm, struct s2_root *root)
{
	uint32_t old = __atomic_fetch_sub(&root->refs, 1, __ATOMIC_ACQ_REL);

	S2_ASSERT(old > 0);
	if (old != 1)
		return;
	// The MMU holds a reference on every valid root: the last one can only
	// drop on an invalid root (I4.4).
	S2_ASSERT(__atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE));
	if (!__atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE))
		return; // (assert hook returned: keep the root, leak rather than corrupt)
	root_free(vm, root);
}

uint64_t s2_root_pa(const struct s2_root *root)
{
	return root->pa;
}

bool s2_root_is_invalid(const struct s2_root *root)
{
	return __atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE);
}

void s2_roots_mark_invalid(struct s2_vm *vm)
{
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	for (struct s2_root *r = vm->roots; r; r = r->next) {
		if (!r->invalid) {
			__atomic_store_n(&r->scheduled, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&r->invalid, 1, __ATOMIC_RELEASE);
		}
	}
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
	// vCPUs drop invalid roots and load new ones before re-entering (I4.7).
	if (vm->be->kick_reload)
		vm->be->kick_reload(vm->be_ctx, vm);
}

// One pass of the invalid-root zapper: every present entry of exactly
// `level` goes (tables with their already-emptied subtree), leaves above it
// too. Runs under the read lock: entries change by CAS, a table is first
// frozen so that a racing fault retries instead of filling it.
static int zap_invalid_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind,
			     void *ctx)
{
	unsigned level = *(const unsigned *)ctx;

	if (kind == S2_VISIT_LEAF) {
		s2_walk_zap(w, e);
		return 0;
	}
	if (e->level != level)
		return 0; // descend
	// Invalid root: no flush. A failed CAS means someone else changed it.
	s2_walk_remove_table_shared(w, e);
	return S2_WALK_SKIP_CHILDREN;
}

static void zap_root_shared(struct s2_vm *vm, struct s2_root *r)
{
	unsigned passes[] = {0, 1, 2, vm->geom.root_level};

	for (unsigned p = 0; p < 4; p++) {
		struct s2_walk w;
		unsigned level = passes[p];

		if (p > 0 && passes[p] <= passes[p - 1])
			continue;
		s2_walk_begin(&w, vm,
			      S2_WALK_LEAF | S2_WALK_TABLE_PRE | S2_WALK_SHARED | S2_WALK_YIELDABLE,
			      S2_LOCK_READ);
		// Root-level pass: the walker visits root entries (min level).
		s2_walk_root(&w, r, 0, 1ull << vm->geom.ia_bits, level, zap_invalid_visit, &level);
		s2_walk_end(&w);
	}
}

void s2_roots_zap_invalid(struct s2_vm *vm)
{
	s2_mmu_lock(vm, S2_LOCK_READ);
	__atomic_fetch_add(&vm->zaps_in_flight, 1, __ATOMIC_ACQ_REL);
	for (struct s2_root *r = __atomic_load_n(&vm->roots, __ATOMIC_ACQUIRE); r;
	     r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE)) {
		// Claim the root: only one zapper per root; it keeps the MMU's
		// reference while zapping (I4.5) and drops it afterwards.
		if (!__atomic_exchange_n(&r->scheduled, 0, __ATOMIC_ACQ_REL))
			continue;
		zap_root_shared(vm, r);
		s2_root_drop(vm, r); // the MMU's reference: never under the baseline write lock
	}
	__atomic_fetch_sub(&vm->zaps_in_flight, 1, __ATOMIC_ACQ_REL);
	s2_mmu_unlock(vm, S2_LOCK_READ);
	s2_reclaim_bounded(vm); // what the zap freed, now that our section is closed
	// Return only once every zap started before ours is done.
	while (__atomic_load_n(&vm->zaps_in_flight, __ATOMIC_ACQUIRE)) {
		if (vm->be->cpu_relax)
			vm->be->cpu_relax(vm->be_ctx);
	}
}

void s2_roots_invalidate_all(struct s2_vm *vm)
{
	s2_roots_mark_invalid(vm);
	s2_roots_zap_invalid(vm);
}

// VM destroy: trees are already freed by the teardown; headers and root
// pages go now (no walker is left).
void s2_roots_destroy(struct s2_vm *vm)
{
	struct s2_root *r = vm->roots;

	while (r) {
		struct s2_root *next = r->next;

		s2_page_free(vm, r->pa, vm->geom.root_pages, false);
		s2_page_free(vm, (uint64_t)(uintptr_t)r, 1, false);
		r = next;
	}
	vm->roots = NULL;
}
