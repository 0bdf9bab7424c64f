// SPDX-License-Identifier: Apache-2.0
//
// Memslots: per address space, two slot sets (active, inactive) over shared
// slot records, and a VM-wide generation (bit 63 while an update is in
// progress). Each set indexes its records in two AVL trees (mm/slot_tree.h):
// by gpa (lookup, overlap) and by id. Every record carries one node per set
// and per tree, so a change is applied to one set in O(log n) without a copy.
//
// Invariants (slots_lock held by every writer):
//  - between updates both sets hold the same records; the inactive set has
//    no readers and is the only one a writer changes;
//  - a record reachable from the active set is never written: a move or flag
//    change installs a new record, and a record goes back to the free list
//    only once neither set reaches it and both sets were drained since;
//  - every change is "apply to the inactive set, swap, drain the readers of
//    the old active set, apply the same change to it" (apply()), so readers
//    see the old or the new set, never a half-changed one.
//
// Update flow, for delete, move and flag changes:
//  1. replace the record by an INVALID copy (apply), generation =
//     (gen + 1) | IN_PROGRESS before it: from now on no fault can map the
//     slot (it sees no slot, and caches no MMIO marker while in progress);
//  2. zap the old range in every root, valid and invalid (slot mode), or
//     invalidate and zap all roots (zap-all mode); one flush; shadow pages
//     that shadow guest tables in the slot go through the shadow hook;
//  3. replace the INVALID copy by the final record (none for a delete), and
//     only then generation = (gen & ~IN_PROGRESS) + 1. A wrap of the
//     generation bits kept in MMIO markers zaps everything once, before that
//     store (I1.4).
// Adding a slot takes the in-progress step without a zap: markers of the new
// range go stale with the generation.
//
// Records (struct s2_slot_rec) are carved from pages of the page source; the
// records an update needs are taken before anything is published, so an
// allocation failure returns S2_E_NOMEM with nothing changed.
#include <stddef.h>

#include "core/mem.h"
#include "mm/s2_internal.h"

#define RECS_PER_PAGE ((S2_PAGE_SIZE - sizeof(uint64_t)) / sizeof(struct s2_slot_rec))
// Free records an update needs at most: an add takes the new record; a
// delete, move or flag change takes the INVALID copy, and the final record
// only after the old one went back to the free list (do_change).
_Static_assert(sizeof(struct s2_slot_rec) == 184, "slot record: slot + 4 nodes + link");
_Static_assert(RECS_PER_PAGE == 22, "22 slot records a page (docs/mm.md, memory)");
_Static_assert(offsetof(struct s2_slot_rec, slot) == 0, "lookups return &rec->slot");

void s2_slots_init(struct s2_vm *vm)
{
	for (unsigned as = 0; as < S2_NR_AS; as++) {
		for (unsigned i = 0; i < 2; i++) {
			vm->sets[as][i].vm = vm;
			vm->sets[as][i].idx = i;
		}
		vm->active[as] = &vm->sets[as][0];
	}
}

// The dirty bitmaps of the records below `n` (the active set's id tree).
static void free_bitmaps(struct s2_vm *vm, struct s2_tnode *n, unsigned idx)
{
	if (!n)
		return;
	free_bitmaps(vm, n->l, idx); // depth bounded by the AVL height (< 24)
	free_bitmaps(vm, n->r, idx);
	const struct s2_slot *sl =
	    &((struct s2_slot_rec *)((char *)(n - idx) - offsetof(struct s2_slot_rec, by_id)))
		 ->slot;
	if (sl->dirty_dir)
		s2_dirty_free(vm, sl->dirty_dir, sl->size >> S2_PAGE_SHIFT);
}

