// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's stage-2: an identity map of the whole IPA space except
// Slat's region, Normal write-back where the firmware reports RAM or ROM and
// Device-nGnRE everywhere else, with the largest blocks alignment allows;
// plus the VTCR_EL2/VTTBR_EL2 values that select it.
//
// Built by the mm/ engine (arm64 4 KiB stage-2 format, eager identity map)
// over the backend of mm_backend.c (pages from Slat's region, TLBI
// VMALLS12E1IS, DC CIVAC); torn down by the engine's batched root teardown.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/fmt_s2.h"
#include "arch/arm64/hyp.h"
#include "arch/slat_counts.h"
#include "core/config.h"
#include "core/hv.h"
#include "core/log.h"
#include "mm/s2.h"

#define S2_IPA_BITS_WANTED 40 // covers QEMU virt's high PCIe/ECAM windows
#define S2_VMID		   1ull

extern const struct s2_backend arm64_mm_backend;

static struct s2_vm *s2_vm;
static struct s2_root *s2_root;
static uint64_t s2_tables_built; // table pages after the build (splits come on top)

// The plan's ranges in the engine's terms (built once, on the boot CPU).
static struct s2_ident_range s2_mem[PLAN_MAX_RANGES];

// Normal write-back RWX where the firmware reports RAM or ROM, Device RW
// everywhere else, Slat's region never mapped.
static struct s2_ident_layout s2_layout(const struct slat_plan *plan, uint64_t top)
{
	for (unsigned i = 0; i < plan->n_ranges; i++) {
		bool normal = plan->ranges[i].kind == PLAN_MEM_NORMAL;

		s2_mem[i] = (struct s2_ident_range){plan->ranges[i].base, plan->ranges[i].size,
						    normal ? S2_MT_WB : S2_MT_DEVICE,
						    normal ? S2_PROT_RWX : S2_PROT_RW};
	}
	return (struct s2_ident_layout){
	    .top = top,
	    .mem = s2_mem,
	    .n_mem = plan->n_ranges,
	    .gap_mt = S2_MT_DEVICE,
	    .gap_prot = S2_PROT_RW,
	    .hole_base = plan->region.base,
	    .hole_size = plan->region.size,
	};
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
	struct s2_vm_config cfg = {
	    .fmt = &s2_fmt_arm64_4k,
	    .ia_bits = ipa_bits,
	    .caps = S2_CAP_BBM, // no FWB (HCR_EL2.FWB clear), no range TLBI
	    .be = &arm64_mm_backend,
	    .zap_mode = plan->zap_mode == CFG_ZAP_ALL ? S2_ZAP_ALL : S2_ZAP_SLOT,
	    .ncpus = ARM64_MAX_CPUS, // epoch slots: be->cpu_index gives the CPU's index
	};
	struct s2_stats st;
	int err;

	(void)r; // the backend allocates from the region given to arm64_mm_backend_init
	err = s2_vm_create(&cfg, &s2_vm);
	if (!err)
		err = s2_root_get(s2_vm, (struct s2_role){0, 0}, &s2_root);
	if (err) {
		log_err("arm64: cannot create the stage-2 VM (%d)\n", err);
		return false;
	}
	struct s2_ident_layout layout = s2_layout(plan, 1ull << ipa_bits);
	err = s2_map_identity(s2_vm, s2_root, &layout, &st);
	if (err) {
		log_err("arm64: cannot build the stage-2 (%d; out of table pages?)\n", err);
		return false;
	}
	s2_tables_built = st.tables_live;
	*s2 = (struct arm64_s2){
	    .root = s2_root_pa(s2_root),
	    .ipa_bits = ipa_bits,
	    .vtcr = arm64_s2_vtcr(s2_vm_geom(s2_vm), ps_encoding(ipa_bits)),
	    .vttbr = s2_root_pa(s2_root) | (S2_VMID << 48),
	    .blocks_1g = st.leaves_mapped[2],
	    .blocks_2m = st.leaves_mapped[1],
	    .pages_4k = st.leaves_mapped[0],
	};
	return true;
}

// Detaches everything below the root (which stays in place, empty: other
// CPUs may still hold VTTBR_EL2 on it), one invalidation of the VMID, then
// frees the tables with no per-entry TLBI or CMO.
void arm64_s2_teardown(struct arm64_s2 *s2, uint64_t *pages_freed, uint64_t *invalidations)
{
	struct s2_stats work;

	if (!s2->root || !s2_vm) {
		*pages_freed = *invalidations = 0;
		return;
	}
	*pages_freed = s2_root_teardown(s2_vm, s2_root, &work);
	s2->root = 0;
	*invalidations = work.inval_context;
}

void arm64_s2_mm_counts(struct slat_mm_counts *out)
{
	*out = slat_mm_counts_of(s2_vm);
}

// Deposited pages leave the map and come back (core/hv.h,
// arch_hv_primary_unmap): the engine splits blocks with pages of the pool
// the build used, all-or-nothing, and ends with the back end's broadcast
// TLBI VMALLS12E1IS + DSB ISH of the current VMID, the primary's (these run
// in the primary's HVC, VTTBR_EL2 on its stage-2).
int arch_hv_primary_unmap(uint64_t pa, uint64_t pages)
{
	return s2_vm ? s2_unmap(s2_vm, s2_root, pa, pages * 4096) : S2_E_INVAL;
}

int arch_hv_primary_map(uint64_t pa, uint64_t pages)
{
	return s2_vm ? s2_map(s2_vm, s2_root, pa, pages * 4096, pa, S2_PROT_RWX, S2_MT_WB)
		     : S2_E_INVAL;
}

uint64_t arch_hv_primary_tables(void)
{
	struct s2_stats st;

	if (!s2_vm)
		return 0;
	s2_vm_stats(s2_vm, &st);
	return st.tables_live > s2_tables_built ? st.tables_live - s2_tables_built : 0;
}
