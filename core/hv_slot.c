// SPDX-License-Identifier: Apache-2.0
//
// Memslots of secondary VMs (core/hv_internal.h): a slot is a list of the
// primary's frames (the pages its VMM pinned), copied into deposited pages,
// checked and shared in the ownership table before the engine sees the slot,
// mapped lazily by the engine's fault path (largest leaf the frames allow,
// up to 2 MiB), and given back to the primary only after the engine's
// slot-scoped zap and flush.
//
// Prepare/commit: ADD copies and checks everything, then shares the frames
// in chunks of one list page (a later chunk's refusal unshares the earlier
// ones), then adds the engine slot (a refusal unshares all). Nothing is
// visible to a vCPU before the engine's add.
#include "core/hv_internal.h"
#include "core/log.h"
#include "core/mem.h"

#define HV_LIST_PER_PAGE 512u

_Static_assert(HV_SLOTS_PER_PAGE >= 32, "slot records are packed");
_Static_assert(HV_SLOT_INLINE * sizeof(uint64_t) <= 64, "inline frames stay small");

// ---- frame lists --------------------------------------------------------------------
static uint64_t *leaf_of(const struct hv_slot *s, uint64_t i)
{
	if (s->pages <= HV_SLOT_INLINE)
		return (uint64_t *)s->inl;
	if (s->pages <= HV_LIST_PER_PAGE)
		return (uint64_t *)(uintptr_t)s->list;
	return (uint64_t *)(uintptr_t)((uint64_t *)(uintptr_t)s->list)[i / HV_LIST_PER_PAGE];
}

static uint64_t pfn_at(const struct hv_slot *s, uint64_t i)
{
	return leaf_of(s, i)[s->pages <= HV_SLOT_INLINE ? i : i % HV_LIST_PER_PAGE];
}

static uint64_t slot_page_hpa(const struct s2_backing *b, uint64_t i)
{
	return pfn_at((const struct hv_slot *)b, i) << OWN_FRAME_SHIFT;
}

static bool slot_contiguous(const struct s2_backing *b, uint64_t i, uint64_t n)
{
	const struct hv_slot *s = (const struct hv_slot *)b;
	uint64_t first = pfn_at(s, i);

	for (uint64_t k = 1; k < n; k++)
		if (pfn_at(s, i + k) != first + k)
			return false;
	return true;
}

static uint64_t leaves_of(uint64_t pages)
{
	return pages <= HV_SLOT_INLINE ? 0 : (pages + HV_LIST_PER_PAGE - 1) / HV_LIST_PER_PAGE;
}

// Frees the slot's list pages (not the record).
static void list_free(struct hv_vm *vm, struct hv_slot *s)
{
	uint64_t n = leaves_of(s->pages);

	if (!s->list)
		return;
	if (n > 1)
		for (uint64_t i = 0; i < n; i++)
			if (((uint64_t *)(uintptr_t)s->list)[i])
				hv_page_free(&vm->vm, ((uint64_t *)(uintptr_t)s->list)[i]);
	if (s->list)
		hv_page_free(&vm->vm, s->list);
	s->list = 0;
}

static int list_alloc(struct hv_vm *vm, struct hv_slot *s)
{
	uint64_t n = leaves_of(s->pages);

	if (!n)
		return HC_OK;
	s->list = hv_page_alloc(&vm->vm);
	if (!s->list)
		return HC_E_NOMEM;
	for (uint64_t i = 0; n > 1 && i < n; i++) {
		uint64_t pa = hv_page_alloc(&vm->vm);
		if (!pa) {
			list_free(vm, s);
			return HC_E_NOMEM;
		}
		((uint64_t *)(uintptr_t)s->list)[i] = pa;
	}
	return HC_OK;
}

// Copies the primary's frame numbers (a list page, or a directory of list
// pages for more than 512) into the slot's own list. *bad: the list index of
// a refused frame, or the directory index of a refused list page.
// A frame the VM may take: the primary's, with the precise refusal otherwise.
static int frame_free_for(uint32_t vm_id, uint64_t pfn)
{
	enum own_state st;
	uint32_t owner;
	int r = own_get(&hv.own, pfn, &st, &owner);

	if (r)
		return r;
	if (st == OWN_PRIMARY)
		return HC_OK;
	if (st == OWN_SLAT)
		return HC_E_SLAT;
	return owner == vm_id ? HC_E_ALREADY_SHARED : HC_E_OTHER_VM;
}