// Records pages go back only here (the trees need no teardown: they live in
// the records); so do the bitmaps of the slots still there.
void s2_slots_destroy(struct s2_vm *vm)
{
	for (unsigned as = 0; as < S2_NR_AS; as++)
		free_bitmaps(vm, vm->active[as]->by_id, vm->active[as]->idx);
	while (vm->slot_pages) {
		uint64_t pa = vm->slot_pages;

		vm->slot_pages = *(uint64_t *)(uintptr_t)pa;
		vm->be->page_free(vm->be_ctx, pa, 1);
	}
}

// Prepare: at least `n` free records (a page of them at a time).
static int recs_reserve(struct s2_vm *vm, unsigned n)
{
	while (vm->slot_free_n < n) {
		uint64_t pa = s2_page_alloc(vm, 1, S2_PAGE_SIZE);

		if (!pa)
			return S2_E_NOMEM;
		*(uint64_t *)(uintptr_t)pa = vm->slot_pages;
		vm->slot_pages = pa;
		struct s2_slot_rec *r = (struct s2_slot_rec *)(uintptr_t)(pa + sizeof(uint64_t));
		for (unsigned i = 0; i < RECS_PER_PAGE; i++) {
			r[i].free_next = vm->slot_free;
			vm->slot_free = &r[i];
		}
		vm->slot_free_n += (unsigned)RECS_PER_PAGE;
	}
	return 0;
}

static struct s2_slot_rec *rec_take(struct s2_vm *vm, const struct s2_slot *sl)
{
	struct s2_slot_rec *r = vm->slot_free;

	S2_ASSERT(r); // reserved by recs_reserve
	vm->slot_free = r->free_next;
	vm->slot_free_n--;
	memset(r, 0, sizeof(*r));
	r->slot = *sl;
	for (unsigned i = 0; i < 2; i++) {
		r->by_gpa[i].key = sl->gpa;
		r->by_id[i].key = sl->id;
	}
	return r;
}

// Only for a record no set reaches, with both sets drained since (see top).
static void rec_put(struct s2_vm *vm, struct s2_slot_rec *r)
{
	r->free_next = vm->slot_free;
	vm->slot_free = r;
	vm->slot_free_n++;
}

static struct s2_slot_rec *rec_of_id(struct s2_tnode *n, unsigned idx)
{
	return n ? (struct s2_slot_rec *)((char *)(n - idx) - offsetof(struct s2_slot_rec, by_id))
		 : NULL;
}

static struct s2_slot_rec *rec_of_gpa(struct s2_tnode *n, unsigned idx)
{
	return n ? (struct s2_slot_rec *)((char *)(n - idx) - offsetof(struct s2_slot_rec, by_gpa))
		 : NULL;
}

static void count(struct s2_vm *vm, uint64_t visits)
{
	S2_STAT_ADD(vm, slot_visits, visits);
}

// ---- readers (fault path) -------------------------------------------------------

struct s2_slotset *s2_slots_enter(struct s2_vm *vm, unsigned as)
{
	for (;;) {
		struct s2_slotset *s = __atomic_load_n(&vm->active[as], __ATOMIC_SEQ_CST);

		__atomic_fetch_add(&s->readers, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&vm->active[as], __ATOMIC_SEQ_CST) == s)
			return s;
		__atomic_fetch_sub(&s->readers, 1, __ATOMIC_SEQ_CST);
	}
}

void s2_slots_exit(struct s2_slotset *s)
{
	if (s)
		__atomic_fetch_sub(&s->readers, 1, __ATOMIC_RELEASE);
}

// The slot with the largest base <= gpa, or NULL.
static struct s2_slot_rec *floor_rec(const struct s2_slotset *s, uint64_t gpa, uint64_t *visits)
{
	return rec_of_gpa(s2_tree_floor(s->by_gpa, gpa, visits), s->idx);
}

const struct s2_slot *s2_slots_lookup_any(const struct s2_slotset *s, uint64_t gpa)
{
	uint64_t visits = 0;

	if (!s)
		return NULL;
	const struct s2_slot_rec *r = floor_rec(s, gpa, &visits);
	count(s->vm, visits);
	if (!r || gpa - r->slot.gpa >= r->slot.size)
		return NULL;
	return &r->slot;
}

