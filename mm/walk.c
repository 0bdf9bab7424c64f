// SPDX-License-Identifier: Apache-2.0
//
// The one walker of the SLAT engine. It visits [lo, hi) of a tree, owns the
// yield protocol (flush pending zaps, drop the lock, let others run, retake
// it, restart from the root at the saved address), re-reads each entry before
// descending into it, sequences break-before-make and batches invalidations:
// every zap only widens the pending range; s2_walk_end() issues one
// invalidation for the whole operation, then frees the emptied tables (I1.2,
// I3.2: a table page is freed only after the invalidation that made it
// unreachable).
#include "mm/s2_internal.h"

#define WALK_RESTART 2

// A range invalidation is used up to this many pages; beyond, one context
// invalidation is cheaper.
#define S2_RANGE_INVAL_MAX_PAGES 512

void s2_walk_begin(struct s2_walk *w, struct s2_vm *vm, unsigned flags, enum s2_lock_mode lock)
{
	*w = (struct s2_walk){.vm = vm, .flags = flags, .lock = lock};
}

void s2_walk_note_inval(struct s2_walk *w, uint64_t addr, uint64_t size)
{
	if (w->root_invalid || (w->flags & S2_WALK_SKIP_INVAL))
		return; // invalid roots: a vCPU flushes when it loads a new root
	if (!w->need_flush) {
		w->fl_lo = addr;
		w->fl_hi = addr + size;
		w->need_flush = true;
		return;
	}
	if (addr < w->fl_lo)
		w->fl_lo = addr;
	if (addr + size > w->fl_hi)
		w->fl_hi = addr + size;
}

// An emptied table is linked through its entry 0: a page-aligned address is
// a non-present value in every format, so a hardware walker that still holds
// the old path reads "not present" until the invalidation.
// The list ends with the format's frozen value (not 0), so that a racing CAS
// that expects an empty entry fails on a queued table.
static void s2_walk_queue_free(struct s2_walk *w, uint64_t table_pa)
{
	s2_pte_store(s2_table_ptr(table_pa), w->free_head ? w->free_head : w->vm->fmt->frozen);
	w->free_head = table_pa;
}

static void issue_inval(struct s2_vm *vm, uint64_t lo, uint64_t hi)
{
	const struct s2_backend *be = vm->be;
	uint64_t pages = (hi - lo) >> S2_PAGE_SHIFT;

	if ((vm->caps & S2_CAP_RANGE_INVAL) && be->inval_range &&
	    pages <= S2_RANGE_INVAL_MAX_PAGES) {
		be->inval_range(vm->be_ctx, vm, lo, hi - lo);
		S2_STAT_ADD(vm, inval_range, 1);
		S2_STAT_ADD(vm, inval_range_pages, pages);
	} else {
		be->inval_context(vm->be_ctx, vm);
		S2_STAT_ADD(vm, inval_context, 1);
	}
}

void s2_walk_flush(struct s2_walk *w)
{
	if (w->need_flush) {
		issue_inval(w->vm, w->fl_lo, w->fl_hi);
		w->need_flush = false;
	}
	while (w->free_head) {
		uint64_t pa = w->free_head;

		w->free_head = s2_pte_load(s2_table_ptr(pa));
		if (w->free_head == w->vm->fmt->frozen)
			w->free_head = 0;
		s2_page_free(w->vm, pa, 1, true);
	}
}

