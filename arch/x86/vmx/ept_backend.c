// SPDX-License-Identifier: Apache-2.0
//
// The VMX side of the second-level back-end contract (mm/s2_backend.h): EPT
// table pages from Slat's reserved region (recycled through a free list),
// INVEPT for the primary's EPTP, and the counters the exit summary prints.
// Runs only in the resident copy, in VMX root operation (or before the first
// VMXON, while the EPT is built).
//
// INVEPT acts on the calling CPU only. An invalidation runs INVEPT here (when
// this CPU is in VMX operation) and marks every other CPU, which invalidates
// at its next exit (vmx_ept_sync); one call counts as one invalidation. A CPU
// that stays in the guest keeps stale entries until it exits, which is
// enough for a map that only grows and for the batched teardown at power-off
// (no CPU runs the guest again).
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/vmx/vmx.h"
#include "core/page_pool.h"
#include "mm/s2_backend.h"

static struct page_pool mm_pool;
static uint64_t mm_invalidations;
static uint64_t mm_eptp;
static int mm_live;
static uint8_t mm_stale[X86_MAX_CPUS]; // this CPU must INVEPT at its next exit

void vmx_mm_init(struct region *r)
{
	page_pool_init(&mm_pool, r);
	mm_invalidations = 0;
}

// From now on this CPU may run INVEPT (VMX operation on every CPU that uses
// the EPT); `eptp` is what they use.
void vmx_mm_set_live(uint64_t eptp)
{
	mm_eptp = eptp;
	__atomic_store_n(&mm_live, 1, __ATOMIC_RELEASE);
}

static void invept_here(void)
{
	if (vmx_cfg.invept_single)
		vmx_invept(INVEPT_SINGLE, mm_eptp);
	else
		vmx_invept(INVEPT_ALL, 0);
}

void vmx_ept_invalidate(void)
{
	if (__atomic_load_n(&mm_live, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < X86_MAX_CPUS; i++)
			__atomic_store_n(&mm_stale[i], 1, __ATOMIC_RELEASE);
		// Only a CPU in VMX operation gets here once the map is live.
		struct x86_vcpu *v = x86_vcpu_for_apic(cpuid(1, 0).ebx >> 24);
		if (v && v->backend) {
			invept_here();
			__atomic_store_n(&mm_stale[v->index], 0, __ATOMIC_RELEASE);
		}
	}
	__atomic_fetch_add(&mm_invalidations, 1, __ATOMIC_RELAXED);
}

void vmx_ept_sync(unsigned cpu)
{
	if (cpu < X86_MAX_CPUS && __atomic_load_n(&mm_stale[cpu], __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&mm_stale[cpu], 0, __ATOMIC_RELEASE);
		invept_here();
	}
}

void vmx_ept_mm_counts(struct slat_mm_counts *out)
{
	*out = (struct slat_mm_counts){
	    .table_pages = page_pool_live(&mm_pool),
	    .table_pages_max = mm_pool.max,
	    .invalidations = __atomic_load_n(&mm_invalidations, __ATOMIC_RELAXED),
	    .cmos = 0, // EPT walks are cache-coherent on x86: no maintenance
	};
}

// ---- the contract ---------------------------------------------------------------
// Root operation runs with interrupts masked and nothing to schedule:
// need_resched is always false and yield only relaxes. Roots never change
// under a running primary, so no kick_reload (NULL).
static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	return page_pool_alloc(&mm_pool, npages, align);
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	page_pool_free(&mm_pool, pa, npages);
}

static void be_inval_context(void *ctx, struct s2_vm *vm)
{
	vmx_ept_invalidate();
}

static bool be_need_resched(void *ctx)
{
	return false;
}

static void be_relax(void *ctx)
{
	__asm__ volatile("pause");
}

const struct s2_backend vmx_s2_backend = {
    .page_alloc = be_page_alloc,
    .page_free = be_page_free,
    .inval_context = be_inval_context,
    .need_resched = be_need_resched,
    .yield = be_relax,
    .cpu_relax = be_relax,
};