const struct s2_slot *s2_slots_lookup(const struct s2_slotset *s, uint64_t gpa)
{
	const struct s2_slot *sl = s2_slots_lookup_any(s, gpa);

	return sl && !(sl->flags & S2_SLOT_INVALID) ? sl : NULL;
}

bool s2_slot_find(struct s2_vm *vm, unsigned as, uint64_t gpa, struct s2_slot *out)
{
	if (!vm || as >= S2_NR_AS)
		return false;
	struct s2_slotset *s = s2_slots_enter(vm, as);
	const struct s2_slot *sl = s2_slots_lookup(s, gpa);
	if (sl)
		*out = *sl;
	s2_slots_exit(s);
	return sl != NULL;
}

// ---- updates ------------------------------------------------------------------

static struct s2_slotset *inactive(struct s2_vm *vm, unsigned as)
{
	return vm->active[as] == &vm->sets[as][0] ? &vm->sets[as][1] : &vm->sets[as][0];
}

// One set: unlink `old`, link `new` (either may be NULL). O(log n).
static void set_change(struct s2_slotset *s, struct s2_slot_rec *old, struct s2_slot_rec *new,
		       uint64_t gen)
{
	uint64_t visits = 0;
	unsigned i = s->idx;

	if (old) {
		s2_tree_remove(&s->by_gpa, old->slot.gpa, &visits);
		s2_tree_remove(&s->by_id, old->slot.id, &visits);
		s->n--;
	}
	if (new) {
		s2_tree_insert(&s->by_gpa, &new->by_gpa[i], &visits);
		s2_tree_insert(&s->by_id, &new->by_id[i], &visits);
		s->n++;
	}
	s->generation = gen;
	count(s->vm, visits);
}

// The one way a set changes: the inactive set first, swap, wait until no
// reader uses the previous set, then the same change there. Afterwards both
// sets are equal again and the inactive one is drained.
static void apply(struct s2_vm *vm, unsigned as, struct s2_slot_rec *old, struct s2_slot_rec *new,
		  uint64_t gen)
{
	struct s2_slotset *next = inactive(vm, as), *prev = vm->active[as];

	set_change(next, old, new, gen);
	__atomic_store_n(&vm->active[as], next, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&prev->readers, __ATOMIC_SEQ_CST)) {
		if (vm->be->cpu_relax)
			vm->be->cpu_relax(vm->be_ctx);
	}
	set_change(prev, old, new, gen);
}

static struct s2_slot_rec *find_id(const struct s2_slotset *s, uint32_t id)
{
	uint64_t visits = 0;
	struct s2_slot_rec *r = rec_of_id(s2_tree_find(s->by_id, id, &visits), s->idx);

	count(s->vm, visits);
	return r;
}

bool s2_slot_by_id(struct s2_vm *vm, unsigned as, uint32_t id, const struct s2_slot **out)
{
	const struct s2_slot_rec *r = find_id(vm->active[as], id);

	if (!r || (r->slot.flags & S2_SLOT_INVALID))
		return false;
	*out = &r->slot;
	return true;
}

// Does [gpa, gpa + size) overlap a slot other than `skip`? Slots do not
// overlap, so only the last slot starting below gpa + size can (or, when that
// is `skip`, the one before it).
static bool overlaps(const struct s2_slotset *s, uint64_t gpa, uint64_t size,
		     const struct s2_slot_rec *skip)
{
	uint64_t visits = 0;
	const struct s2_slot_rec *r = floor_rec(s, gpa + size - 1, &visits);

	if (r && r == skip)
		r = r->slot.gpa ? floor_rec(s, r->slot.gpa - 1, &visits) : NULL;
	count(s->vm, visits);
	return r && r->slot.gpa + r->slot.size > gpa;
}

