// SPDX-License-Identifier: Apache-2.0
//
// The fault path: gpa -> slot -> the largest leaf the slot bounds and the
// gpa/hpa alignment allow, or an MMIO marker when no slot covers gpa.
//
// It runs under the mmu lock held for read: entries are installed by CAS
// (tables are initialised before their entry is published, I4.6), a frozen
// entry makes the fault retry, and the slot-set reader section is held from
// lookup to install so that a slot update (which drains readers before it
// zaps) never misses what this fault mapped. Cases that need more than an
// install into empty entries (replacing a present leaf) retake the lock for
// write and use the general map operation.
#include "mm/s2_internal.h"

struct fault_want {
	bool marker;
	uint64_t mgen;
	uint64_t delta;
	unsigned prot;
	enum s2_memtype mt;
	unsigned level;
};

enum { INST_DONE, INST_RETRY, INST_EXCL, INST_MARKER_HIT, INST_NOMEM };

// Can a leaf of `size` bytes at `base` (inside the slot) map the slot's
// memory? Contiguous slots: the gpa/hpa offset is aligned. Frame lists: the
// block's frames are contiguous and the first is aligned.
static bool leaf_fits(const struct s2_slot *sl, uint64_t base, uint64_t size)
{
	const struct s2_backing *b = sl->backing;
	uint64_t first = (base - sl->gpa) >> S2_PAGE_SHIFT;

	if (!b)
		return !((sl->hpa - sl->gpa) & (size - 1));
	return !(b->page_hpa(b, first) & (size - 1)) &&
	       b->contiguous(b, first, size >> S2_PAGE_SHIFT);
}

static unsigned pick_level(const struct s2_vm *vm, const struct s2_slot *sl, uint64_t gpa)
{
	unsigned top = vm->fmt->max_leaf_level < vm->geom.root_level ? vm->fmt->max_leaf_level
								     : vm->geom.root_level;

	if (sl->backing && sl->backing->max_level < top)
		top = sl->backing->max_level;
	for (unsigned l = top; l > 0; l--) {
		uint64_t size = s2_level_size(l), base = gpa & ~(size - 1);

		if (base >= sl->gpa && base + size <= sl->gpa + sl->size &&
		    leaf_fits(sl, base, size))
			return l;
	}
	return 0;
}

static int install_shared(struct s2_vm *vm, struct s2_root *root, uint64_t gpa,
			  struct fault_want *fw, struct s2_cache *c, struct s2_fault_info *info)
{
	const struct s2_fmt *f = vm->fmt;
	uint64_t table = root->pa;

