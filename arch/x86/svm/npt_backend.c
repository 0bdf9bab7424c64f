// SPDX-License-Identifier: Apache-2.0
//
// The SVM side of the second-level back-end contract: NPT table pages from
// Slat's reserved region (recycled through a free list), TLB invalidation of
// the primary's ASID (the exit summary's figures are the engine's,
// arch/slat_counts.h). Runs only in the resident copy, in host mode.
//
// Invalidation under SVM: a host cannot flush another CPU's guest TLB
// directly. Slat marks every vCPU's VMCB with TLB_CONTROL (flush this ASID
// when the CPU has flush-by-ASID, else flush everything; QEMU has no
// flush-by-ASID) so each CPU flushes on its next VMRUN; one call counts as
// one invalidation. A CPU that stays in the guest keeps stale entries until
// it exits, which is enough for a map that only grows and for the batched
// teardown at power-off (no CPU runs the guest again); the unmap of
// deposited pages kicks and waits (arch/x86/slat.c, x86_slat_cpu_enter).
#include "arch/x86/caps.h"
#include "arch/x86/svm/svm.h"
#include "core/page_pool.h"
#include "arch/x86/slat.h"

static struct page_pool mm_pool;

void svm_mm_init(struct region *r)
{
	page_pool_init(&mm_pool, r);
}

uint64_t svm_mm_page_alloc(void)
{
	return page_pool_alloc(&mm_pool, 1, 4096);
}

static uint8_t flush_how(void)
{
	return (svm_host.features & SVM_FEAT_FLUSH_BY_ASID) ? TLB_CONTROL_FLUSH_ASID
							    : TLB_CONTROL_FLUSH_ALL;
}

void svm_mm_flush_here(void *vmcb)
{
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = flush_how();
}

// Every vCPU's next VMRUN flushes the primary's ASID.
static void svm_mm_flush_all_cpus(void)
{
	uint8_t how = flush_how();

	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		const struct svm_cpu *c = &svm_host.cpus[i];
		if (c->vmcb_pa)
			__atomic_store_n(vmcb8((void *)(uintptr_t)c->vmcb_pa, VMCB_TLB_CONTROL),
					 how, __ATOMIC_RELEASE);
	}
}

// What the shared x86 back end of the engine (arch/x86/slat.c) uses here.
const struct x86_slat_ops svm_slat_ops = {
    .pool = &mm_pool,
    .invalidate_all_cpus = svm_mm_flush_all_cpus,
};
