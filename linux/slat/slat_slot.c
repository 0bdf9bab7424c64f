// SPDX-License-Identifier: GPL-2.0
/*
 * Memory slots: the one layer that sends SLOT_SET, for /dev/slat and /dev/kvm
 * alike, and owns the pins of the VMM's pages (slat_pinned_pages). Both APIs
 * have KVM's SET_USER_MEMORY_REGION semantics: size 0 deletes (DELETE, then
 * unpin: Slat has zapped and flushed by then), the same size, user address and
 * flags at a new guest address moves (MOVE), any other change of a live slot
 * is -EINVAL. The VMM keeps access to its memory (the frames are shared, not
 * donated). A slot is one of two kinds:
 *
 * - eager (/dev/slat, docs/primary-module.md): every page of the VMM's range
 *   is pinned at once and Slat gets their frame numbers (ADD).
 * - lazy (/dev/kvm's regions, docs/kvm-api.md; ABI 1.1): the VMM's memory is
 *   followed the way KVM follows it. The slot's pages have no frame
 *   (ADD_EMPTY); the guest's first access to a page exits HC_EXIT_MEMFAULT,
 *   and the module pins the VMM's page there and gives it to Slat (FILL);
 *   when the VMM's mapping changes (munmap, MADV_DONTNEED, fork's
 *   copy-on-write, migration...), an MMU interval notifier takes the range's
 *   frames back (DROP: Slat zaps and flushes first) and unpins them, and the
 *   guest faults the new pages in.
 *
 * Locking: vm->lock (the VM's slots) is taken before ms->lock (one slot's
 * pages); the notifier takes ms->lock only. A fill pins with neither held
 * (pinning may itself invalidate the range, e.g. breaking copy-on-write), and
 * the notifier's sequence count tells it whether the range changed meanwhile
 * (then it drops its pins and the guest retries).
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "slat.h"

/* Pages one MEMFAULT fills at most (those after the faulting page that lack a frame). */
#define SLOT_FILL_MAX 16u

atomic64_t slat_pinned_pages;

static void slot_unpin(struct slat_mslot *ms, unsigned long first, unsigned long n)
{
	unsigned long i, done = 0;

	for (i = first; i < first + n; i++) {
		if (!ms->pages[i])
			continue;
		/* The guest cannot have written a read-only slot's pages. */
		if (ms->copies && test_and_clear_bit(i, ms->copies))
			__free_page(ms->pages[i]); /* slot_fill_copies' own page */
		else
			unpin_user_pages_dirty_lock(&ms->pages[i], 1,
						    !(ms->flags & SLAT_SLOT_READONLY));
		ms->pages[i] = NULL;
		done++;
	}
	atomic64_sub(done, &slat_pinned_pages);
}

/* The record goes with every pin; Slat holds none of its frames any more. */
static void slot_free(struct slat_mslot *ms)
{
	if (ms->mn_live)
		mmu_interval_notifier_remove(&ms->mn);
	slot_unpin(ms, 0, ms->npages);
	kvfree(ms->pages);
	bitmap_free(ms->copies);
	kfree(ms);
}

/* The VMM's mapping of [range) changed: Slat gives those frames back first. */
static bool slot_invalidate(struct mmu_interval_notifier *mn,
			    const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct slat_mslot *ms = container_of(mn, struct slat_mslot, mn);
	unsigned long lo = max(range->start, (unsigned long)ms->uaddr);
	unsigned long hi = min(range->end, (unsigned long)(ms->uaddr + ms->size));
	unsigned long first, n;
	u64 r[3];
	long st;

	if (mmu_notifier_range_blockable(range))
		mutex_lock(&ms->lock);
	else if (!mutex_trylock(&ms->lock))
		return false;
	mmu_interval_set_seq(mn, cur_seq);
	if (lo < hi && ms->present) {
		first = (lo - ms->uaddr) >> PAGE_SHIFT;
		n = DIV_ROUND_UP(hi - ms->uaddr, PAGE_SIZE) - first;
		/* DROP takes no memory from the pool: it cannot answer NOMEM. */
		st = slat_call(HC_SLOT_SET, ms->vm->id, ms->slot, HC_SLOT_DROP, first, 0, n, r);
		if (st == HC_OK) {
			ms->present -= r[0];
			slot_unpin(ms, first, n);
		} else {
			/* Slat may still map them: they stay pinned (the slot's delete tries
			 * again). */
			pr_err(
			    "slat: DROP of slot %u pages %lu+%lu failed (%ld); they stay pinned\n",
			    ms->slot, first, n, st);
		}
	}
	mutex_unlock(&ms->lock);
	return true;
}