	for (int l = (int)vm->geom.root_level; l >= 0; l--) {
		unsigned level = (unsigned)l;
		s2_pte_t *p = &s2_table_ptr(table)[s2_index(&vm->geom, gpa, level)];
		uint64_t base = gpa & ~(s2_level_size(level) - 1);
		s2_pte_t old;
	again:
		old = s2_pte_load(p);
		if (old == f->frozen)
			return INST_RETRY; // a subtree is being removed: re-enter
		if (s2_is_table(vm, old, level)) {
			// Collapse: the whole block is backed contiguously again
			// (pick_level), so its table of smaller leaves (or an
			// emptied one) is replaced by one leaf, under the write
			// lock (the general map frees the table after the flush).
			if (level == fw->level)
				return INST_EXCL;
			table = s2_pte_addr(f, old);
			continue;
		}
		if (f->is_present(old)) {
			info->level = level;
			if (fw->marker)
				return INST_EXCL;
			if (level >= fw->level &&
			    s2_pte_addr(f, old) + (gpa - base) == gpa + fw->delta &&
			    f->leaf_prot(old) == fw->prot &&
			    f->leaf_memtype(old, vm->caps) == fw->mt)
				return INST_DONE; // already mapped (spurious or raced)
			return INST_EXCL;
		}
		if (fw->marker && level == 0 && f->is_mmio(old) && f->mmio_gen(old) == fw->mgen)
			return INST_MARKER_HIT;
		if (level == fw->level) {
			s2_pte_t new_pte = fw->marker ? f->make_mmio(fw->mgen)
						      : f->make_leaf(base + fw->delta, level,
								     fw->prot, fw->mt, vm->caps);
			if (!__atomic_compare_exchange_n(p, &old, new_pte, false, __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED))
				goto again;
			info->level = level;
			if (!fw->marker)
				S2_STAT_ADD(vm, leaves_mapped[level], 1);
			return INST_DONE;
		}
		uint64_t pa = s2_cache_take(vm, c);
		if (!pa)
			return INST_NOMEM;
		if (!__atomic_compare_exchange_n(p, &old, f->make_table(pa), false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			s2_cache_put(c, pa);
			goto again;
		}
		s2_tables_count_alloc(vm, 1);
		table = pa;
	}
	return INST_EXCL; // not reached: level 0 always ends the loop
}

static int fault_slot(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, unsigned access,
		      const struct s2_slot *sl, uint64_t gen, struct s2_fault_info *info)
{
	struct fault_want fw = {0};
	struct s2_cache c = {0};
	int r, res;

	if (sl) {
		if ((access & S2_PROT_W) && (sl->flags & S2_SLOT_READONLY))
			return S2_E_PERM;
		fw.prot = sl->flags & S2_SLOT_READONLY ? S2_PROT_R | S2_PROT_X : S2_PROT_RWX;
		fw.mt = sl->flags & S2_SLOT_DEVICE ? S2_MT_DEVICE : S2_MT_WB;
		fw.level = pick_level(vm, sl, gpa);
		// A logging slot: 4 KiB leaves, writable only from a write fault,
		// which marks the page (after the install, below).
		if (sl->flags & S2_SLOT_DIRTY_LOG) {
			fw.level = 0;
			if (!(access & S2_PROT_W))
				fw.prot &= ~S2_PROT_W;
		}
		// One offset for the whole leaf: the leaf's pages are contiguous
		// (pick_level), and so is every smaller block inside it. An absent
		// page fits no block (its address is unaligned and breaks every
		// run), so it is the 4 KiB leaf's own page that says absent.
		uint64_t base = gpa & ~(s2_level_size(fw.level) - 1),
			 hpa = s2_slot_page_hpa(sl, base);
		if (hpa == S2_HPA_ABSENT)
			return S2_FAULT_ABSENT;
		fw.delta = hpa - base;
	} else {
		S2_STAT_ADD(vm, faults_mmio, 1);
		// No marker is trusted or cached while a slot update is in progress.
		if (!vm->mmio_gen_bits || (gen & S2_GEN_IN_PROGRESS))
			return S2_FAULT_MMIO;
		fw.marker = true;
		fw.mgen = gen & ((1ull << vm->mmio_gen_bits) - 1);
	}
	// Prepare: the tables one install can need, before any entry changes.
	r = s2_cache_topup(vm, &c, vm->geom.root_level);
	if (r) {
		s2_cache_release(vm, &c);
		return r;
	}
	s2_mmu_lock(vm, S2_LOCK_READ);
	if (__atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE))
		res = INST_RETRY; // the vCPU must load a new root (I4.7)
	else
		res = install_shared(vm, root, gpa, &fw, &c, info);
	s2_mmu_unlock(vm, S2_LOCK_READ);
	if (res == INST_EXCL && !fw.marker) {
		uint64_t size = s2_level_size(fw.level), base = gpa & ~(size - 1);

		s2_mmu_lock(vm, S2_LOCK_WRITE);
		if (__atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE))
			res = INST_RETRY;
		else if (s2_map_locked(vm, root, base, size, base + fw.delta, fw.prot, fw.mt))
			res = INST_NOMEM;
		else
			res = INST_DONE;
		info->level = fw.level;
		s2_mmu_unlock(vm, S2_LOCK_WRITE);
	}
	s2_cache_release(vm, &c);
	switch (res) {
	case INST_RETRY:
		S2_STAT_ADD(vm, faults_retry, 1);
		return S2_FAULT_RETRY;
	case INST_NOMEM:
		return S2_E_NOMEM;
	case INST_MARKER_HIT:
		info->from_marker = true;
		return S2_FAULT_MMIO;
	default:
		if (fw.marker) {
			S2_STAT_ADD(vm, markers, res == INST_DONE);
			return S2_FAULT_MMIO;
		}
		info->hpa = gpa + fw.delta;
		// Inside the slot-set reader section: the bitmap outlives this. A
		// harvest between the install and this mark leaves the leaf
		// writable and reports the page next time.
		if ((sl->flags & S2_SLOT_DIRTY_LOG) && (access & S2_PROT_W))
			s2_dirty_mark(vm, sl, gpa);
		return S2_FAULT_MAPPED;
	}
}

int s2_fault(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, unsigned access,
	     struct s2_fault_info *info)
{
	struct s2_fault_info dummy;
	int r;

	if (!info)
		info = &dummy;
	*info = (struct s2_fault_info){0};
	if (!vm || !root || (access & ~S2_PROT_RWX))
		return S2_E_INVAL;
	if (gpa >> vm->geom.ia_bits)
		return S2_E_RANGE;
	gpa &= ~(S2_PAGE_SIZE - 1);
	S2_STAT_ADD(vm, faults, 1);
	if (__atomic_load_n(&root->invalid, __ATOMIC_ACQUIRE)) {
		S2_STAT_ADD(vm, faults_retry, 1);
		return S2_FAULT_RETRY; // the vCPU must load a new root (I4.7)
	}
	struct s2_slotset *s = s2_slots_enter(vm, root->role.as);
	uint64_t gen = __atomic_load_n(&vm->generation, __ATOMIC_SEQ_CST);
	const struct s2_slot *sl = s2_slots_lookup_any(s, gpa);
	struct s2_slot copy;
	if (sl && (sl->flags & S2_SLOT_INVALID)) {
		// The slot is being changed (flags, move, delete): the access
		// retries until the final record is out, as KVM's MMU does on
		// an invalid memslot. MMIO would be wrong while the range may
		// stay RAM (a flags change), and is right only once it is gone.
		s2_slots_exit(s);
		S2_STAT_ADD(vm, faults_retry, 1);
		return S2_FAULT_RETRY;
	}
	if (sl)
		copy = *sl;
	r = fault_slot(vm, root, gpa, access, sl ? &copy : NULL, gen, info);
	s2_slots_exit(s);
	return r;
}
