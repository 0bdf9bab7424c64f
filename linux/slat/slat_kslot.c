// SPDX-License-Identifier: GPL-2.0
/*
 * KVM memory regions as Slat's lazy slots (ABI 1.1; docs/kvm-api.md): the
 * VMM's memory is followed the way KVM follows it. A region is a slot whose
 * pages have no frame (SLOT_SET ADD_EMPTY); the guest's first access to a
 * page exits HC_EXIT_MEMFAULT, and the module pins the VMM's page there and
 * gives it to Slat (FILL); when the VMM's mapping changes (munmap,
 * MADV_DONTNEED, fork's copy-on-write, migration...), an MMU interval
 * notifier takes the range's frames back (DROP: Slat zaps and flushes first)
 * and unpins them, and the guest faults the new pages in.
 *
 * Locking: vm->lock (the VM's regions) is taken before ks->lock (one
 * region's pages); the notifier takes ks->lock only. Pages are pinned with
 * neither held (pinning may itself invalidate the range, e.g. breaking
 * copy-on-write), and the notifier's sequence count tells the fill whether
 * the range changed meanwhile (then it drops its pins and the guest retries).
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "slat_kvm.h"

/* Pages one MEMFAULT fills at most (those after the faulting page that lack a frame). */
#define KSLOT_FILL_MAX 16u

static void kslot_unpin(struct slat_kslot *ks, unsigned long first, unsigned long n)
{
	unsigned long i;

	for (i = first; i < first + n; i++) {
		if (!ks->pages[i])
			continue;
		/* The guest cannot have written a read-only region's pages. */
		unpin_user_pages_dirty_lock(&ks->pages[i], 1, !ks->readonly);
		ks->pages[i] = NULL;
		atomic64_dec(&slat_pinned_pages);
	}
}

/* The VMM's mapping of [range) changed: Slat gives those frames back first. */
static bool kslot_invalidate(struct mmu_interval_notifier *mn,
			     const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct slat_kslot *ks = container_of(mn, struct slat_kslot, mn);
	unsigned long lo = max(range->start, (unsigned long)ks->uaddr);
	unsigned long hi = min(range->end, (unsigned long)(ks->uaddr + ks->size));
	unsigned long first, n;
	u64 r[3];
	long st;

	if (mmu_notifier_range_blockable(range))
		mutex_lock(&ks->lock);
	else if (!mutex_trylock(&ks->lock))
		return false;
	mmu_interval_set_seq(mn, cur_seq);
	if (lo < hi && ks->present) {
		first = (lo - ks->uaddr) >> PAGE_SHIFT;
		n = DIV_ROUND_UP(hi - ks->uaddr, PAGE_SIZE) - first;
		/* DROP takes no memory from the pool: it cannot answer NOMEM. */
		st = slat_call(HC_SLOT_SET, ks->vm->id, ks->slot, HC_SLOT_DROP, first, 0, n, r);
		if (st == HC_OK) {
			ks->present -= r[0];
			kslot_unpin(ks, first, n);
		} else {
			/* Slat may still map them: they stay pinned (the region's delete tries
			 * again). */
			pr_err(
			    "slat: DROP of slot %u pages %lu+%lu failed (%ld); they stay pinned\n",
			    ks->slot, first, n, st);
		}
	}
	mutex_unlock(&ks->lock);
	return true;
}

static const struct mmu_interval_notifier_ops kslot_mn_ops = {
    .invalidate = kslot_invalidate,
};

struct slat_kslot *slat_kslot_add(struct slat_vm *vm, u32 slot, u64 gpa, u64 size, u64 uaddr,
				  bool readonly)
{
	u64 op = HC_SLOT_ADD_EMPTY | (readonly ? HC_SLOT_F_READONLY : 0);
	struct slat_kslot *ks = kzalloc(sizeof(*ks), GFP_KERNEL);
	u64 r[3];
	long st;
	int rc;

	if (!ks)
		return ERR_PTR(-ENOMEM);
	ks->vm = vm;
	ks->slot = slot;
	ks->gpa = gpa;
	ks->size = size;
	ks->uaddr = uaddr;
	ks->npages = size >> PAGE_SHIFT;
	ks->readonly = readonly;
	mutex_init(&ks->lock);
	ks->pages = kvcalloc(ks->npages, sizeof(*ks->pages), GFP_KERNEL);
	if (!ks->pages) {
		kfree(ks);
		return ERR_PTR(-ENOMEM);
	}
	rc = mmu_interval_notifier_insert(&ks->mn, current->mm, uaddr, size, &kslot_mn_ops);
	if (!rc) {
		st = slat_call(HC_SLOT_SET, vm->id, slot, op, gpa, 0, ks->npages, r);
		rc = slat_errno(st);
		if (rc)
			mmu_interval_notifier_remove(&ks->mn);
		ks->mn_live = !rc;
	}
	if (rc) {
		kvfree(ks->pages);
		kfree(ks);
		return ERR_PTR(rc);
	}
	return ks;
}

