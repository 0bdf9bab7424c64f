// SPDX-License-Identifier: GPL-2.0
/*
 * Memory slots with KVM's SET_USER_MEMORY_REGION semantics: a new slot pins
 * the VMM's pages and gives Slat their frame numbers (SLOT_SET ADD); size 0
 * deletes (SLOT_SET DELETE, then unpin: Slat has flushed by then); the same
 * size and address at a new guest_phys_addr moves (SLOT_SET MOVE). The VMM
 * keeps access to its memory (the frames are shared, not donated).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/gfp.h>

#include "slat.h"

#define SLAT_PAGE_BYTES 4096ull

atomic64_t slat_pinned_pages;

static void slat_mslot_free(struct slat_mslot *ms)
{
	unpin_user_pages_dirty_lock(ms->pages, ms->npages, true);
	atomic64_sub(ms->npages, &slat_pinned_pages);
	kvfree(ms->pages);
	kfree(ms);
}

static int slat_pin(struct slat_mslot *ms)
{
	unsigned long done = 0;
	long got;

	ms->pages = kvmalloc_array(ms->npages, sizeof(*ms->pages), GFP_KERNEL);
	if (!ms->pages)
		return -ENOMEM;
	while (done < ms->npages) {
		got = pin_user_pages_fast(ms->uaddr + done * PAGE_SIZE, ms->npages - done,
					  FOLL_WRITE | FOLL_LONGTERM, ms->pages + done);
		if (got <= 0)
			break;
		done += got;
	}
	if (done < ms->npages) {
		unpin_user_pages(ms->pages, done);
		kvfree(ms->pages);
		return -EFAULT;
	}
	atomic64_add(done, &slat_pinned_pages);
	return 0;
}

/*
 * SLOT_SET ADD's list: npages <= HC_LIST_MAX frame numbers in one page, or a
 * directory page whose entries are the frame numbers of full list pages (the
 * last one partial). Returns Slat's status; the list pages are freed after.
 */
static long slat_slot_add_call(struct slat_vm *vm, u32 slot, const struct slat_mslot *ms)
{
	unsigned long nlists = DIV_ROUND_UP(ms->npages, HC_LIST_MAX), i;
	struct page **lists, *dir = NULL;
	u64 r[3], *dir_v, list_pa;
	long st = HC_E_NOMEM;

	lists = kcalloc(nlists, sizeof(*lists), GFP_KERNEL);
	if (!lists)
		return HC_E_NOMEM;
	for (i = 0; i < nlists; i++) {
		u64 *l;
		unsigned long j, base = i * HC_LIST_MAX;

		lists[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!lists[i])
			goto out;
		l = page_address(lists[i]);
		for (j = 0; j < HC_LIST_MAX && base + j < ms->npages; j++)
			l[j] = page_to_pfn(ms->pages[base + j]);
	}
	list_pa = slat_pa(lists[0]);
	if (nlists > 1) {
		dir = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!dir)
			goto out;
		dir_v = page_address(dir);
		for (i = 0; i < nlists; i++)
			dir_v[i] = page_to_pfn(lists[i]);
		list_pa = slat_pa(dir);
	}
	st = slat_call(HC_SLOT_SET, vm->id, slot, HC_SLOT_ADD, ms->gpa, list_pa, ms->npages, r);
out:
	if (dir)
		__free_page(dir);
	for (i = 0; i < nlists; i++)
		if (lists[i])
			__free_page(lists[i]);
	kfree(lists);
	return st;
}

static int slat_slot_add(struct slat_vm *vm, const struct slat_slot *s)
{
	struct slat_mslot *ms = kzalloc(sizeof(*ms), GFP_KERNEL);
	long st;
	int rc;

	if (!ms)
		return -ENOMEM;
	ms->gpa = s->guest_phys_addr;
	ms->size = s->memory_size;
	ms->uaddr = s->userspace_addr;
	ms->npages = s->memory_size / SLAT_PAGE_BYTES;
	rc = slat_pin(ms);
	if (rc) {
		kfree(ms);
		return rc;
	}
	st = slat_slot_add_call(vm, s->slot, ms);
	rc = slat_errno(st);
	if (!rc)
		rc = xa_err(xa_store(&vm->slots, s->slot, ms, GFP_KERNEL));
	if (rc) {
		/* Refused by Slat (nothing changed there) or no record: unpin. */
		if (!st)
			pr_err("slat: slot %u added but not recorded; left pinned\n", s->slot);
		else
			slat_mslot_free(ms);
	}
	return rc;
}

static int slat_slot_delete(struct slat_vm *vm, u32 slot, struct slat_mslot *ms)
{
	u64 r[3];
	long st = slat_call(HC_SLOT_SET, vm->id, slot, HC_SLOT_DELETE, 0, 0, 0, r);

	if (st != HC_OK)
		return slat_errno(st);
	/* DELETE returned: Slat has zapped and flushed; the frames are ours. */
	xa_erase(&vm->slots, slot);
	slat_mslot_free(ms);
	return 0;
}

static int slat_slot_check(const struct slat_slot *s)
{
	const u64 mask = SLAT_PAGE_BYTES - 1;

	if (s->flags || s->slot >= HC_MAX_SLOTS)
		return -EINVAL;
	if ((s->guest_phys_addr | s->memory_size | s->userspace_addr) & mask)
		return -EINVAL;
	if (s->memory_size > HC_SLOT_MAX_PAGES * SLAT_PAGE_BYTES)
		return -E2BIG;
	if (s->guest_phys_addr + s->memory_size < s->guest_phys_addr ||
	    s->userspace_addr + s->memory_size < s->userspace_addr)
		return -ERANGE;
	return 0;
}

int slat_slot_set(struct slat_vm *vm, const struct slat_slot *s)
{
	struct slat_mslot *old;
	u64 r[3];
	long st;
	int rc = slat_slot_check(s);

	if (rc)
		return rc;
	mutex_lock(&vm->lock);
	old = xa_load(&vm->slots, s->slot);
	if (!s->memory_size) {
		rc = old ? slat_slot_delete(vm, s->slot, old) : -EINVAL;
	} else if (!old) {
		rc = slat_slot_add(vm, s);
	} else if (old->size != s->memory_size || old->uaddr != s->userspace_addr) {
		rc = -EINVAL; /* KVM: a slot changes only its address or flags */
	} else if (old->gpa != s->guest_phys_addr) {
		st = slat_call(HC_SLOT_SET, vm->id, s->slot, HC_SLOT_MOVE, s->guest_phys_addr, 0, 0,
			       r);
		rc = slat_errno(st);
		if (!rc)
			old->gpa = s->guest_phys_addr;
	}
	mutex_unlock(&vm->lock);
	return rc;
}

void slat_slots_release(struct slat_vm *vm)
{
	struct slat_mslot *ms;
	unsigned long i;

	xa_for_each (&vm->slots, i, ms) {
		xa_erase(&vm->slots, i);
		slat_mslot_free(ms);
	}
}