static int check_geometry(const struct s2_vm *vm, uint64_t gpa, uint64_t size, uint64_t hpa)
{
	if ((gpa | size | hpa) & (S2_PAGE_SIZE - 1))
		return S2_E_UNALIGNED;
	if (!size)
		return S2_E_ZERO;
	if (gpa + size < gpa || gpa + size > (1ull << vm->geom.ia_bits) || hpa + size < hpa ||
	    ((hpa + size - 1) & ~vm->fmt->addr_mask & ~(S2_PAGE_SIZE - 1)))
		return S2_E_RANGE;
	return 0;
}

static void gen_begin(struct s2_vm *vm)
{
	uint64_t g = vm->generation;

	__atomic_store_n(&vm->generation, (g + 1) | S2_GEN_IN_PROGRESS, __ATOMIC_SEQ_CST);
}

// Final generation, stored only after the last drain: until then faults see
// IN_PROGRESS and neither trust nor cache markers. A wrap of the truncated
// value kept in markers zaps everything first, once no straggling fault from
// before the update can still install an old-tagged marker (I1.4).
static uint64_t gen_next(const struct s2_vm *vm)
{
	return (vm->generation & ~S2_GEN_IN_PROGRESS) + 1;
}

static void gen_end(struct s2_vm *vm, uint64_t g)
{
	uint64_t prev = g - 2;

	S2_STAT_ADD(vm, slot_updates, 1);
	if (vm->mmio_gen_bits) {
		uint64_t mask = (1ull << vm->mmio_gen_bits) - 1;

		if ((g & mask) < (prev & mask)) {
			s2_mmu_lock(vm, S2_LOCK_WRITE);
			s2_zap_all_locked(vm);
			s2_mmu_unlock(vm, S2_LOCK_WRITE);
		}
	}
	__atomic_store_n(&vm->generation, g, __ATOMIC_SEQ_CST);
}

// Step 2 of the flow: nothing maps [gpa, gpa + size) in any root afterwards.
static void zap_old(struct s2_vm *vm, unsigned as, uint64_t gpa, uint64_t size)
{
	if (__atomic_load_n(&vm->zap_mode, __ATOMIC_RELAXED) == S2_ZAP_ALL) {
		s2_mmu_lock(vm, S2_LOCK_WRITE);
		if (vm->shadow && vm->shadow->destroy_all)
			vm->shadow->destroy_all(vm->shadow_ctx, vm);
		s2_mmu_unlock(vm, S2_LOCK_WRITE);
		S2_STAT_ADD(vm, zap_all, 1);
		s2_roots_invalidate_all(vm); // returns once the zap is done
		// Roots invalidated earlier and still referenced keep their
		// entries until their zapper ran; that was done above too.
		return;
	}
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	s2_zap_range_locked(vm, (int)as, gpa, gpa + size);
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
}

enum slot_op { SLOT_ADD, SLOT_DELETE, SLOT_MOVE, SLOT_FLAGS };

struct slot_req {
	enum slot_op op;
	uint32_t id;
	uint64_t gpa, size, hpa;
	unsigned flags;
	const struct s2_backing *backing;
	uint64_t dirty_dir; // prepared: the bitmap a slot that starts logging gets
};

#define SLOT_FLAGS_OK (S2_SLOT_READONLY | S2_SLOT_DEVICE | S2_SLOT_DIRTY_LOG)

// Flags a slot of `size` bytes may have: a device slot logs nothing.
static int flags_ok(unsigned flags, uint64_t size)
{
	if ((flags & ~SLOT_FLAGS_OK) || ((flags & S2_SLOT_DIRTY_LOG) && (flags & S2_SLOT_DEVICE)))
		return S2_E_INVAL;
	if ((flags & S2_SLOT_DIRTY_LOG) && (size >> S2_PAGE_SHIFT) > S2_DIRTY_MAX_PAGES)
		return S2_E_RANGE;
	return 0;
}