// Keeps the largest number of entries a yieldable walk handled between two
// yield checks (or before its end): the bound the yield protocol promises.
static void record_since_check(struct s2_walk *w)
{
	struct s2_vm *vm = w->vm;
	uint64_t seen = __atomic_load_n(&vm->stats.max_entries_between_checks, __ATOMIC_RELAXED);

	while (w->since_check > seen &&
	       !__atomic_compare_exchange_n(&vm->stats.max_entries_between_checks, &seen,
					    w->since_check, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	w->since_check = 0;
}

void s2_walk_end(struct s2_walk *w)
{
	s2_walk_flush(w);
	if (w->flags & S2_WALK_YIELDABLE)
		record_since_check(w);
	S2_STAT_ADD(w->vm, leaves_zapped, w->zapped_leaves);
	S2_STAT_ADD(w->vm, tables_zapped, w->zapped_tables);
	w->zapped_leaves = w->zapped_tables = 0;
}

// CMO policy: only a live unmap, only without FWB, only cacheable memory.
static void leaf_cmo(struct s2_walk *w, s2_pte_t old, unsigned level)
{
	struct s2_vm *vm = w->vm;

	if ((w->flags & S2_WALK_SKIP_CMO) || (vm->caps & S2_CAP_FWB) || !vm->be->cmo_clean_inval)
		return;
	if (vm->fmt->leaf_memtype(old, vm->caps) != S2_MT_WB)
		return;
	vm->be->cmo_clean_inval(vm->be_ctx, s2_pte_addr(vm->fmt, old), s2_level_size(level));
	S2_STAT_ADD(vm, cmo_calls, 1);
	S2_STAT_ADD(vm, cmo_bytes, s2_level_size(level));
}

// Empties a subtree that is already unreachable from the root (its parent
// entry was replaced): leaves get the CMO policy, every table page is queued
// for freeing after the flush. Entries are cleared so a stale hardware walk
// reads "not present".
//
// Under the read lock (SHARED) a racing fault may still hold a pointer into
// the subtree: each entry is exchanged with the frozen value instead, so the
// fault's CAS fails and it retries from the root.
//
// Every entry emptied here counts toward the entries between yield checks:
// no check can run inside a detached subtree, so the callers keep subtrees
// small (the invalid-root zapper empties lower levels first, slot zaps and
// reclaims remove only tables already emptied), and the count shows it.
static void zap_detached(struct s2_walk *w, uint64_t table_pa, unsigned level)
{
	s2_pte_t *t = s2_table_ptr(table_pa);
	bool shared = w->flags & S2_WALK_SHARED;

	for (unsigned i = 0; i < S2_PTES; i++) {
		s2_pte_t e = shared
				 ? __atomic_exchange_n(&t[i], w->vm->fmt->frozen, __ATOMIC_ACQ_REL)
				 : s2_pte_load(&t[i]);

		if (!w->vm->fmt->is_present(e))
			continue;
		w->since_check++;
		if (s2_is_table(w->vm, e, level)) {
			zap_detached(w, s2_pte_addr(w->vm->fmt, e), level - 1);
		} else {
			leaf_cmo(w, e, level);
			w->zapped_leaves++;
		}
		if (!shared)
			s2_pte_store(&t[i], 0);
	}
	w->zapped_tables++;
	s2_walk_queue_free(w, table_pa);
}

void s2_walk_zap(struct s2_walk *w, const struct s2_walk_entry *e)
{
	struct s2_vm *vm = w->vm;
	s2_pte_t old = e->old;

	if (w->flags & S2_WALK_SHARED) {
		// Others may change the entry: take it only if it is still `old`.
		if (!__atomic_compare_exchange_n(e->ptep, &old, 0, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			return;
	} else {
		s2_pte_store(e->ptep, 0);
	}
	if (!vm->fmt->is_present(old))
		return; // a marker or frozen value: nothing cached by hardware
	s2_walk_note_inval(w, e->addr, s2_level_size(e->level));
	if (s2_is_table(vm, old, e->level)) {
		zap_detached(w, s2_pte_addr(vm->fmt, old), e->level - 1);
	} else {
		leaf_cmo(w, old, e->level);
		w->zapped_leaves++;
	}
}

// Break-before-make is needed (on formats that ask for it) when a valid entry
// changes its output address, its size (leaf <-> table) or its memory type;
// a permission-only change may be written in place.
static bool bbm_needed(const struct s2_vm *vm, s2_pte_t old, s2_pte_t new_pte, unsigned level)
{
	const struct s2_fmt *f = vm->fmt;

	if (!(vm->caps & S2_CAP_BBM))
		return false;
	if (f->is_leaf(old, level) != f->is_leaf(new_pte, level) ||
	    s2_pte_addr(f, old) != s2_pte_addr(f, new_pte))
		return true;
	return f->is_leaf(old, level) &&
	       f->leaf_memtype(old, vm->caps) != f->leaf_memtype(new_pte, vm->caps);
}

// Removes a table entry and its subtree under the read lock: CAS the entry
// to the frozen value (a racing fault that sees it retries), invalidate if
// the root is live, empty the subtree, then publish the normal non-present
// value. The pages are freed after the flush, through the deferred free.
bool s2_walk_remove_table_shared(struct s2_walk *w, const struct s2_walk_entry *e)
{
	struct s2_vm *vm = w->vm;
	s2_pte_t old = e->old;

	if (!__atomic_compare_exchange_n(e->ptep, &old, vm->fmt->frozen, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return false;
	if (!w->root_invalid && !(w->flags & S2_WALK_SKIP_INVAL)) {
		s2_walk_note_inval(w, e->addr, s2_level_size(e->level));
		s2_walk_flush(w);
	}
	zap_detached(w, s2_pte_addr(vm->fmt, e->old), e->level - 1);
	s2_pte_store(e->ptep, 0);
	return true;
}

// Replaces a live entry. A valid->valid change on a format that needs
// break-before-make writes an invalid entry, invalidates it, and only then
// writes the new one (I3.4). Other changes of a present entry are covered by
// the operation's one batched invalidation.
void s2_walk_replace(struct s2_walk *w, const struct s2_walk_entry *e, s2_pte_t new_pte)
{
	struct s2_vm *vm = w->vm;
	s2_pte_t old = e->old;
	bool was_present = vm->fmt->is_present(old);
	uint64_t size = s2_level_size(e->level);

	if (was_present && vm->fmt->is_present(new_pte) && bbm_needed(vm, old, new_pte, e->level) &&
	    !w->root_invalid && !(w->flags & S2_WALK_SKIP_INVAL)) {
		s2_pte_store(e->ptep, 0);
		issue_inval(vm, e->addr, e->addr + size);
		S2_STAT_ADD(vm, bbm, 1);
	} else if (was_present) {
		s2_walk_note_inval(w, e->addr, size);
	}
	if (was_present && s2_is_table(vm, old, e->level))
		zap_detached(w, s2_pte_addr(vm->fmt, old), e->level - 1); // collapse
	else if (was_present && !vm->fmt->is_present(new_pte))
		leaf_cmo(w, old, e->level);
	s2_pte_store(e->ptep, new_pte);
}

// Yields on a resched request or when another CPU waits for the mmu lock,
// only after forward progress (so a walk always ends): pending zaps are
// flushed first (I1.2), the epoch section is left while the lock is dropped
// (deferred frees may complete then), and the walk restarts from the root.
static bool maybe_yield(struct s2_walk *w)
{
	struct s2_vm *vm = w->vm;
	const struct s2_backend *be = vm->be;

	S2_STAT_ADD(vm, yield_checks, 1);
	record_since_check(w);
	if (!w->progress)
		return false;
	if (!(be->need_resched && be->need_resched(vm->be_ctx)) &&
	    !(w->lock != S2_LOCK_NONE && mm_rwlock_should_yield(&vm->mmu_lock)))
		return false;
	s2_walk_flush(w);
	if (be->yield)
		be->yield(vm->be_ctx);
	if (w->lock == S2_LOCK_NONE) {
		__atomic_fetch_add(&vm->yields_nolock, 1, __ATOMIC_RELAXED);
	} else {
		s2_read_exit(vm);
		s2_reclaim(vm);
		if (w->lock == S2_LOCK_READ)
			mm_rwlock_yield_read(&vm->mmu_lock); // counts the yield
		else
			mm_rwlock_yield_write(&vm->mmu_lock);
		s2_read_enter(vm);
	}
	w->progress = false;
	return true;
}

static int walk_table(struct s2_walk *w, uint64_t table_pa, unsigned level, uint64_t base)
{
	struct s2_vm *vm = w->vm;
	s2_pte_t *t = s2_table_ptr(table_pa);
	unsigned shift = s2_level_shift(level);
	unsigned n = level == vm->geom.root_level ? vm->geom.root_entries : S2_PTES;
	unsigned i = (unsigned)((w->addr - base) >> shift);

	for (; i < n; i++) {
		uint64_t ea = base + ((uint64_t)i << shift);
		struct s2_walk_entry e = {.addr = ea, .level = level, .ptep = &t[i]};
		int r = 0;

		if (ea >= w->hi)
			break;
		if ((w->flags & S2_WALK_YIELDABLE) && ++w->since_check >= S2_YIELD_EVERY &&
		    maybe_yield(w))
			return WALK_RESTART;
		e.old = s2_pte_load(&t[i]);
		if (e.old == vm->fmt->frozen)
			goto next; // being removed by someone else
		if (s2_is_table(vm, e.old, level)) {
			if (w->flags & S2_WALK_TABLE_PRE) {
				r = w->fn(w, &e, S2_VISIT_TABLE_PRE, w->ctx);
				if (r < 0)
					return r;
				if (r == S2_WALK_SKIP_CHILDREN)
					goto next;
			}
		} else if ((vm->fmt->is_leaf(e.old, level) && (w->flags & S2_WALK_LEAF)) ||
			   (!vm->fmt->is_present(e.old) && (w->flags & S2_WALK_NONPRESENT))) {
			r = w->fn(w, &e, S2_VISIT_LEAF, w->ctx);
			if (r < 0)
				return r;
			if (r == S2_WALK_SKIP_CHILDREN)
				goto next;
		}
		// Re-read: the visitor (or another CPU) may have changed the entry.
		e.old = s2_pte_load(&t[i]);
		if (level > w->min_level && s2_is_table(vm, e.old, level)) {
			r = walk_table(w, s2_pte_addr(vm->fmt, e.old), level - 1, ea);
			if (r)
				return r;
			if (w->flags & S2_WALK_TABLE_POST) {
				e.old = s2_pte_load(&t[i]);
				if (s2_is_table(vm, e.old, level)) {
					r = w->fn(w, &e, S2_VISIT_TABLE_POST, w->ctx);
					if (r < 0)
						return r;
				}
			}
		}
	next:
		if (ea + (1ull << shift) > w->addr) {
			w->addr = ea + (1ull << shift);
			w->progress = true;
		}
	}
	return 0;
}

int s2_walk_table(struct s2_walk *w, uint64_t table_pa, unsigned level, uint64_t base, uint64_t lo,
		  uint64_t hi, unsigned min_level, s2_visit_fn fn, void *ctx)
{
	int r;

	w->fn = fn;
	w->ctx = ctx;
	w->min_level = min_level;
	w->addr = lo > base ? lo : base;
	w->hi = hi;
	do {
		r = walk_table(w, table_pa, level, base);
	} while (r == WALK_RESTART && w->addr < w->hi);
	return r == WALK_RESTART ? 0 : r;
}

int s2_walk_root(struct s2_walk *w, struct s2_root *root, uint64_t lo, uint64_t hi,
		 unsigned min_level, s2_visit_fn fn, void *ctx)
{
	uint64_t top = 1ull << w->vm->geom.ia_bits;
	int r;

	if (hi > top)
		hi = top;
	if (lo >= hi)
		return 0;
	w->root = root;
	w->fn = fn;
	w->ctx = ctx;
	w->min_level = min_level;
	w->addr = lo;
	w->hi = hi;
	do {
		// Restart from the root at the saved address after a yield.
		w->root_invalid = __atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE);
		r = walk_table(w, root->pa, w->vm->geom.root_level, 0);
		if (r == WALK_RESTART)
			S2_STAT_ADD(w->vm, restarts, 1);
	} while (r == WALK_RESTART && w->addr < w->hi);
	w->root = NULL;
	return r == WALK_RESTART ? 0 : r;
}

int s2_walk(struct s2_vm *vm, struct s2_root *root, uint64_t lo, uint64_t hi, unsigned min_level,
	    unsigned flags, s2_visit_fn fn, void *ctx)
{
	struct s2_walk w;
	int r;

	s2_walk_begin(&w, vm, flags, flags & S2_WALK_SHARED ? S2_LOCK_READ : S2_LOCK_WRITE);
	r = s2_walk_root(&w, root, lo, hi, min_level, fn, ctx);
	s2_walk_end(&w);
	return r;
}