static const struct mmu_interval_notifier_ops slot_mn_ops = {
    .invalidate = slot_invalidate,
};

/*
 * SLOT_SET `op` (ADD or FILL, a3 its gpa or first page) with the frames of
 * pages[0..n): one list page of up to HC_LIST_MAX frame numbers, or a
 * directory page whose entries are the frame numbers of full list pages (the
 * last one partial; ADD only). Slat copies the list: its pages are freed
 * after. Returns Slat's status.
 */
static long slot_call_list(struct slat_mslot *ms, u64 op, u64 a3, struct page **pages,
			   unsigned long n)
{
	unsigned long nlists = DIV_ROUND_UP(n, HC_LIST_MAX), i, j;
	struct page **lists, *dir = NULL;
	u64 r[3], *l, list_pa;
	long st = HC_E_NOMEM;

	lists = kcalloc(nlists, sizeof(*lists), GFP_KERNEL);
	if (!lists)
		return HC_E_NOMEM;
	for (i = 0; i < nlists; i++) {
		lists[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!lists[i])
			goto out;
		l = page_address(lists[i]);
		for (j = 0; j < HC_LIST_MAX && i * HC_LIST_MAX + j < n; j++)
			l[j] = page_to_pfn(pages[i * HC_LIST_MAX + j]);
	}
	list_pa = slat_pa(lists[0]);
	if (nlists > 1) {
		dir = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!dir)
			goto out;
		l = page_address(dir);
		for (i = 0; i < nlists; i++)
			l[i] = page_to_pfn(lists[i]);
		list_pa = slat_pa(dir);
	}
	st = slat_call(HC_SLOT_SET, ms->vm->id, ms->slot, op, a3, list_pa, n, r);
out:
	if (dir)
		__free_page(dir);
	for (i = 0; i < nlists; i++)
		if (lists[i])
			__free_page(lists[i]);
	kfree(lists);
	return st;
}

/* An eager slot: every page of the VMM's range pinned writable, then ADD. */
static int slot_add_eager(struct slat_mslot *ms)
{
	unsigned long done = 0;
	long got;

	while (done < ms->npages) {
		got = pin_user_pages_fast(ms->uaddr + done * PAGE_SIZE, ms->npages - done,
					  FOLL_WRITE | FOLL_LONGTERM, ms->pages + done);
		if (got <= 0)
			break;
		done += got;
	}
	atomic64_add(done, &slat_pinned_pages);
	ms->present = done;
	if (done < ms->npages)
		return -EFAULT;
	return slat_errno(slot_call_list(ms, HC_SLOT_ADD, ms->gpa, ms->pages, ms->npages));
}

/*
 * Slot pages one slat_call's deposits (64 MiB at most) cover: Slat keeps a
 * lazy slot's frame list in pool pages, 8 bytes a slot page, all taken at
 * ADD_EMPTY (ABI 1.10: up to 64 GiB, 128 MiB of list).
 */
#define SLOT_PAGES_PER_CALL (1ull << 23) /* 32 GiB of slot */

/* A lazy slot: the notifier on the VMM's range, then ADD_EMPTY. */
static int slot_add_lazy(struct slat_mslot *ms)
{
	u64 op = HC_SLOT_ADD_EMPTY | (ms->flags & SLAT_SLOT_READONLY ? HC_SLOT_F_READONLY : 0) |
		 (ms->flags & SLAT_SLOT_DIRTY ? HC_SLOT_F_DIRTY_LOG : 0);
	u64 r[3], round;
	long st;
	int rc;

	rc = mmu_interval_notifier_insert(&ms->mn, current->mm, ms->uaddr, ms->size, &slot_mn_ops);
	ms->mn_live = !rc;
	if (rc)
		return rc;
	for (round = 0;; round++) {
		st = slat_call(HC_SLOT_SET, ms->vm->id, ms->slot, op, ms->gpa, 0, ms->npages, r);
		if (st != HC_E_NOMEM || round >= ms->npages / SLOT_PAGES_PER_CALL)
			return slat_errno(st);
	}
}

