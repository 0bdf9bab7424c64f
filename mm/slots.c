// SPDX-License-Identifier: Apache-2.0
//
// Memslots: per address space, two sorted slot sets (active, inactive) and a
// VM-wide generation (bit 63 while an update is in progress).
//
// Update flow (slots_lock held), for delete, move and flag changes:
//  1. copy the active set, mark the slot INVALID in the copy, generation =
//     (gen + 1) | IN_PROGRESS, swap, wait for the readers of the old set to
//     drain: from now on no fault can map the slot (it sees no slot, and
//     caches no MMIO marker while the update is in progress);
//  2. zap the old range in every root, valid and invalid (slot mode), or
//     invalidate and zap all roots (zap-all mode); one flush; shadow pages
//     that shadow guest tables in the slot go through the shadow hook;
//  3. copy again, apply the final change, swap, drain, and only then
//     generation = (gen & ~IN_PROGRESS) + 1. A wrap of the generation bits
//     kept in MMIO markers zaps everything once, before that store (I1.4).
// Adding a slot takes the in-progress step without a zap: markers of the new
// range go stale with the generation.
#include "core/mem.h"
#include "mm/s2_internal.h"

static unsigned set_pages(void)
{
	return (unsigned)((sizeof(struct s2_slotset) + S2_PAGE_SIZE - 1) / S2_PAGE_SIZE);
}

static int ensure_sets(struct s2_vm *vm, unsigned as)
{
	if (vm->set_buf[as][0])
		return 0;
	uint64_t a = s2_page_alloc(vm, set_pages(), S2_PAGE_SIZE);
	uint64_t b = a ? s2_page_alloc(vm, set_pages(), S2_PAGE_SIZE) : 0;
	if (!b) {
		if (a)
			vm->be->page_free(vm->be_ctx, a, set_pages());
		return S2_E_NOMEM;
	}
	vm->set_buf[as][0] = (struct s2_slotset *)(uintptr_t)a;
	vm->set_buf[as][1] = (struct s2_slotset *)(uintptr_t)b;
	__atomic_store_n(&vm->active[as], vm->set_buf[as][0], __ATOMIC_SEQ_CST);
	return 0;
}

void s2_slots_destroy(struct s2_vm *vm)
{
	for (unsigned as = 0; as < S2_NR_AS; as++) {
		for (unsigned i = 0; i < 2; i++) {
			if (vm->set_buf[as][i])
				vm->be->page_free(vm->be_ctx,
						  (uint64_t)(uintptr_t)vm->set_buf[as][i],
						  set_pages());
		}
	}
}

// ---- readers (fault path) -------------------------------------------------------

struct s2_slotset *s2_slots_enter(struct s2_vm *vm, unsigned as)
{
	for (;;) {
		struct s2_slotset *s = __atomic_load_n(&vm->active[as], __ATOMIC_SEQ_CST);

		if (!s)
			return NULL;
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

const struct s2_slot *s2_slots_lookup(const struct s2_slotset *s, uint64_t gpa)
{
	unsigned lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const struct s2_slot *sl = &s->slots[mid];

		if (gpa < sl->gpa)
			hi = mid;
		else if (gpa >= sl->gpa + sl->size)
			lo = mid + 1;
		else
			return (sl->flags & S2_SLOT_INVALID) ? NULL : sl;
	}
	return NULL;
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

uint64_t s2_slots_generation(struct s2_vm *vm)
{
	return __atomic_load_n(&vm->generation, __ATOMIC_ACQUIRE);
}

// ---- updates ------------------------------------------------------------------

// Swaps in `next` and waits until no reader uses the previous set.
static void publish(struct s2_vm *vm, unsigned as, struct s2_slotset *next)
{
	struct s2_slotset *prev = vm->active[as];

	__atomic_store_n(&vm->active[as], next, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&prev->readers, __ATOMIC_SEQ_CST)) {
		if (vm->be->cpu_relax)
			vm->be->cpu_relax(vm->be_ctx);
	}
}

static struct s2_slotset *inactive(struct s2_vm *vm, unsigned as)
{
	return vm->active[as] == vm->set_buf[as][0] ? vm->set_buf[as][1] : vm->set_buf[as][0];
}

static void copy_set(struct s2_slotset *dst, const struct s2_slotset *src)
{
	dst->n = src->n;
	memcpy(dst->slots, src->slots, src->n * sizeof(src->slots[0]));
}

static int find_id(const struct s2_slotset *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->slots[i].id == id)
			return (int)i;
	}
	return -1;
}

