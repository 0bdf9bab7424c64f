// SPDX-License-Identifier: Apache-2.0
//
// The arm64 side of the mm back-end contract: TLB invalidation for the
// primary's VMID, cache maintenance to the point of coherency, and table pages
// from Slat's reserved region. The exit summary's figures are the engine's
// (arch/slat_counts.h). Runs only in the resident copy, at EL2.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "core/page_pool.h"
#include "mm/s2_backend.h"

static struct page_pool mm_pool; // table pages, from Slat's region
static unsigned mm_dline;	 // smallest data cache line, bytes

void arm64_mm_backend_init(struct region *r)
{
	uint64_t ctr = read_sysreg("ctr_el0");

	page_pool_init(&mm_pool, r);
	mm_dline = 4u << ((ctr >> 16) & 0xf); // CTR_EL0.DminLine: log2 words
}

// Every stage-1 and stage-2 entry of the current VMID, on every CPU of the
// inner-shareable domain.
static void arm64_tlbi_vmalls12e1is(void)
{
	dsb(ishst);
	__asm__ volatile("tlbi vmalls12e1is" ::: "memory");
	dsb(ish);
	isb();
}

void arm64_dcache_clean_inval_poc(uint64_t start, uint64_t len)
{
	uint64_t line = mm_dline ? mm_dline : 64;
	uint64_t end = start + len;

	for (uint64_t a = start & ~(line - 1); a < end; a += line)
		__asm__ volatile("dc civac, %0" ::"r"(a) : "memory");
	dsb(ish);
}

// ---- the mm/ engine's backend (struct s2_backend) -------------------------

// Concatenated start tables and the VM struct take several aligned pages.
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
	arm64_tlbi_vmalls12e1is();
}

static void be_cmo(void *ctx, uint64_t pa, uint64_t size)
{
	arm64_dcache_clean_inval_poc(pa, size);
}

static void be_relax(void *ctx)
{
	__asm__ volatile("yield" ::: "memory");
}

// The engine's epoch slot of this CPU: its index in the primary's vCPU table
// (claimed once per MPIDR affinity; the same index the per-CPU records use,
// so it also works before this CPU's TPIDR_EL2 is set).
static unsigned be_cpu_index(void *ctx)
{
	struct vcpu *v =
	    vm_vcpu_for(&arm64_primary, read_sysreg(SYSREG_MPIDR_EL1) & 0xff00ffffffull);

	return v ? v->index : 0;
}

// No range invalidation (caps leave S2_CAP_RANGE_INVAL out: per-page TLBI
// loops cost more than one VMALLS12E1IS here), no preemption inside Slat.
const struct s2_backend arm64_mm_backend = {
    .page_alloc = be_page_alloc,
    .page_free = be_page_free,
    .inval_context = be_inval_context,
    .cmo_clean_inval = be_cmo,
    .cpu_relax = be_relax,
    .cpu_index = be_cpu_index,
};