static int slot_add(struct slat_vm *vm, u32 slot, u64 gpa, u64 size, u64 uaddr, unsigned int flags)
{
	struct slat_mslot *ms = kzalloc(sizeof(*ms), GFP_KERNEL);
	int rc;

	if (!ms)
		return -ENOMEM;
	ms->vm = vm;
	ms->slot = slot;
	ms->gpa = gpa;
	ms->size = size;
	ms->uaddr = uaddr;
	ms->npages = size >> PAGE_SHIFT;
	ms->flags = flags;
	mutex_init(&ms->lock);
	ms->pages = kvcalloc(ms->npages, sizeof(*ms->pages), GFP_KERNEL);
	if (!ms->pages) {
		kfree(ms);
		return -ENOMEM;
	}
	/* Recorded first (vm->lock keeps it from everyone until Slat answers). */
	rc = xa_err(xa_store(&vm->slots, slot, ms, GFP_KERNEL));
	if (!rc)
		rc = flags & SLAT_SLOT_LAZY ? slot_add_lazy(ms) : slot_add_eager(ms);
	if (rc) {
		/* Refused by Slat (nothing changed there) or never asked. */
		xa_erase(&vm->slots, slot);
		slot_free(ms);
	}
	return rc;
}

static int slot_delete(struct slat_mslot *ms)
{
	u64 r[3];
	long st;

	if (ms->mn_live)
		mmu_interval_notifier_remove(&ms->mn); /* no callback runs after this */
	ms->mn_live = false;
	st = slat_call(HC_SLOT_SET, ms->vm->id, ms->slot, HC_SLOT_DELETE, 0, 0, 0, r);
	if (st != HC_OK) {
		pr_err("slat: DELETE of slot %u failed (%ld); its pages stay pinned\n", ms->slot,
		       st);
		return slat_errno(st);
	}
	/* DELETE returned: Slat has zapped and flushed; the frames are ours. */
	xa_erase(&ms->vm->slots, ms->slot);
	slot_free(ms);
	return 0;
}

int slat_slot_update(struct slat_vm *vm, u32 slot, u64 gpa, u64 size, u64 uaddr, unsigned int flags)
{
	struct slat_mslot *ms;
	u64 r[3];
	int rc = 0;

	mutex_lock(&vm->lock);
	ms = xa_load(&vm->slots, slot);
	if (!size) {
		rc = ms ? slot_delete(ms) : -EINVAL;
	} else if (!ms) {
		rc = slot_add(vm, slot, gpa, size, uaddr, flags);
	} else if (ms->size != size || ms->uaddr != uaddr ||
		   ((ms->flags ^ flags) & ~SLAT_SLOT_DIRTY)) {
		rc = -EINVAL; /* KVM: a live slot changes its address and dirty logging only */
	} else {
		if (ms->gpa != gpa)
			rc = slat_errno(
			    slat_call(HC_SLOT_SET, vm->id, slot, HC_SLOT_MOVE, gpa, 0, 0, r));
		if (!rc)
			ms->gpa = gpa;
		if (!rc && ((ms->flags ^ flags) & SLAT_SLOT_DIRTY))
			rc = slat_errno(slat_call(HC_SLOT_SET, vm->id, slot, HC_SLOT_LOG,
						  !!(flags & SLAT_SLOT_DIRTY), 0, 0, r));
		if (!rc)
			ms->flags = flags;
	}
	mutex_unlock(&vm->lock);
	return rc;
}

/*
 * A read-only slot whose VMM pages another slot of the VM already maps (a
 * ROM and its alias: QEMU's BIOS at 0xfffe0000 and 0xe0000): Slat gives a
 * frame to one place of a VM only, so such a page gets a copy of its own.
 * The copy does not follow later changes of the VMM's page (a ROM's do not
 * change while the guest runs). Page by page; `pins` become the pages Slat
 * holds (a copy replaces its pin); *done of them Slat took. HC status of
 * the first failure.
 */