static int validate(struct s2_vm *vm, unsigned as, const struct slot_req *rq,
		    struct s2_slot_rec **old)
{
	const struct s2_slotset *cur = vm->active[as];
	struct s2_slot_rec *o = find_id(cur, rq->id);
	int r;

	*old = o;
	if (rq->op == SLOT_ADD) {
		r = flags_ok(rq->flags, rq->size);
		if (r)
			return r;
		if (rq->backing && (rq->hpa || !rq->backing->page_hpa || !rq->backing->contiguous))
			return S2_E_INVAL;
		r = check_geometry(vm, rq->gpa, rq->size, rq->hpa);
		if (r)
			return r;
		if (o)
			return S2_E_EXIST;
		if (overlaps(cur, rq->gpa, rq->size, NULL))
			return S2_E_OVERLAP;
		return cur->n >= S2_MAX_SLOTS ? S2_E_FULL : 0;
	}
	if (!o)
		return S2_E_NOENT;
	if (rq->op == SLOT_MOVE) {
		r = check_geometry(vm, rq->gpa, o->slot.size, o->slot.hpa);
		if (r)
			return r;
		return overlaps(cur, rq->gpa, o->slot.size, o) ? S2_E_OVERLAP : 0;
	}
	return rq->op == SLOT_FLAGS ? flags_ok(rq->flags, o->slot.size) : 0;
}

// Prepare: the bitmap of a slot that starts logging (added with the flag, or
// given it), before anything is published.
static int bitmap_prepare(struct s2_vm *vm, struct slot_req *rq, const struct s2_slot_rec *old)
{
	bool starts = (rq->op == SLOT_ADD || (rq->op == SLOT_FLAGS && !old->slot.dirty_dir)) &&
		      (rq->flags & S2_SLOT_DIRTY_LOG);
	uint64_t size = rq->op == SLOT_ADD ? rq->size : old ? old->slot.size : 0;

	if (!starts)
		return 0;
	rq->dirty_dir = s2_dirty_alloc(vm, size >> S2_PAGE_SHIFT);
	return rq->dirty_dir ? 0 : S2_E_NOMEM;
}

static void do_add(struct s2_vm *vm, unsigned as, const struct slot_req *rq)
{
	struct s2_slot sl = {.id = rq->id,
			     .as = (uint16_t)as,
			     .flags = (uint16_t)rq->flags,
			     .gpa = rq->gpa,
			     .size = rq->size,
			     .hpa = rq->hpa,
			     .backing = rq->backing,
			     .dirty_dir = rq->dirty_dir};

	gen_begin(vm);
	apply(vm, as, NULL, rec_take(vm, &sl), gen_next(vm));
}

static void do_change(struct s2_vm *vm, unsigned as, const struct slot_req *rq,
		      struct s2_slot_rec *old)
{
	struct s2_slot sl = old->slot;

	// 1. INVALID copy in both sets; `old` is then unreachable and drained.
	gen_begin(vm);
	sl.flags |= S2_SLOT_INVALID;
	struct s2_slot_rec *inv = rec_take(vm, &sl);
	apply(vm, as, old, inv, vm->generation);
	rec_put(vm, old);
	// 2. Nothing maps the old range afterwards.
	zap_old(vm, as, sl.gpa, sl.size);
	// 3. Final record (none for a delete): the free list has `old` back, so
	// the one record reserved for the update suffices.
	// A move keeps the bitmap (it counts the slot's pages); a slot that
	// stops logging, or goes, frees it once no fault can still mark it.
	struct s2_slot_rec *fin = NULL;
	uint64_t drop = 0;
	if (rq->op == SLOT_DELETE) {
		drop = sl.dirty_dir;
	} else {
		sl.flags &= (uint16_t)~S2_SLOT_INVALID;
		if (rq->op == SLOT_MOVE) {
			sl.gpa = rq->gpa;
		} else {
			sl.flags = (uint16_t)rq->flags;
			if (!(rq->flags & S2_SLOT_DIRTY_LOG)) {
				drop = sl.dirty_dir;
				sl.dirty_dir = 0;
			} else if (!sl.dirty_dir) {
				sl.dirty_dir = rq->dirty_dir;
			}
		}
		fin = rec_take(vm, &sl);
	}
	apply(vm, as, inv, fin, gen_next(vm));
	rec_put(vm, inv);
	if (drop)
		s2_dirty_free(vm, drop, sl.size >> S2_PAGE_SHIFT);
}

