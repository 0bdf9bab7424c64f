// SPDX-License-Identifier: Apache-2.0
//
// Dirty logging of memslots (S2_SLOT_DIRTY_LOG, s2.h). Policy:
//  - write protection, not hardware dirty bits: the same on EPT, NPT and
//    stage-2 (EPT's A/D bits could replace the write faults on VT-x; not
//    done: docs/mm.md);
//  - 4 KiB leaves only while a slot logs: the flag change zaps the slot once
//    (slot-scoped, as any flag change), so a huge leaf never has to be split
//    on a write fault, and a read fault maps a page read-only;
//  - the fault path marks a page when it maps it writable; a harvest clears
//    what it reports and write-protects exactly those pages again, in every
//    root of the slot's address space, with one flush, before it returns.
//
// Why that order is enough: a page reported by a harvest is copied by its
// caller after the harvest returned, so writes that came before its write
// protection are in the copy; every later write faults and marks it again.
// A fault that mapped a page writable but marks it only after a harvest ran
// leaves that page writable and reported by the next harvest.
//
// The bitmap is mm/dirty_bitmap.c's. Harvests hold the slots lock (the slot
// and its bitmap stay) and the mmu lock for write (no fault installs
// meanwhile).
#include "mm/s2_internal.h"

// ---- write protection of reported pages -------------------------------------------
struct wp_ctx {
	const struct s2_slot *sl;
	const uint64_t *report; // bit i: the slot's page first + i
	uint64_t first;
};

static bool reported(const struct wp_ctx *c, uint64_t gpa)
{
	uint64_t i = ((gpa - c->sl->gpa) >> S2_PAGE_SHIFT) - c->first;

	return (c->report[i / 64] >> (i % 64)) & 1;
}

static int wp_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind, void *ctx)
{
	struct s2_vm *vm = w->vm;
	const struct s2_fmt *f = vm->fmt;
	unsigned prot = f->leaf_prot(e->old);

	(void)kind;
	// Leaves of a logging slot are 4 KiB; a larger one (mapped by
	// s2_map, outside the fault path) goes whole and refaults.
	if (e->level) {
		s2_walk_zap(w, e);
		return 0;
	}
	if (!(prot & S2_PROT_W) || !reported(ctx, e->addr))
		return 0;
	s2_walk_replace(w, e,
			f->make_leaf(s2_pte_addr(f, e->old), 0, prot & ~S2_PROT_W,
				     f->leaf_memtype(e->old, vm->caps), vm->caps));
	S2_STAT_ADD(vm, dirty_protected, 1);
	return 0;
}

// Pages [first, first + n) of `sl` whose bit is in `report`: read-only in
// every root of the slot's address space; one flush for all (mmu lock for
// write held).
static void protect_reported(struct s2_vm *vm, const struct s2_slot *sl, const uint64_t *report,
			     uint64_t first, uint64_t n)
{
	struct wp_ctx c = {.sl = sl, .report = report, .first = first};
	uint64_t lo = sl->gpa + (first << S2_PAGE_SHIFT), hi = lo + (n << S2_PAGE_SHIFT);
	struct s2_walk w;
	struct s2_root *next;

	s2_walk_begin(&w, vm, S2_WALK_LEAF, S2_LOCK_WRITE);
	for (struct s2_root *r = __atomic_load_n(&vm->roots, __ATOMIC_ACQUIRE); r; r = next) {
		if (r->role.as != sl->as || !s2_root_tryget(r)) {
			next = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE);
			continue;
		}
		s2_walk_root(&w, r, lo, hi, 0, wp_visit, &c);
		next = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE);
		s2_root_drop(vm, r);
	}
	s2_walk_end(&w); // one flush, none when nothing live changed
}

// ---- harvests ------------------------------------------------------------------------
// The logging slot `id` (slots lock held); its copy in *out.
static int logging_slot(struct s2_vm *vm, unsigned as, uint32_t id, struct s2_slot *out)
{
	const struct s2_slot *sl = NULL;

	if (as >= S2_NR_AS)
		return S2_E_AS;
	if (!s2_slot_by_id(vm, as, id, &sl))
		return S2_E_NOENT;
	if (!sl->dirty_dir)
		return S2_E_INVAL;
	*out = *sl;
	return 0;
}

static uint64_t popcount64(uint64_t x)
{
	return (uint64_t)__builtin_popcountll(x);
}

// Bits [first, first + n) of the bitmap into report[] (bit 0 = page first;
// may be `mask` itself), only those `mask` has (same layout; NULL: all),
// cleared in the bitmap with `clear`. Returns the number of bits reported.
static uint64_t take_bits(const struct s2_slot *sl, uint64_t first, uint64_t n,
			  const uint64_t *mask, bool clear, uint64_t *report)
{
	uint64_t total = 0;

	for (uint64_t w = 0; w < (n + 63) / 64; w++) {
		uint64_t *word = s2_dirty_word(sl->dirty_dir, first + w * 64);
		uint64_t want = mask ? mask[w] : ~0ull;

		if (n - w * 64 < 64)
			want &= (1ull << (n - w * 64)) - 1;
		report[w] = clear ? __atomic_fetch_and(word, ~want, __ATOMIC_RELAXED) & want
				  : __atomic_load_n(word, __ATOMIC_RELAXED) & want;
		total += popcount64(report[w]);
	}
	return total;
}

// The checks both harvests share (slots lock held): a logging slot, and a
// range [first, first + n) of it as KVM_CLEAR_DIRTY_LOG wants it.
static int harvest_check(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
			 struct s2_slot *sl)
{
	int r = logging_slot(vm, as, id, sl);
	uint64_t pages = sl->size >> S2_PAGE_SHIFT;

	if (r)
		return r;
	if (!n || first >= pages || n > pages - first)
		return S2_E_RANGE;
	return (first % 64) || ((n % 64) && first + n != pages) ? S2_E_INVAL : 0;
}

// Under both locks: the bits [first, first + n) into `report` (only those
// in `mask` when it is given), then, when clearing, their pages protected.
static int harvest(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
		   const uint64_t *mask, bool clear, uint64_t *report)
{
	struct s2_slot sl = {0};
	int r;

	mm_spin_lock(&vm->slots_lock);
	r = harvest_check(vm, as, id, first, n, &sl);
	if (!r) {
		s2_mmu_lock(vm, S2_LOCK_WRITE);
		// The bits go first, then their pages' write access: see the top.
		uint64_t got = take_bits(&sl, first, n, mask, clear, report);
		S2_STAT_ADD(vm, dirty_reported, got);
		if (clear && got)
			protect_reported(vm, &sl, report, first, n);
		s2_mmu_unlock(vm, S2_LOCK_WRITE);
	}
	mm_spin_unlock(&vm->slots_lock);
	return r;
}

int s2_slot_dirty_get(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
		      uint64_t *out, bool clear)
{
	if (!vm || !out)
		return S2_E_INVAL;
	return harvest(vm, as, id, first, n, NULL, clear, out);
}

int s2_slot_dirty_clear(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
			uint64_t *mask)
{
	if (!vm || !mask)
		return S2_E_INVAL;
	return harvest(vm, as, id, first, n, mask, true, mask);
}