/* DELETE in Slat (zapped and flushed when it returns), then every pin goes. */
int slat_kslot_delete(struct slat_kslot *ks)
{
	u64 r[3];
	long st;

	mmu_interval_notifier_remove(&ks->mn); /* no callback runs after this */
	ks->mn_live = false;
	st = slat_call(HC_SLOT_SET, ks->vm->id, ks->slot, HC_SLOT_DELETE, 0, 0, 0, r);
	if (st != HC_OK) {
		pr_err("slat: DELETE of slot %u failed (%ld); its pages stay pinned\n", ks->slot,
		       st);
		return slat_errno(st);
	}
	kslot_unpin(ks, 0, ks->npages);
	kvfree(ks->pages);
	kfree(ks);
	return 0;
}

/* After VM_DESTROY: Slat holds none of the frames any more. */
void slat_kslot_release(struct slat_kslot *ks)
{
	if (ks->mn_live)
		mmu_interval_notifier_remove(&ks->mn);
	kslot_unpin(ks, 0, ks->npages);
	kvfree(ks->pages);
	kfree(ks);
}

/* FILL of pins[0..n) at page `first`; the caller holds ks->lock. */
static long kslot_fill_locked(struct slat_kslot *ks, unsigned long first, struct page **pins,
			      unsigned long n)
{
	struct page *list = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 *pfn, r[3];
	unsigned long i;
	long st;

	if (!list)
		return HC_E_NOMEM;
	pfn = page_address(list);
	for (i = 0; i < n; i++)
		pfn[i] = page_to_pfn(pins[i]);
	st = slat_call(HC_SLOT_SET, ks->vm->id, ks->slot, HC_SLOT_FILL, first, slat_pa(list), n, r);
	__free_page(list);
	return st;
}

/*
 * The guest touched page `index` of the region, which has no frame: pin the
 * VMM's page there (and up to KSLOT_FILL_MAX - 1 following ones that lack a
 * frame) and give them to Slat. 0: run again (also when the region changed
 * meanwhile); -EFAULT: the VMM's memory cannot be pinned writable, as KVM
 * answers for a bad user address.
 */
int slat_kslot_fault(struct slat_kslot *ks, u32 index)
{
	struct page *pins[KSLOT_FILL_MAX];
	unsigned long seq, n = 0, want;
	long got, st;

	if (index >= ks->npages)
		return -EFAULT;
	mutex_lock(&ks->lock);
	while (n < KSLOT_FILL_MAX && index + n < ks->npages && !ks->pages[index + n])
		n++;
	mutex_unlock(&ks->lock);
	if (!n)
		return 0; /* another vCPU filled it meanwhile */
	want = n;
	seq = mmu_interval_read_begin(&ks->mn);
	got = pin_user_pages_fast(ks->uaddr + ((u64)index << PAGE_SHIFT), want,
				  FOLL_WRITE | FOLL_LONGTERM, pins);
	/*
	 * A read-only region may be a read-only mapping (a ROM image): pinned
	 * for reading then. Writable memory is pinned for writing even so, so
	 * that an untouched page is the VMM's own and not the shared zero page
	 * (a frame backs one page of one slot in Slat).
	 */
	if (got <= 0 && ks->readonly)
		got = pin_user_pages_fast(ks->uaddr + ((u64)index << PAGE_SHIFT), want,
					  FOLL_LONGTERM, pins);
	if (got <= 0)
		return -EFAULT;
	mutex_lock(&ks->lock);
	/* The range changed, or another vCPU filled a page: this vCPU retries. */
	for (n = 0; n < (unsigned long)got && !ks->pages[index + n]; n++)
		;
	st = HC_OK;
	if (n && !mmu_interval_read_retry(&ks->mn, seq))
		st = kslot_fill_locked(ks, index, pins, n);
	else
		n = 0;
	if (st == HC_OK) {
		memcpy(&ks->pages[index], pins, n * sizeof(*pins));
		ks->present += n;
		atomic64_add(n, &slat_pinned_pages);
	}
	mutex_unlock(&ks->lock);
	if (st != HC_OK)
		n = 0;
	unpin_user_pages(pins + n, got - n);
	return slat_errno(st);
}

/*
 * Before VM_DESTROY (slat_vm_release; no vCPU can run, no fd is left): the
 * notifiers go, so none asks Slat about a VM being destroyed. The pages stay
 * pinned until slat_kslots_release, after the destroy.
 */
void slat_kslots_stop(struct slat_vm *vm)
{
	struct slat_kslot *ks;
	unsigned long i;

	xa_for_each (&vm->kslots, i, ks) {
		if (ks->mn_live)
			mmu_interval_notifier_remove(&ks->mn);
		ks->mn_live = false;
	}
}

/* After VM_DESTROY (slat_vm_release): every region's pins go. */
void slat_kslots_release(struct slat_vm *vm)
{
	struct slat_kslot *ks;
	unsigned long i;

	xa_for_each (&vm->kslots, i, ks) {
		xa_erase(&vm->kslots, i);
		slat_kslot_release(ks);
	}
}
