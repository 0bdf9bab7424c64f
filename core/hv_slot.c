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
// A slot's frame numbers: inline in the record (<= HV_SLOT_INLINE pages), or
// a tree of deposited pages, `levels` deep: level 1 pages hold 512 frame
// numbers (list pages), higher ones the addresses of 512 pages one level
// down (directories). One list page: <= 512 pages; a directory of lists:
// <= 512^2 (1 GiB, the most a pinned ADD passes); a directory of
// directories: up to HC_SLOT_LAZY_MAX_PAGES. The tree is built whole at ADD
// (8 bytes per page, as KVM's per-page arrays) and never changes shape until
// the slot is deleted, so the fault path walks it without a lock.
#define HV_LIST_SHIFT	   9u
#define HV_LIST_MAX_LEVELS 3u

_Static_assert(HC_SLOT_LAZY_MAX_PAGES <= 1ull << (HV_LIST_SHIFT * HV_LIST_MAX_LEVELS),
	       "three levels of list pages hold the largest slot");
_Static_assert(HC_SLOT_PINNED_MAX_PAGES == 1ull << (HV_LIST_SHIFT * 2),
	       "a pinned ADD's directory of list pages is two levels");
_Static_assert(HC_SLOT_LAZY_MAX_PAGES == S2_DIRTY_MAX_PAGES, "a lazy slot of any size can log");

static unsigned list_levels(uint64_t pages)
{
	if (pages <= HV_SLOT_INLINE)
		return 0;
	unsigned lv = 1;
	while (pages > 1ull << (HV_LIST_SHIFT * lv))
		lv++;
	return lv;
}

static uint64_t *leaf_of(const struct hv_slot *s, uint64_t i)
{
	unsigned lv = list_levels(s->pages);

	if (!lv)
		return (uint64_t *)s->inl;
	uint64_t pa = s->list;
	for (; lv > 1; lv--) { // a directory: its entry for the span holding page i
		const uint64_t *dir = (const uint64_t *)(uintptr_t)pa;
		pa = dir[(i >> (HV_LIST_SHIFT * (lv - 1))) % HV_LIST_PER_PAGE];
	}
	return (uint64_t *)(uintptr_t)pa;
}

// The fault path reads a page's frame while FILL and DROP may change it:
// every frame number is one atomic 8-byte word (a fault sees the old or the
// new one; DROP's drain and zap make the old one harmless).
static uint64_t *pfn_slot(const struct hv_slot *s, uint64_t i)
{
	return &leaf_of(s, i)[s->pages <= HV_SLOT_INLINE ? i : i % HV_LIST_PER_PAGE];
}

static uint64_t pfn_at(const struct hv_slot *s, uint64_t i)
{
	return __atomic_load_n(pfn_slot(s, i), __ATOMIC_ACQUIRE);
}

static void pfn_set(const struct hv_slot *s, uint64_t i, uint64_t pfn)
{
	__atomic_store_n(pfn_slot(s, i), pfn, __ATOMIC_RELEASE);
}

static uint64_t slot_page_hpa(const struct s2_backing *b, uint64_t i)
{
	uint64_t pfn = pfn_at((const struct hv_slot *)b, i);

	return pfn & HV_PFN_DROPPING ? S2_HPA_ABSENT : pfn << OWN_FRAME_SHIFT;
}

static bool slot_contiguous(const struct s2_backing *b, uint64_t i, uint64_t n)
{
	const struct hv_slot *s = (const struct hv_slot *)b;
	uint64_t first = pfn_at(s, i);

	if (first & HV_PFN_DROPPING) // absent or being dropped
		return false;
	for (uint64_t k = 1; k < n; k++)
		if (pfn_at(s, i + k) != first + k)
			return false;
	return true;
}

// Deposited pages the list tree of a slot of `pages` pages takes.
static uint64_t list_pages(uint64_t pages)
{
	uint64_t total = 0;

	for (unsigned lv = list_levels(pages); lv > 0; lv--) {
		pages = (pages + HV_LIST_PER_PAGE - 1) / HV_LIST_PER_PAGE;
		total += pages;
	}
	return total;
}