static int list_copy(struct hv_slot *s, uint32_t vm_id, uint64_t src_pa, uint64_t *bad)
{
	const uint64_t *dir = NULL, *src = NULL;
	int r;

	if (s->pages > HV_LIST_PER_PAGE && (r = hv_primary_page(src_pa, (void **)&dir)))
		return r;
	for (uint64_t i = 0; i < s->pages; i++) {
		uint64_t k = i % HV_LIST_PER_PAGE;
		if (!dir && i == 0 && (r = hv_primary_page(src_pa, (void **)&src)))
			return r;
		if (dir && k == 0) {
			uint64_t lp = dir[i / HV_LIST_PER_PAGE];
			*bad = i / HV_LIST_PER_PAGE;
			if (lp >> (OWN_PFN_BITS))
				return HC_E_RANGE;
			if ((r = hv_primary_page(lp << OWN_FRAME_SHIFT, (void **)&src)))
				return r;
		}
		uint64_t pfn = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		*bad = i;
		if (pfn >> OWN_PFN_BITS)
			return HC_E_RANGE;
		if ((r = frame_free_for(vm_id, pfn)))
			return r;
		leaf_of(s, i)[s->pages <= HV_SLOT_INLINE ? i : k] = pfn;
	}
	return HC_OK;
}

// Shares (or unshares) the slot's frames, one list page per ownership
// request. A refusal undoes the chunks already done.
static int frames_op(struct hv_vm *vm, struct hv_slot *s, enum own_op op, uint64_t *bad)
{
	enum own_op undo = op == OWN_OP_SHARE ? OWN_OP_UNSHARE : OWN_OP_SHARE;
	uint64_t chunk = s->pages <= HV_SLOT_INLINE ? s->pages : HV_LIST_PER_PAGE;

	for (uint64_t i = 0; i < s->pages; i += chunk) {
		uint64_t n = s->pages - i < chunk ? s->pages - i : chunk, b = 0;
		int r = own_list_op(&hv.own, op, vm->vm.id, leaf_of(s, i), n, &b);
		if (r) {
			*bad = i + b;
			for (uint64_t j = 0; j < i; j += chunk)
				own_list_op(&hv.own, undo, vm->vm.id, leaf_of(s, j), chunk, &b);
			return r;
		}
	}
	return HC_OK;
}

// ---- slot records -------------------------------------------------------------------
static struct hv_slot **dir_entry(struct hv_vm *vm, uint32_t id)
{
	uint64_t d = vm->slot_dir[id / HV_PTRS_PER_PAGE];

	return d ? &((struct hv_slot **)(uintptr_t)d)[id % HV_PTRS_PER_PAGE] : NULL;
}

// Pages the VM's slot tables would need for one more slot `id`: its
// directory page and a page of records, taken before anything else so that a
// refused ADD can give exactly these back (nothing changes).
struct slot_tables {
	uint64_t dir, recs;
};

static int tables_prepare(struct hv_vm *vm, uint32_t id, struct slot_tables *t)
{
	*t = (struct slot_tables){0};
	if (!vm->slot_dir[id / HV_PTRS_PER_PAGE] && !(t->dir = hv_page_alloc(&vm->vm)))
		return HC_E_NOMEM;
	if (!vm->slot_free && !(t->recs = hv_page_alloc(&vm->vm))) {
		if (t->dir)
			hv_page_free(&vm->vm, t->dir);
		return HC_E_NOMEM;
	}
	return HC_OK;
}

// Puts a fresh page of records on the VM's free list.
static void recs_add(struct hv_vm *vm, uint64_t pa)
{
	struct hv_slot *recs = (struct hv_slot *)(uintptr_t)pa;

	for (unsigned i = 0; i < HV_SLOTS_PER_PAGE; i++) {
		recs[i].list = (uint64_t)(uintptr_t)vm->slot_free; // free-list link
		vm->slot_free = &recs[i];
	}
	*(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8) = vm->slot_pages;
	vm->slot_pages = pa;
}

// Undoes recs_add when every record of the newest page is free again: they
// are then exactly the first HV_SLOTS_PER_PAGE entries of the free list.
static void recs_remove_newest(struct hv_vm *vm)
{
	uint64_t pa = vm->slot_pages;

	for (unsigned i = 0; i < HV_SLOTS_PER_PAGE; i++)
		vm->slot_free = (struct hv_slot *)(uintptr_t)vm->slot_free->list;
	vm->slot_pages = *(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8);
	hv_page_free(&vm->vm, pa);
}

static struct hv_slot *rec_alloc(struct hv_vm *vm)
{
	struct hv_slot *s = vm->slot_free;
	vm->slot_free = (struct hv_slot *)(uintptr_t)s->list;
	memset(s, 0, sizeof(*s));
	return s;
}

