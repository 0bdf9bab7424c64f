// SPDX-License-Identifier: Apache-2.0
//
// Slat's own EL2 stage-1 tables. The firmware's EL2 tables map Slat's
// reserved region execute-never and live in boot-services memory the OS will
// reclaim, so EL2 must leave them before it runs from the region. The new
// tables keep the firmware's TCR_EL2, MAIR_EL2 and SCTLR_EL2 (only TTBR0_EL2
// changes while the MMU is on) and identity-map the same layout: memory the
// firmware reports as RAM or ROM Normal write-back, everything else below the
// top of that memory Device-nGnRE, all executable only where it is Normal.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "arch/arm64/ptable.h"
#include "core/log.h"

#define S1_ATTRIDX(i)	   ((uint64_t)(i) << 2)
#define S1_AP_RW_EL2	   (1ull << 6) // AP[2:1] = 0b01: AP[1] is RES1 at non-VHE EL2
#define S1_SH_INNER	   (3ull << 8)
#define S1_XN		   (1ull << 54)
#define MAIR_NORMAL_WB	   0xffu
#define MAIR_DEVICE_NGNRE  0x04u
#define MAIR_DEVICE_NGNRNE 0x00u

// Index of the first MAIR byte equal to `attr`, or -1.
static int mair_index(uint64_t mair, unsigned attr)
{
	for (int i = 0; i < 8; i++) {
		if (((mair >> (8 * i)) & 0xff) == attr)
			return i;
	}
	return -1;
}

struct el2_map_ctx {
	struct ptable pt;
	uint64_t normal, device;
};

static bool el2_map_range(void *ctx, uint64_t base, uint64_t size, enum plan_mem_kind kind)
{
	struct el2_map_ctx *c = ctx;

	return ptable_map_identity(&c->pt, base, size,
				   kind == PLAN_MEM_NORMAL ? c->normal : c->device);
}

bool arm64_el2_mmu_build(struct region *r, const struct slat_plan *plan, struct arm64_el2_mmu *mmu)
{
	uint64_t tcr = read_sysreg("tcr_el2"), mair = read_sysreg("mair_el2");
	unsigned va_bits = 64 - (unsigned)(tcr & 0x3f);
	int n = mair_index(mair, MAIR_NORMAL_WB);
	int d = mair_index(mair, MAIR_DEVICE_NGNRE);

	if (d < 0)
		d = mair_index(mair, MAIR_DEVICE_NGNRNE);
	if (((tcr >> 14) & 3) != 0 || n < 0 || d < 0) {
		log_err("arm64: firmware EL2 regime unusable (TCR_EL2 0x%llx, MAIR_EL2 0x%llx)\n",
			(unsigned long long)tcr, (unsigned long long)mair);
		return false;
	}
	struct el2_map_ctx c = {
	    .normal = S1_ATTRIDX(n) | S1_AP_RW_EL2 | S1_SH_INNER,
	    .device = S1_ATTRIDX(d) | S1_AP_RW_EL2 | S1_XN,
	};
	if (!ptable_init(&c.pt, r, va_bits, 1))
		return false;

	// Up to the end of the memory the firmware reports, in whole GiB.
	uint64_t top = 0;
	for (unsigned i = 0; i < plan->n_ranges; i++) {
		uint64_t end = plan->ranges[i].base + plan->ranges[i].size;
		top = end > top ? end : top;
	}
	top = (top + (1ull << 30) - 1) & ~((1ull << 30) - 1);
	if (va_bits < 64 && top > (1ull << va_bits))
		top = 1ull << va_bits;
	if (!plan_walk_layout(plan, top, el2_map_range, &c)) {
		log_err("arm64: out of memory for the EL2 tables\n");
		return false;
	}
	*mmu = (struct arm64_el2_mmu){
	    .tcr = tcr,
	    .mair = mair,
	    .ttbr0 = c.pt.root,
	    .sctlr = read_sysreg("sctlr_el2"),
	    .vbar = 0, // set by the resident copy
	};
	log_debug("arm64: EL2 tables at 0x%llx: %u-bit VA from level %u, %llu table pages\n",
		  (unsigned long long)c.pt.root, va_bits, c.pt.start_level,
		  (unsigned long long)c.pt.table_pages);
	return true;
}

// ---- what the firmware maps cacheable -------------------------------------
// edk2 on QEMU virt runs some code in place from flash that its memory map
// does not list. Its own EL2 tables say which memory it treats as Normal:
// every such leaf the memory map leaves out is added as Normal to the plan, so
// Slat's tables and the primary's stage-2 keep that memory executable and
// cacheable.
struct fw_walk {
	struct slat_plan *plan;
	uint64_t mair;
	uint64_t run_base, run_end; // current run of cacheable leaves
	bool ok;
};

static void fw_flush_run(struct fw_walk *w)
{
	if (w->run_end > w->run_base &&
	    !plan_fill_gaps(w->plan, w->run_base, w->run_end - w->run_base, PLAN_MEM_NORMAL))
		w->ok = false;
	w->run_base = w->run_end = 0;
}

static void fw_leaf(struct fw_walk *w, uint64_t va, uint64_t size, uint64_t desc)
{
	unsigned attr = (unsigned)(w->mair >> (8 * ((desc >> 2) & 7))) & 0xff;

	if (!(attr & 0xf0)) // Device-* encodings have a zero upper nibble
		return;
	if (w->run_end != va)
		fw_flush_run(w);
	if (w->run_end == w->run_base)
		w->run_base = va;
	w->run_end = va + size;
}

static void fw_walk_table(struct fw_walk *w, uint64_t table, unsigned level, uint64_t va,
			  unsigned entries)
{
	unsigned shift = 12 + 9 * (3 - level);

	for (unsigned i = 0; i < entries; i++) {
		uint64_t d = ((const uint64_t *)(uintptr_t)table)[i];
		uint64_t at = va + ((uint64_t)i << shift);
		if (!(d & PT_VALID))
			continue;
		if (level < 3 && (d & PT_TABLE))
			fw_walk_table(w, d & PT_ADDR_MASK, level + 1, at, 512);
		else if (level > 0)
			fw_leaf(w, at, 1ull << shift, d);
	}
}

bool arm64_plan_add_fw_cacheable(struct slat_plan *plan)
{
	uint64_t tcr = read_sysreg("tcr_el2");
	unsigned va_bits = 64 - (unsigned)(tcr & 0x3f);
	unsigned level = va_bits > 39 ? 0 : va_bits > 30 ? 1 : 2;
	unsigned entries = 1u << (va_bits - (12 + 9 * (3 - level)));
	struct fw_walk w = {.plan = plan, .mair = read_sysreg("mair_el2"), .ok = true};

	if (((tcr >> 14) & 3) != 0)
		return false; // not a 4K granule: leave the plan as the memory map says
	fw_walk_table(&w, read_sysreg("ttbr0_el2") & PT_ADDR_MASK, level, 0, entries);
	fw_flush_run(&w);
	return w.ok;
}