static int slot_update(struct s2_vm *vm, unsigned as, struct slot_req *rq)
{
	struct s2_slot_rec *old;
	int r;

	if (!vm)
		return S2_E_INVAL;
	if (as >= S2_NR_AS)
		return S2_E_AS;
	mm_spin_lock(&vm->slots_lock);
	// Prepare: every check and every allocation before anything is published.
	r = validate(vm, as, rq, &old);
	if (!r)
		r = recs_reserve(vm, 1); // one record per update (see RECS_PER_PAGE)
	if (!r)
		r = bitmap_prepare(vm, rq, old);
	if (r) {
		mm_spin_unlock(&vm->slots_lock);
		return r;
	}
	if (rq->op == SLOT_ADD)
		do_add(vm, as, rq);
	else
		do_change(vm, as, rq, old);
	gen_end(vm, vm->active[as]->generation);
	mm_spin_unlock(&vm->slots_lock);
	return 0;
}

int s2_slot_add(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t gpa, uint64_t size,
		uint64_t hpa, unsigned flags)
{
	struct slot_req rq = {SLOT_ADD, id, gpa, size, hpa, flags, NULL, 0};
	return slot_update(vm, as, &rq);
}

int s2_slot_add_backed(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t gpa, uint64_t size,
		       const struct s2_backing *b, unsigned flags)
{
	struct slot_req rq = {SLOT_ADD, id, gpa, size, 0, flags, b, 0};

	if (!b)
		return S2_E_INVAL;
	return slot_update(vm, as, &rq);
}

int s2_slot_zap_pages(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n)
{
	if (!vm)
		return S2_E_INVAL;
	if (as >= S2_NR_AS)
		return S2_E_AS;
	mm_spin_lock(&vm->slots_lock);
	struct s2_slot_rec *r = find_id(vm->active[as], id);
	uint64_t pages = r ? r->slot.size >> S2_PAGE_SHIFT : 0;
	int err = !r ? S2_E_NOENT : !r->slot.backing ? S2_E_INVAL : 0;
	if (!err && (!n || first >= pages || n > pages - first))
		err = S2_E_RANGE;
	if (err) {
		mm_spin_unlock(&vm->slots_lock);
		return err;
	}
	uint64_t gpa = r->slot.gpa + (first << S2_PAGE_SHIFT);
	// A fault that read a frame before the caller made it absent is inside
	// a reader section of the active set: swapping the (unchanged) sets and
	// draining waits for it, so its leaf exists before the zap below.
	// No slot changes, so the generation (and every MMIO marker) stays.
	apply(vm, as, NULL, NULL, vm->active[as]->generation);
	zap_old(vm, as, gpa, n << S2_PAGE_SHIFT);
	mm_spin_unlock(&vm->slots_lock);
	return 0;
}

int s2_slot_delete(struct s2_vm *vm, unsigned as, uint32_t id)
{
	struct slot_req rq = {.op = SLOT_DELETE, .id = id};
	return slot_update(vm, as, &rq);
}

int s2_slot_move(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t new_gpa)
{
	struct slot_req rq = {.op = SLOT_MOVE, .id = id, .gpa = new_gpa};
	return slot_update(vm, as, &rq);
}

int s2_slot_set_flags(struct s2_vm *vm, unsigned as, uint32_t id, unsigned flags)
{
	struct slot_req rq = {.op = SLOT_FLAGS, .id = id, .flags = flags};
	return slot_update(vm, as, &rq);
}