// Frees the table `pa` at `level` and everything under it (a directory's
// unused entries are 0: its page was zeroed).
static void table_free(struct vm *vm, uint64_t pa, unsigned level)
{
	const uint64_t *t = (const uint64_t *)(uintptr_t)pa;

	for (unsigned i = 0; level > 1 && i < HV_LIST_PER_PAGE; i++)
		if (t[i])
			table_free(vm, t[i], level - 1);
	hv_page_free(vm, pa);
}

// A table at `level` for `pages` pages, with everything under it; 0 when the
// deposit ran out (then nothing is kept).
static uint64_t table_alloc(struct vm *vm, unsigned level, uint64_t pages)
{
	uint64_t pa = hv_page_alloc(vm), span = 1ull << (HV_LIST_SHIFT * (level - 1));

	if (!pa || level == 1)
		return pa;
	uint64_t *t = (uint64_t *)(uintptr_t)pa;
	for (uint64_t i = 0; i * span < pages; i++) {
		uint64_t left = pages - i * span;
		if (!(t[i] = table_alloc(vm, level - 1, left < span ? left : span))) {
			table_free(vm, pa, level);
			return 0;
		}
	}
	return pa;
}

// Frees the slot's list pages (not the record).
static void list_free(struct vm *vm, struct hv_slot *s)
{
	if (s->list)
		table_free(vm, s->list, list_levels(s->pages));
	s->list = 0;
}

// The whole tree or nothing. A deposit too small for it is refused before
// anything is taken: the primary deposits a chunk at a time and asks again,
// and a 64 GiB slot's 32833 pages would otherwise be taken and zeroed on
// every try.
static int list_alloc(struct vm *vm, struct hv_slot *s)
{
	unsigned lv = list_levels(s->pages);

	if (!lv)
		return HC_OK;
	if (hv_depot_nfree(&hv.depot) < list_pages(s->pages))
		return HC_E_NOMEM;
	s->list = table_alloc(vm, lv, s->pages);
	return s->list ? HC_OK : HC_E_NOMEM;
}

// Copies the primary's frame numbers (a list page, or a directory of list
// pages for more than 512; hc_decode keeps a pinned ADD within
// HC_SLOT_PINNED_MAX_PAGES, two levels) into the slot's own list. *bad: the list index of
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
static int frames_op(struct vm *vm, struct hv_slot *s, enum own_op op, uint64_t *bad)
{
	enum own_op undo = op == OWN_OP_SHARE ? OWN_OP_UNSHARE : OWN_OP_SHARE;
	uint64_t chunk = s->pages <= HV_SLOT_INLINE ? s->pages : HV_LIST_PER_PAGE;

	for (uint64_t i = 0; i < s->pages; i += chunk) {
		uint64_t n = s->pages - i < chunk ? s->pages - i : chunk, b = 0;
		int r = own_list_op(&hv.own, op, vm->id, leaf_of(s, i), n, &b);
		if (r) {
			*bad = i + b;
			for (uint64_t j = 0; j < i; j += chunk)
				own_list_op(&hv.own, undo, vm->id, leaf_of(s, j), chunk, &b);
			return r;
		}
	}
	return HC_OK;
}

// ---- slot records -------------------------------------------------------------------
static struct hv_slot **dir_entry(struct vm *vm, uint32_t id)
{
	uint64_t d = vm->hv.slot_dir[id / HV_PTRS_PER_PAGE];

	return d ? &((struct hv_slot **)(uintptr_t)d)[id % HV_PTRS_PER_PAGE] : NULL;
}

// Pages the VM's slot tables would need for one more slot `id`: its
// directory page and a page of records, taken before anything else so that a
// refused ADD can give exactly these back (nothing changes).
struct slot_tables {
	uint64_t dir, recs;
};

static int tables_prepare(struct vm *vm, uint32_t id, struct slot_tables *t)
{
	*t = (struct slot_tables){0};
	if (!vm->hv.slot_dir[id / HV_PTRS_PER_PAGE] && !(t->dir = hv_page_alloc(vm)))
		return HC_E_NOMEM;
	if (!vm->hv.slot_free && !(t->recs = hv_page_alloc(vm))) {
		if (t->dir)
			hv_page_free(vm, t->dir);
		return HC_E_NOMEM;
	}
	return HC_OK;
}

