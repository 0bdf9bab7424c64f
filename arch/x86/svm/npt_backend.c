// SPDX-License-Identifier: Apache-2.0
//
// The SVM side of the second-level back-end contract: NPT table pages from
// Slat's reserved region (recycled through a free list), TLB invalidation of
// the primary's ASID, and the counters the exit summary prints. Runs only in
// the resident copy, in host mode.
//
// Invalidation under SVM: a host cannot flush another CPU's guest TLB
// directly. Slat marks every vCPU's VMCB with TLB_CONTROL (flush this ASID
// when the CPU has flush-by-ASID, else flush everything; QEMU has no
// flush-by-ASID) so each CPU flushes on its next VMRUN; one call counts as
// one invalidation. A CPU that stays in the guest keeps stale entries until
// it exits, which is enough for a map that only grows and for the batched
// teardown at power-off (no CPU runs the guest again).
#include "arch/x86/caps.h"
#include "arch/x86/svm/svm.h"
#include "mm/s2_backend.h"

static struct region *mm_region;
static uint64_t mm_free_list; // freed pages, linked through their first word
static uint64_t mm_pages_live, mm_pages_max, mm_invalidations;
static int mm_lock;

void svm_mm_init(struct region *r)
{
	mm_region = r;
	mm_free_list = 0;
	mm_pages_live = mm_pages_max = mm_invalidations = 0;
}

static void lock(void)
{
	while (__atomic_exchange_n(&mm_lock, 1, __ATOMIC_ACQUIRE))
		__asm__ volatile("pause");
}

static void unlock(void)
{
	__atomic_store_n(&mm_lock, 0, __ATOMIC_RELEASE);
}

uint64_t svm_mm_page_alloc(void)
{
	lock();
	uint64_t pa = mm_free_list;
	if (pa) {
		mm_free_list = *(uint64_t *)(uintptr_t)pa;
		for (unsigned i = 0; i < 512; i++)
			((uint64_t *)(uintptr_t)pa)[i] = 0;
	} else {
		pa = region_alloc(mm_region, 1, 4096);
	}
	if (pa && ++mm_pages_live > mm_pages_max)
		mm_pages_max = mm_pages_live;
	unlock();
	return pa;
}

void svm_mm_page_free(uint64_t pa)
{
	lock();
	*(uint64_t *)(uintptr_t)pa = mm_free_list;
	mm_free_list = pa;
	mm_pages_live--;
	unlock();
}

void svm_mm_flush_all_cpus(void)
{
	uint8_t how = (svm_host.features & SVM_FEAT_FLUSH_BY_ASID) ? TLB_CONTROL_FLUSH_ASID
								   : TLB_CONTROL_FLUSH_ALL;

	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		const struct svm_cpu *c = &svm_host.cpus[i];
		if (c->vmcb_pa)
			__atomic_store_n(vmcb8((void *)(uintptr_t)c->vmcb_pa, VMCB_TLB_CONTROL),
					 how, __ATOMIC_RELEASE);
	}
	__atomic_fetch_add(&mm_invalidations, 1, __ATOMIC_RELAXED);
}

void svm_mm_counts(struct slat_mm_counts *out)
{
	*out = (struct slat_mm_counts){
	    .table_pages = __atomic_load_n(&mm_pages_live, __ATOMIC_RELAXED),
	    .table_pages_max = mm_pages_max,
	    .invalidations = __atomic_load_n(&mm_invalidations, __ATOMIC_RELAXED),
	    .cmos = 0, // x86 table walks are cache-coherent: no maintenance needed
	};
}

// ---- the mm/ engine's back-end contract (mm/s2_backend.h) -------------------
// What npt.c gives the engine. Host mode runs
// with GIF clear and nothing to schedule: need_resched is always false and
// yield only relaxes. Roots never change under a running primary, so no
// kick_reload (NULL); there are no lockless software walkers (rcu_* NULL).
static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	if (npages == 1 && align <= 4096)
		return svm_mm_page_alloc();
	lock();
	uint64_t pa = region_alloc(mm_region, npages, align);
	if (pa) {
		mm_pages_live += npages;
		if (mm_pages_live > mm_pages_max)
			mm_pages_max = mm_pages_live;
	}
	unlock();
	return pa;
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	for (unsigned i = 0; i < npages; i++)
		svm_mm_page_free(pa + 4096ull * i);
}

static void be_inval_context(void *ctx, struct s2_vm *vm)
{
	svm_mm_flush_all_cpus();
}

static bool be_need_resched(void *ctx)
{
	return false;
}

static void be_relax(void *ctx)
{
	__asm__ volatile("pause");
}

const struct s2_backend svm_s2_backend = {
    .page_alloc = be_page_alloc,
    .page_free = be_page_free,
    .inval_context = be_inval_context,
    .need_resched = be_need_resched,
    .yield = be_relax,
    .cpu_relax = be_relax,
};