static long slot_fill_copies(struct slat_mslot *ms, u32 index, struct page **pins, unsigned long n,
			     unsigned long *done)
{
	unsigned long i;
	struct page *c;
	long st = HC_OK;

	*done = 0;
	if (!ms->copies)
		ms->copies = bitmap_zalloc(ms->npages, GFP_KERNEL);
	if (!ms->copies)
		return HC_E_NOMEM;
	for (i = 0; i < n; i++) {
		st = slot_call_list(ms, HC_SLOT_FILL, index + i, &pins[i], 1);
		if (st == HC_OK) {
			*done = i + 1;
			continue;
		}
		if (st != HC_E_ALREADY_SHARED)
			break;
		c = alloc_page(GFP_KERNEL);
		if (!c)
			return HC_E_NOMEM;
		copy_highpage(c, pins[i]);
		st = slot_call_list(ms, HC_SLOT_FILL, index + i, &c, 1);
		if (st != HC_OK) {
			__free_page(c);
			break;
		}
		unpin_user_page(pins[i]);
		pins[i] = c;
		set_bit(index + i, ms->copies);
		*done = i + 1;
		if (!ms->copy_logged) {
			ms->copy_logged = true;
			pr_info("slat: slot %u page %lu: its frame is already in the VM; "
				"read-only, so a copy\n",
				ms->slot, (unsigned long)index + i);
		}
	}
	return st;
}

/* Pages of a 2 MiB block, the leaf Slat maps for a huge page of the VMM's. */
#define SLOT_BLOCK_PAGES (1ul << (PMD_SHIFT - PAGE_SHIFT))

/*
 * The first page of the 2 MiB block around `index`, when the VMM may back it
 * with one huge page (THP or hugetlbfs): the block lies wholly in the slot,
 * its guest and user addresses are aligned alike, and `page` (pinned at
 * `index`) belongs to a huge page that holds the whole block. Else -1. The
 * slot's kind must allow a block leaf (not dirty logging: 4 KiB leaves; not
 * read-only: its pages may need copies, slot_fill_copies).
 */
static long slot_block_first(const struct slat_mslot *ms, u32 index, struct page *page)
{
	struct folio *f = page_folio(page);
	unsigned long in_block = ((ms->gpa >> PAGE_SHIFT) + index) & (SLOT_BLOCK_PAGES - 1);
	unsigned long pfn = page_to_pfn(page) - in_block;

	if ((ms->flags & (SLAT_SLOT_READONLY | SLAT_SLOT_DIRTY)) ||
	    ((ms->gpa ^ ms->uaddr) & (PMD_SIZE - 1)) || in_block > index ||
	    index - in_block + SLOT_BLOCK_PAGES > ms->npages)
		return -1;
	/* Mapped whole (a PMD, or hugetlbfs' huge entry) somewhere: the
	 * host mapping level is the block's. A huge page mapped only by 4 KiB
	 * entries (split, partly unmapped) is filled page by page. */
	if (folio_nr_pages(f) < SLOT_BLOCK_PAGES || folio_entire_mapcount(f) <= 0 ||
	    (pfn & (SLOT_BLOCK_PAGES - 1)) || pfn < folio_pfn(f) ||
	    pfn + SLOT_BLOCK_PAGES > folio_pfn(f) + folio_nr_pages(f))
		return -1;
	return index - in_block;
}

/*
 * Pins the block at `first` as the VMM maps it now, without faulting any
 * page in (what KVM's host mapping level reads from the page tables): true
 * when all of it is present and is one run of frames, pins[] then holding
 * them; else nothing stays pinned and the caller fills page by page. Slat
 * checks every frame again before it maps a block.
 */
static bool slot_pin_block(struct slat_mslot *ms, unsigned long first, struct page **pins)
{
	long got = pin_user_pages_fast_only(ms->uaddr + (first << PAGE_SHIFT), SLOT_BLOCK_PAGES,
					    FOLL_WRITE | FOLL_LONGTERM, pins);
	unsigned long k;

	for (k = 1; got == SLOT_BLOCK_PAGES && k < SLOT_BLOCK_PAGES; k++)
		if (page_to_pfn(pins[k]) != page_to_pfn(pins[0]) + k)
			break;
	if (got == SLOT_BLOCK_PAGES && k == SLOT_BLOCK_PAGES)
		return true;
	if (got > 0)
		unpin_user_pages(pins, got);
	return false;
}

/*
 * FILLs every page of the pinned block at `first` that lacks a frame (runs of
 * them, one call each), under ms->lock, unless the range changed since
 * `seq`. The pins Slat did not take are dropped. Slat's status.
 */
