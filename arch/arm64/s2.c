// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's stage-2: an identity map of the whole IPA space except
// Slat's region, Normal write-back where the firmware reports RAM or ROM and
// Device-nGnRE everywhere else, with the largest blocks alignment allows;
// plus the VTCR_EL2/VTTBR_EL2 values that select it.
//
// TRANSITIONAL: the tables are built here by ptable.c until the mm/ engine's
// arm64 stage-2 format and eager map land; arm64_s2_build_primary() and
// arm64_s2_teardown() are the only two functions that change then.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "arch/arm64/ptable.h"
#include "core/log.h"

#define S2_MEMATTR_NORMAL_WB (0xfull << 2) // outer WB, inner WB
#define S2_MEMATTR_DEVICE    (0x1ull << 2) // Device-nGnRE
#define S2_AP_RW	     (3ull << 6)
#define S2_SH_INNER	     (3ull << 8)
#define S2_XN		     (2ull << 53) // XN[1:0] = 0b10: no execution at EL1 or EL0

#define S2_IPA_BITS_WANTED 40 // covers QEMU virt's high PCIe/ECAM windows
#define S2_VMID		   1ull

struct s2_map_ctx {
	struct ptable pt;
};

static bool s2_map_range(void *ctx, uint64_t base, uint64_t size, enum plan_mem_kind kind)
{
	struct s2_map_ctx *c = ctx;
	uint64_t attrs = kind == PLAN_MEM_NORMAL ? S2_MEMATTR_NORMAL_WB | S2_AP_RW | S2_SH_INNER
						 : S2_MEMATTR_DEVICE | S2_AP_RW | S2_XN;

	return ptable_map_identity(&c->pt, base, size, attrs);
}

static unsigned ps_encoding(unsigned bits)
{
	static const unsigned pa[] = {32, 36, 40, 42, 44, 48, 52};

	for (unsigned i = 0; i < sizeof(pa) / sizeof(pa[0]); i++) {
		if (pa[i] == bits)
			return i;
	}
	return 0;
}

static unsigned cpu_pa_bits(void)
{
	static const unsigned pa[] = {32, 36, 40, 42, 44, 48, 52};
	unsigned enc = (unsigned)(read_sysreg(SYSREG_ID_AA64MMFR0_EL1) & 0xf);

	return enc < 7 ? pa[enc] : 32;
}

bool arm64_s2_build_primary(struct region *r, const struct slat_plan *plan, struct arm64_s2 *s2)
{
	unsigned pa_bits = cpu_pa_bits();
	unsigned ipa_bits = pa_bits < S2_IPA_BITS_WANTED ? pa_bits : S2_IPA_BITS_WANTED;
	struct s2_map_ctx c;

	// 40 bits: start at level 1 with two concatenated tables (VTCR.SL0 = 1).
	if (!ptable_init(&c.pt, r, ipa_bits, ipa_bits == 40 ? 2 : 1))
		return false;
	if (!plan_walk_layout(plan, 1ull << ipa_bits, plan->region.base, plan->region.size,
			      s2_map_range, &c)) {
		log_err("arm64: cannot build the stage-2 (out of table pages?)\n");
		return false;
	}
	arm64_mm_account_pages(c.pt.table_pages);
	*s2 = (struct arm64_s2){
	    .root = c.pt.root,
	    .ipa_bits = ipa_bits,
	    .vtcr = (1ull << 31) | ((uint64_t)ps_encoding(ipa_bits) << 16) | (3ull << 12) |
		    (1ull << 10) | (1ull << 8) | ((uint64_t)(2 - c.pt.start_level) << 6) |
		    (64 - ipa_bits),
	    .vttbr = c.pt.root | (S2_VMID << 48),
	    .blocks_1g = c.pt.leaves[1],
	    .blocks_2m = c.pt.leaves[2],
	    .pages_4k = c.pt.leaves[3],
	};
	return true;
}

// Post-order walk: frees every table below `table`, then the table itself
// (roots excepted: the caller frees them). No TLBI or CMO per entry.
static uint64_t s2_free_tables(uint64_t table, unsigned level, unsigned entries)
{
	uint64_t freed = 0;
	uint64_t *e = (uint64_t *)(uintptr_t)table;

	for (unsigned i = 0; level < 3 && i < entries; i++) {
		if ((e[i] & (PT_VALID | PT_TABLE)) != (PT_VALID | PT_TABLE))
			continue;
		uint64_t child = e[i] & PT_ADDR_MASK;
		freed += s2_free_tables(child, level + 1, 512) + 1;
		arm64_mm_page_free(child);
	}
	return freed;
}

// A snapshot of the root entries taken before they are cleared (the root may
// be two concatenated tables).
static uint64_t s2_root_snapshot[1024];

void arm64_s2_teardown(struct arm64_s2 *s2, uint64_t *pages_freed, uint64_t *invalidations)
{
	struct slat_mm_counts before, after;
	unsigned start_level = 2 - (unsigned)((s2->vtcr >> 6) & 3);
	unsigned root_pages = s2->ipa_bits == 40 ? 2 : 1;
	unsigned entries = 512 * root_pages;
	uint64_t *root = (uint64_t *)(uintptr_t)s2->root;

	if (!s2->root) {
		*pages_freed = *invalidations = 0;
		return;
	}
	arm64_mm_counts(&before);
	// Detach: empty the root so that no CPU can reach a table any more, then
	// one invalidation of the whole VMID. Only then is anything freed.
	for (unsigned i = 0; i < entries; i++) {
		s2_root_snapshot[i] = root[i];
		__atomic_store_n(&root[i], 0, __ATOMIC_RELAXED);
	}
	arm64_tlbi_vmalls12e1is();

	uint64_t freed =
	    s2_free_tables((uint64_t)(uintptr_t)s2_root_snapshot, start_level, entries);
	// The root stays in place, empty (other CPUs may still hold VTTBR_EL2 on
	// it); a freed page's free-list link has its low bits clear, so it never
	// reads as a valid descriptor either.
	s2->root = 0;
	arm64_mm_counts(&after);
	*pages_freed = freed;
	*invalidations = after.invalidations - before.invalidations;
}