static void rec_free(struct hv_vm *vm, struct hv_slot *s)
{
	memset(s, 0, sizeof(*s));
	s->list = (uint64_t)(uintptr_t)vm->slot_free;
	vm->slot_free = s;
}

// ---- SLOT_SET --------------------------------------------------------------------------
static int slot_add(struct hv_vm *vm, const struct hc_call *c, uint64_t *bad)
{
	struct hv_slot **e = dir_entry(vm, c->slot);
	struct slot_tables t;

	if (e && *e)
		return HC_E_EXISTS;
	int r = tables_prepare(vm, c->slot, &t);
	if (r)
		return r;
	struct hv_slot s_local = {0}, *s = &s_local; // the record is taken at commit
	s->b = (struct s2_backing){slot_page_hpa, slot_contiguous, 1};
	s->gpa = c->gpa;
	s->pages = c->count;
	s->id = c->slot;
	r = list_alloc(vm, s);
	if (!r)
		r = list_copy(s, vm->vm.id, c->pa, bad);
	if (!r)
		r = frames_op(vm, s, OWN_OP_SHARE, bad);
	if (r)
		goto fail;
	// Commit: the tables' pages join the VM, the record gets its place; the
	// engine's add is the last step that can refuse (then all is undone).
	if (t.dir)
		vm->slot_dir[c->slot / HV_PTRS_PER_PAGE] = t.dir;
	if (t.recs)
		recs_add(vm, t.recs);
	s = rec_alloc(vm);
	*s = s_local;
	r = hv_err_of_s2(
	    s2_slot_add_backed(vm->s2, 0, c->slot, c->gpa, c->count * HV_PAGE, &s->b, 0));
	if (r) {
		uint64_t b;
		frames_op(vm, s, OWN_OP_UNSHARE, &b);
		list_free(vm, s);
		rec_free(vm, s);
		if (t.recs)
			recs_remove_newest(vm);
		if (t.dir) {
			vm->slot_dir[c->slot / HV_PTRS_PER_PAGE] = 0;
			hv_page_free(&vm->vm, t.dir);
		}
		return r;
	}
	s->used = 1;
	*dir_entry(vm, c->slot) = s;
	vm->nslots++;
	vm->slot_frames += s->pages;
	return HC_OK;
fail:
	list_free(vm, s);
	if (t.dir)
		hv_page_free(&vm->vm, t.dir);
	if (t.recs)
		hv_page_free(&vm->vm, t.recs);
	return r;
}

static void slot_drop(struct hv_vm *vm, struct hv_slot *s)
{
	uint64_t b;
	int r = frames_op(vm, s, OWN_OP_UNSHARE, &b);

	if (r) // the table said these frames were shared with this VM
		log_err("hv: vm %u slot %u: unshare refused (%d at %llu)\n", vm->vm.id, s->id, r,
			(unsigned long long)b);
	vm->nslots--;
	vm->slot_frames -= s->pages;
	list_free(vm, s);
	rec_free(vm, s);
}

int hv_slot_set(const struct hc_call *c, uint64_t *bad)
{
	struct hv_vm *vm = hv_vm_find(c->vm);

	if (!vm)
		return HC_E_BAD_VM;
	if (c->op == HC_SLOT_ADD)
		return slot_add(vm, c, bad);
	struct hv_slot **e = dir_entry(vm, c->slot);
	if (!e || !*e)
		return HC_E_BAD_SLOT;
	if (c->op == HC_SLOT_MOVE) {
		int r = hv_err_of_s2(s2_slot_move(vm->s2, 0, c->slot, c->gpa));
		if (!r)
			(*e)->gpa = c->gpa;
		return r;
	}
	// DELETE: returns once no CPU can use a translation of the slot.
	int r = hv_err_of_s2(s2_slot_delete(vm->s2, 0, c->slot));
	if (r)
		return r;
	slot_drop(vm, *e);
	*e = NULL;
	return HC_OK;
}

void hv_slots_release(struct hv_vm *vm)
{
	for (unsigned d = 0; d < HV_SLOT_DIR_PAGES; d++) {
		struct hv_slot **dir = (struct hv_slot **)(uintptr_t)vm->slot_dir[d];
		for (unsigned i = 0; dir && i < HV_PTRS_PER_PAGE; i++)
			if (dir[i])
				slot_drop(vm, dir[i]);
		if (dir)
			hv_page_free(&vm->vm, vm->slot_dir[d]);
		vm->slot_dir[d] = 0;
	}
	while (vm->slot_pages) {
		uint64_t pa = vm->slot_pages;
		vm->slot_pages = *(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8);
		hv_page_free(&vm->vm, pa);
	}
	vm->slot_free = NULL;
}