static long slot_fill_block(struct slat_mslot *ms, unsigned long first, struct page **pins,
			    unsigned long seq)
{
	unsigned long i = 0, run;
	long st = HC_OK;

	mutex_lock(&ms->lock);
	if (mmu_interval_read_retry(&ms->mn, seq))
		i = SLOT_BLOCK_PAGES; /* the guest retries */
	while (i < SLOT_BLOCK_PAGES && st == HC_OK) {
		if (ms->pages[first + i]) {
			unpin_user_page(pins[i++]); /* Slat has this page already */
			continue;
		}
		for (run = 1; i + run < SLOT_BLOCK_PAGES && !ms->pages[first + i + run]; run++)
			;
		st = slot_call_list(ms, HC_SLOT_FILL, first + i, &pins[i], run);
		if (st != HC_OK)
			break;
		memcpy(&ms->pages[first + i], &pins[i], run * sizeof(*pins));
		ms->present += run;
		atomic64_add(run, &slat_pinned_pages);
		i += run;
	}
	mutex_unlock(&ms->lock);
	if (i < SLOT_BLOCK_PAGES)
		unpin_user_pages(pins + i, SLOT_BLOCK_PAGES - i);
	return st;
}

/*
 * The guest touched page `index` of a lazy slot, which has no frame: pin the
 * VMM's page there (and up to SLOT_FILL_MAX - 1 following ones that lack a
 * frame) and give them to Slat; when a huge page of the VMM's backs the
 * whole 2 MiB block around it, the block's pages instead (Slat maps the
 * block with one leaf). 0: run again (also when the slot changed
 * meanwhile); -EFAULT: the VMM's memory cannot be pinned writable, as KVM
 * answers for a bad user address.
 */
static int slot_fill(struct slat_mslot *ms, u32 index)
{
	u64 uaddr = ms->uaddr + ((u64)index << PAGE_SHIFT);
	struct page *pins[SLOT_FILL_MAX];
	unsigned long seq, n = 0;
	long got, st, first;
	unsigned long done;

	if (index >= ms->npages)
		return -EFAULT;
	mutex_lock(&ms->lock);
	while (n < SLOT_FILL_MAX && index + n < ms->npages && !ms->pages[index + n])
		n++;
	mutex_unlock(&ms->lock);
	if (!n)
		return 0; /* another vCPU filled it meanwhile */
	seq = mmu_interval_read_begin(&ms->mn);
	got = pin_user_pages_fast(uaddr, n, FOLL_WRITE | FOLL_LONGTERM, pins);
	/*
	 * A read-only slot may be a read-only mapping (a ROM image): pinned for
	 * reading then. Writable memory is pinned for writing even so, so that
	 * an untouched page is the VMM's own and not the shared zero page (a
	 * frame backs one page of one slot in Slat).
	 */
	if (got <= 0 && (ms->flags & SLAT_SLOT_READONLY))
		got = pin_user_pages_fast(uaddr, n, FOLL_LONGTERM, pins);
	/*
	 * A long-term pin cannot wait for a page that user space supplies
	 * (userfaultfd: Linux 6.1 pins FOLL_LONGTERM without letting the fault
	 * retry, so it fails): such a page is pinned the way KVM takes it, one
	 * pin that waits for the fault, held until the MMU notifier drops it.
	 */
	if (got <= 0)
		got = pin_user_pages_unlocked(uaddr, 1, pins, FOLL_WRITE);
	if (got <= 0)
		return -EFAULT;
	first = slot_block_first(ms, index, pins[0]);
	if (first >= 0) {
		struct page **block = kmalloc_array(SLOT_BLOCK_PAGES, sizeof(*block), GFP_KERNEL);

		if (block && slot_pin_block(ms, first, block)) {
			unpin_user_pages(pins, got);
			st = slot_fill_block(ms, first, block, seq);
			kfree(block);
			return slat_errno(st);
		}
		kfree(block);
	}
	mutex_lock(&ms->lock);
	/* The range changed, or another vCPU filled a page: this vCPU retries. */
	for (n = 0; n < (unsigned long)got && !ms->pages[index + n]; n++)
		;
	st = HC_OK;
	if (n && !mmu_interval_read_retry(&ms->mn, seq)) {
		st = slot_call_list(ms, HC_SLOT_FILL, index, pins, n);
		if (st == HC_E_ALREADY_SHARED && (ms->flags & SLAT_SLOT_READONLY)) {
			st = slot_fill_copies(ms, index, pins, n, &done);
			n = done; /* those Slat took, whatever came after */
		} else if (st != HC_OK) {
			n = 0;
		}
	} else {
		n = 0;
	}
	if (n) {
		memcpy(&ms->pages[index], pins, n * sizeof(*pins));
		ms->present += n;
		atomic64_add(n, &slat_pinned_pages);
	}
	mutex_unlock(&ms->lock);
	unpin_user_pages(pins + n, got - n);
	return slat_errno(st);
}