// Puts a fresh page of records on the VM's free list.
static void recs_add(struct vm *vm, uint64_t pa)
{
	struct hv_slot *recs = (struct hv_slot *)(uintptr_t)pa;

	for (unsigned i = 0; i < HV_SLOTS_PER_PAGE; i++) {
		recs[i].list = (uint64_t)(uintptr_t)vm->hv.slot_free; // free-list link
		vm->hv.slot_free = &recs[i];
	}
	*(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8) = vm->hv.slot_pages;
	vm->hv.slot_pages = pa;
}

// Undoes recs_add when every record of the newest page is free again: they
// are then exactly the first HV_SLOTS_PER_PAGE entries of the free list.
static void recs_remove_newest(struct vm *vm)
{
	uint64_t pa = vm->hv.slot_pages;

	for (unsigned i = 0; i < HV_SLOTS_PER_PAGE; i++)
		vm->hv.slot_free = (struct hv_slot *)(uintptr_t)vm->hv.slot_free->list;
	vm->hv.slot_pages = *(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8);
	hv_page_free(vm, pa);
}

static struct hv_slot *rec_alloc(struct vm *vm)
{
	struct hv_slot *s = vm->hv.slot_free;
	vm->hv.slot_free = (struct hv_slot *)(uintptr_t)s->list;
	memset(s, 0, sizeof(*s));
	return s;
}

static void rec_free(struct vm *vm, struct hv_slot *s)
{
	memset(s, 0, sizeof(*s));
	s->list = (uint64_t)(uintptr_t)vm->hv.slot_free;
	vm->hv.slot_free = s;
}

// ---- SLOT_SET --------------------------------------------------------------------------
// ADD (frames from the list) or ADD_EMPTY (every page absent, no frame taken).
static int slot_add(struct vm *vm, const struct hc_call *c, uint64_t *bad)
{
	bool empty = c->op == HC_SLOT_ADD_EMPTY;
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
	s->pages = (uint32_t)c->count;
	s->id = c->slot;
	s->present = empty ? 0 : (uint32_t)c->count;
	r = list_alloc(vm, s);
	for (uint64_t i = 0; !r && empty && i < s->pages; i++)
		pfn_set(s, i, HV_PFN_ABSENT);
	if (!r && !empty)
		r = list_copy(s, vm->id, c->pa, bad);
	if (!r && !empty)
		r = frames_op(vm, s, OWN_OP_SHARE, bad);
	if (r)
		goto fail;
	// Commit: the tables' pages join the VM, the record gets its place; the
	// engine's add is the last step that can refuse (then all is undone).
	if (t.dir)
		vm->hv.slot_dir[c->slot / HV_PTRS_PER_PAGE] = t.dir;
	if (t.recs)
		recs_add(vm, t.recs);
	s = rec_alloc(vm);
	*s = s_local;
	unsigned flags = ((c->flags & HC_SLOT_F_READONLY) ? S2_SLOT_READONLY : 0) |
			 ((c->flags & HC_SLOT_F_DIRTY_LOG) ? S2_SLOT_DIRTY_LOG : 0);
	r = hv_err_of_s2(
	    s2_slot_add_backed(vm->hv.s2, 0, c->slot, c->gpa, c->count * HV_PAGE, &s->b, flags));
	if (r) {
		uint64_t b;
		if (!empty)
			frames_op(vm, s, OWN_OP_UNSHARE, &b);
		list_free(vm, s);
		rec_free(vm, s);
		if (t.recs)
			recs_remove_newest(vm);
		if (t.dir) {
			vm->hv.slot_dir[c->slot / HV_PTRS_PER_PAGE] = 0;
			hv_page_free(vm, t.dir);
		}
		return r;
	}
	s->used = 1;
	*dir_entry(vm, c->slot) = s;
	vm->hv.nslots++;
	vm->hv.slot_frames += s->present;
	return HC_OK;
fail:
	list_free(vm, s);
	if (t.dir)
		hv_page_free(vm, t.dir);
	if (t.recs)
		hv_page_free(vm, t.recs);
	return r;
}

// Gives one frame of the slot back to the primary (after the zap and flush).
static void frame_unshare(struct vm *vm, const struct hv_slot *s, uint64_t pfn)
{
	uint64_t b;
	int r = own_list_op(&hv.own, OWN_OP_UNSHARE, vm->id, &pfn, 1, &b);

	if (r) // the table said this frame was shared with this VM
		log_err("hv: vm %u slot %u: unshare of frame 0x%llx refused (%d)\n", vm->id, s->id,
			(unsigned long long)pfn, r);
}