static void remove_at(struct s2_slotset *s, unsigned i)
{
	memmove(&s->slots[i], &s->slots[i + 1], (s->n - i - 1) * sizeof(s->slots[0]));
	s->n--;
}

static void insert_sorted(struct s2_slotset *s, const struct s2_slot *sl)
{
	unsigned i = 0;

	while (i < s->n && s->slots[i].gpa < sl->gpa)
		i++;
	memmove(&s->slots[i + 1], &s->slots[i], (s->n - i) * sizeof(s->slots[0]));
	s->slots[i] = *sl;
	s->n++;
}

// Does [gpa, gpa + size) overlap a slot other than `skip_id`?
static bool overlaps(const struct s2_slotset *s, uint64_t gpa, uint64_t size, int64_t skip_id)
{
	for (unsigned i = 0; i < s->n; i++) {
		const struct s2_slot *sl = &s->slots[i];

		if ((int64_t)sl->id == skip_id)
			continue;
		if (gpa < sl->gpa + sl->size && sl->gpa < gpa + size)
			return true;
	}
	return false;
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
};

static int validate(struct s2_vm *vm, unsigned as, const struct slot_req *rq, int *idx)
{
	const struct s2_slotset *cur = vm->active[as];
	int i = find_id(cur, rq->id);
	int r;

	*idx = i;
	if (rq->op == SLOT_ADD) {
		if (rq->flags & ~(S2_SLOT_READONLY | S2_SLOT_DEVICE))
			return S2_E_INVAL;
		r = check_geometry(vm, rq->gpa, rq->size, rq->hpa);
		if (r)
			return r;
		if (i >= 0)
			return S2_E_EXIST;
		if (overlaps(cur, rq->gpa, rq->size, -1))
			return S2_E_OVERLAP;
		return cur->n >= S2_MAX_SLOTS ? S2_E_FULL : 0;
	}
	if (i < 0)
		return S2_E_NOENT;
	if (rq->op == SLOT_MOVE) {
		const struct s2_slot *sl = &cur->slots[i];

		r = check_geometry(vm, rq->gpa, sl->size, sl->hpa);
		if (r)
			return r;
		return overlaps(cur, rq->gpa, sl->size, rq->id) ? S2_E_OVERLAP : 0;
	}
	if (rq->op == SLOT_FLAGS && (rq->flags & ~(S2_SLOT_READONLY | S2_SLOT_DEVICE)))
		return S2_E_INVAL;
	return 0;
}

static int slot_update(struct s2_vm *vm, unsigned as, const struct slot_req *rq)
{
	int idx, r;

	if (!vm)
		return S2_E_INVAL;
	if (as >= S2_NR_AS)
		return S2_E_AS;
	mm_spin_lock(&vm->slots_lock);
	r = ensure_sets(vm, as);
	if (!r)
		r = validate(vm, as, rq, &idx);
	if (r) {
		mm_spin_unlock(&vm->slots_lock);
		return r;
	}
	struct s2_slotset *next = inactive(vm, as);
	struct s2_slot old = idx >= 0 ? vm->active[as]->slots[idx] : (struct s2_slot){0};

	gen_begin(vm);
	if (rq->op != SLOT_ADD) {
		// 1. INVALID copy, swap, drain; 2. zap the old range.
		copy_set(next, vm->active[as]);
		next->slots[idx].flags |= S2_SLOT_INVALID;
		next->generation = vm->generation;
		publish(vm, as, next);
		zap_old(vm, as, old.gpa, old.size);
		next = inactive(vm, as);
	}
	// 3. Final set.
	copy_set(next, vm->active[as]);
	if (rq->op == SLOT_ADD) {
		struct s2_slot sl = {.id = rq->id,
				     .as = (uint16_t)as,
				     .flags = (uint16_t)rq->flags,
				     .gpa = rq->gpa,
				     .size = rq->size,
				     .hpa = rq->hpa};
		insert_sorted(next, &sl);
	} else {
		remove_at(next, (unsigned)idx);
		if (rq->op == SLOT_MOVE)
			old.gpa = rq->gpa;
		if (rq->op == SLOT_FLAGS)
			old.flags = (uint16_t)rq->flags;
		if (rq->op != SLOT_DELETE)
			insert_sorted(next, &old);
	}
	next->generation = gen_next(vm);
	publish(vm, as, next);
	gen_end(vm, next->generation);
	mm_spin_unlock(&vm->slots_lock);
	return 0;
}

int s2_slot_add(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t gpa, uint64_t size,
		uint64_t hpa, unsigned flags)
{
	struct slot_req rq = {SLOT_ADD, id, gpa, size, hpa, flags};
	return slot_update(vm, as, &rq);
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