/*
 * The VMM's copy of guest-physical [gpa, gpa + len), read or written through
 * its mapping of the slots (the caller runs in the VMM's process, which
 * shares those pages with the VM). -EFAULT where no slot has it, or for a
 * write to a read-only slot.
 */
int slat_slot_rw(struct slat_vm *vm, u64 gpa, void *buf, size_t len, bool write)
{
	struct slat_mslot *ms;
	unsigned long i;
	int rc = 0;

	mutex_lock(&vm->lock);
	while (len && !rc) {
		size_t n = 0;

		rc = -EFAULT;
		xa_for_each (&vm->slots, i, ms) {
			u64 off = gpa - ms->gpa;
			void __user *u;

			if (gpa < ms->gpa || off >= ms->size)
				continue;
			if (write && (ms->flags & SLAT_SLOT_READONLY))
				break;
			n = min_t(u64, len, ms->size - off);
			u = (void __user *)(unsigned long)(ms->uaddr + off);
			rc = (write ? copy_to_user(u, buf, n) : copy_from_user(buf, u, n)) ? -EFAULT
											   : 0;
			break;
		}
		gpa += n;
		buf = (u8 *)buf + n;
		len -= n;
	}
	mutex_unlock(&vm->lock);
	return rc;
}

int slat_slot_fault(struct slat_vm *vm, u32 slot, u32 index)
{
	struct slat_mslot *ms;
	int rc = 0;

	mutex_lock(&vm->lock);
	ms = xa_load(&vm->slots, slot);
	if (ms) /* else the slot went away meanwhile: the access runs again */
		rc = slot_fill(ms, index);
	mutex_unlock(&vm->lock);
	return rc;
}

/*
 * Before VM_DESTROY (slat_vm_release; no vCPU can run, no fd is left): the
 * notifiers go, so none asks Slat about a VM being destroyed. The pages stay
 * pinned until slat_slots_release, after the destroy.
 */
void slat_slots_stop(struct slat_vm *vm)
{
	struct slat_mslot *ms;
	unsigned long i;

	xa_for_each (&vm->slots, i, ms) {
		if (ms->mn_live)
			mmu_interval_notifier_remove(&ms->mn);
		ms->mn_live = false;
	}
}

/* After VM_DESTROY (slat_vm_release): Slat holds none of the frames; every pin goes. */
void slat_slots_release(struct slat_vm *vm)
{
	struct slat_mslot *ms;
	unsigned long i;

	xa_for_each (&vm->slots, i, ms) {
		xa_erase(&vm->slots, i);
		slot_free(ms);
	}
}

/* ---- dirty log (ABI 1.9) ---- */

/* One SLOT_SET of at most HC_DIRTY_MAX_PAGES pages through a page of ours. */
static int slot_dirty_chunk(struct slat_mslot *ms, u64 op, u64 first, u64 n, void *buf,
			    void __user *ubits)
{
	size_t bytes = DIV_ROUND_UP(n, 64) * 8;
	u64 r[3];
	int rc;

	memset(buf, 0, PAGE_SIZE);
	if (op == HC_SLOT_DIRTY_CLEAR && copy_from_user(buf, ubits, bytes))
		return -EFAULT;
	rc = slat_errno(slat_call(HC_SLOT_SET, ms->vm->id, ms->slot, op, first,
				  slat_pa(virt_to_page(buf)), n, r));
	if (!rc && op != HC_SLOT_DIRTY_CLEAR && copy_to_user(ubits, buf, bytes))
		rc = -EFAULT;
	return rc;
}

int slat_slot_dirty(struct slat_vm *vm, u32 slot, u64 op, u64 first, u64 n, void __user *ubits)
{
	struct slat_mslot *ms;
	void *buf;
	int rc = 0;

	buf = (void *)__get_free_page(GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	mutex_lock(&vm->lock);
	ms = xa_load(&vm->slots, slot);
	if (!ms || !(ms->flags & SLAT_SLOT_DIRTY))
		rc = -ENOENT;
	for (u64 done = 0; !rc && done < n; done += HC_DIRTY_MAX_PAGES) {
		u64 k = min_t(u64, n - done, HC_DIRTY_MAX_PAGES);

		rc = slot_dirty_chunk(ms, op, first + done, k, buf, ubits + done / 8);
	}
	mutex_unlock(&vm->lock);
	free_page((unsigned long)buf);
	return rc;
}