static void slot_drop(struct vm *vm, struct hv_slot *s)
{
	uint64_t b;
	int r = 0;

	if (s->present == s->pages) // every page has a frame: whole list pages at once
		r = frames_op(vm, s, OWN_OP_UNSHARE, &b);
	else
		for (uint64_t i = 0; i < s->pages; i++)
			if (pfn_at(s, i) != HV_PFN_ABSENT)
				frame_unshare(vm, s, pfn_at(s, i));
	if (r) // the table said these frames were shared with this VM
		log_err("hv: vm %u slot %u: unshare refused (%d at %llu)\n", vm->id, s->id, r,
			(unsigned long long)b);
	vm->hv.nslots--;
	vm->hv.slot_frames -= s->present;
	list_free(vm, s);
	rec_free(vm, s);
}

// ---- lazy slots: FILL and DROP ----------------------------------------------------------
// FILL: frames for pages [first, first + count) that have none. The list is
// copied into a deposited page, then every frame and page is checked (the
// primary's RAM, not twice in the list, the page without a frame), then the
// frames are shared in one ownership request, then stored. *bad: the list
// index of a refused frame or page.
static int slot_fill(struct vm *vm, struct hv_slot *s, const struct hc_call *c, uint64_t *bad)
{
	uint64_t first = c->gpa, n = c->count, *src, *list;
	int r;

	if (first >= s->pages || n > s->pages - first)
		return HC_E_RANGE;
	if ((r = hv_primary_page(c->pa, (void **)&src)))
		return r;
	uint64_t scratch = hv_page_alloc(vm);
	if (!scratch)
		return HC_E_NOMEM;
	list = (uint64_t *)(uintptr_t)scratch;
	for (uint64_t i = 0; i < n; i++)
		list[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	for (uint64_t i = 0; !r && i < n; i++) {
		*bad = i;
		if (list[i] >> OWN_PFN_BITS)
			r = HC_E_RANGE;
		else if (pfn_at(s, first + i) != HV_PFN_ABSENT)
			r = HC_E_EXISTS;
		else if ((r = frame_free_for(vm->id, list[i])) == HC_OK)
			for (uint64_t k = 0; k < i && !r; k++)
				if (list[k] == list[i])
					r = HC_E_ALREADY_SHARED; // a frame backs one page
	}
	if (!r)
		r = own_list_op(&hv.own, OWN_OP_SHARE, vm->id, list, n, bad);
	if (!r) {
		for (uint64_t i = 0; i < n; i++)
			pfn_set(s, first + i, list[i]);
		s->present += n;
		vm->hv.slot_frames += n;
	}
	hv_page_free(vm, scratch);
	return r;
}

// DROP: pages [first, first + count) lose their frames, 512 at a time: each
// frame is marked (the fault path sees the page absent from then on), the
// engine drains its faults and zaps the range (flushed), then the frames go
// back to the primary and the pages become absent. Takes no memory, so it
// cannot fail for want of it (the primary's MMU notifier calls it).
// *dropped: how many frames went back.
static int slot_drop_pages(struct vm *vm, struct hv_slot *s, const struct hc_call *c,
			   uint64_t *dropped)
{
	uint64_t first = c->gpa, n = c->count;

	if (first >= s->pages || n > s->pages - first)
		return HC_E_RANGE;
	*dropped = 0;
	for (uint64_t at = first; at < first + n; at += HV_LIST_PER_PAGE) {
		uint64_t end =
		    at + HV_LIST_PER_PAGE < first + n ? at + HV_LIST_PER_PAGE : first + n;
		uint64_t k = 0;
		for (uint64_t i = at; i < end; i++) {
			uint64_t pfn = pfn_at(s, i);
			if (pfn == HV_PFN_ABSENT)
				continue;
			pfn_set(s, i, pfn | HV_PFN_DROPPING);
			k++;
		}
		if (!k)
			continue;
		int r = s2_slot_zap_pages(vm->hv.s2, 0, s->id, at, end - at);
		if (r) // the slot and range were checked: the engine agrees
			log_err("hv: vm %u slot %u: zap of pages %llu+%llu failed (%d)\n", vm->id,
				s->id, (unsigned long long)at, (unsigned long long)(end - at), r);
		for (uint64_t i = at; i < end; i++) {
			uint64_t pfn = pfn_at(s, i);
			if (pfn == HV_PFN_ABSENT)
				continue;
			frame_unshare(vm, s, pfn & ~HV_PFN_DROPPING);
			pfn_set(s, i, HV_PFN_ABSENT);
		}
		s->present -= (uint32_t)k;
		vm->hv.slot_frames -= k;
		*dropped += k;
	}
	return HC_OK;
}

// ---- dirty logging (ABI 1.9) ------------------------------------------------------
// LOG: the slot's flags in the engine with S2_SLOT_DIRTY_LOG set or clear (a
// flag change: the slot's leaves are zapped once, the bitmap made or freed).
static int slot_log(struct vm *vm, struct hv_slot *s, const struct hc_call *c)
{
	struct s2_slot cur;

	if (!s2_slot_find(vm->hv.s2, 0, s->gpa, &cur) || cur.id != c->slot)
		return HC_E_BAD_SLOT;
	unsigned flags = (cur.flags & ~S2_SLOT_DIRTY_LOG) | (c->gpa ? S2_SLOT_DIRTY_LOG : 0);
	return hv_err_of_s2(s2_slot_set_flags(vm->hv.s2, 0, c->slot, flags));
}

// DIRTY_GET, DIRTY_TAKE, DIRTY_CLEAR: the bits go to (or the mask comes
// from) one page the primary owns; a3 (c->gpa) is the first page.
static int slot_dirty(struct vm *vm, const struct hc_call *c)
{
	uint64_t *page;
	int r = hv_primary_page(c->pa, (void **)&page);

	if (r)
		return r;
	if (c->op == HC_SLOT_DIRTY_CLEAR)
		r = s2_slot_dirty_clear(vm->hv.s2, 0, c->slot, c->gpa, c->count, page);
	else
		r = s2_slot_dirty_get(vm->hv.s2, 0, c->slot, c->gpa, c->count, page,
				      c->op == HC_SLOT_DIRTY_TAKE);
	return hv_err_of_s2(r);
}

int hv_slot_set(const struct hc_call *c, uint64_t *bad)
{
	struct vm *vm = hv_vm_find(c->vm);

	if (!vm)
		return HC_E_BAD_VM;
	if (c->op == HC_SLOT_ADD || c->op == HC_SLOT_ADD_EMPTY)
		return slot_add(vm, c, bad);
	struct hv_slot **e = dir_entry(vm, c->slot);
	if (!e || !*e)
		return HC_E_BAD_SLOT;
	if (c->op == HC_SLOT_FILL)
		return slot_fill(vm, *e, c, bad);
	if (c->op == HC_SLOT_DROP)
		return slot_drop_pages(vm, *e, c, bad);
	if (c->op == HC_SLOT_LOG)
		return slot_log(vm, *e, c);
	if (c->op >= HC_SLOT_DIRTY_GET)
		return slot_dirty(vm, c);
	if (c->op == HC_SLOT_MOVE) {
		int r = hv_err_of_s2(s2_slot_move(vm->hv.s2, 0, c->slot, c->gpa));
		if (!r)
			(*e)->gpa = c->gpa;
		return r;
	}
	// DELETE: returns once no CPU can use a translation of the slot.
	int r = hv_err_of_s2(s2_slot_delete(vm->hv.s2, 0, c->slot));
	if (r)
		return r;
	slot_drop(vm, *e);
	*e = NULL;
	return HC_OK;
}

void hv_slots_release(struct vm *vm)
{
	for (unsigned d = 0; d < HV_SLOT_DIR_PAGES; d++) {
		struct hv_slot **dir = (struct hv_slot **)(uintptr_t)vm->hv.slot_dir[d];
		for (unsigned i = 0; dir && i < HV_PTRS_PER_PAGE; i++)
			if (dir[i])
				slot_drop(vm, dir[i]);
		if (dir)
			hv_page_free(vm, vm->hv.slot_dir[d]);
		vm->hv.slot_dir[d] = 0;
	}
	while (vm->hv.slot_pages) {
		uint64_t pa = vm->hv.slot_pages;
		vm->hv.slot_pages = *(uint64_t *)(uintptr_t)(pa + HV_PAGE - 8);
		hv_page_free(vm, pa);
	}
	vm->hv.slot_free = NULL;
}
