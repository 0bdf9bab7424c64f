// SPDX-License-Identifier: Apache-2.0
//
// Intel EPT entries (4- and 5-level). Present means readable or executable:
// a write-only entry is an EPT misconfiguration, which is what an MMIO marker
// is (the access exits as a misconfiguration, not as a violation).
#include "arch/x86/fmt_x86.h"

#define EPT_ADDR_MASK 0x000ffffffffff000ull
#define EPT_GEN_SHIFT 12
#define EPT_GEN_BITS  19

_Static_assert(S2_PTES * sizeof(s2_pte_t) == S2_PAGE_SIZE, "one table per page");
_Static_assert(12 + 9 * 4 == 48 && 12 + 9 * 5 == 57, "EPT geometry");

static bool ept_is_present(s2_pte_t e)
{
	return (e & (EPT_R | EPT_X)) != 0;
}

static bool ept_is_leaf(s2_pte_t e, unsigned level)
{
	return ept_is_present(e) && (level == 0 || (e & EPT_LARGE));
}

static s2_pte_t ept_make_table(uint64_t pa)
{
	return (pa & EPT_ADDR_MASK) | EPT_R | EPT_W | EPT_X;
}

static s2_pte_t ept_make_leaf(uint64_t pa, unsigned level, unsigned prot, enum s2_memtype mt,
			      unsigned caps)
{
	static const uint64_t mtype[] = {[S2_MT_WB] = 6, [S2_MT_NC] = 1, [S2_MT_DEVICE] = 0};
	s2_pte_t e = (pa & EPT_ADDR_MASK) | (mtype[mt] << EPT_MT_SHIFT);

	e |= (prot & S2_PROT_R ? EPT_R : 0) | (prot & S2_PROT_W ? EPT_W : 0) |
	     (prot & S2_PROT_X ? EPT_X : 0);
	if (level > 0)
		e |= EPT_LARGE;
	if (caps & S2_CAP_AD)
		e |= EPT_A | (prot & S2_PROT_W ? EPT_D : 0);
	return e;
}

static unsigned ept_leaf_prot(s2_pte_t e)
{
	return (e & EPT_R ? S2_PROT_R : 0) | (e & EPT_W ? S2_PROT_W : 0) |
	       (e & EPT_X ? S2_PROT_X : 0);
}

static enum s2_memtype ept_leaf_memtype(s2_pte_t e, unsigned caps)
{
	unsigned mt = (unsigned)(e >> EPT_MT_SHIFT) & 7;

	return mt == 6 ? S2_MT_WB : mt == 1 ? S2_MT_NC : S2_MT_DEVICE;
}

static s2_pte_t ept_make_mmio(uint64_t gen)
{
	uint64_t g = gen & ((1ull << EPT_GEN_BITS) - 1);

	return EPT_MMIO_TAG | (g << EPT_GEN_SHIFT) | EPT_W; // W without R: misconfig
}

static bool ept_is_mmio(s2_pte_t e)
{
	return (e & (EPT_R | EPT_W | EPT_X)) == EPT_W && (e & EPT_MMIO_TAG);
}

static uint64_t ept_mmio_gen(s2_pte_t e)
{
	return (e >> EPT_GEN_SHIFT) & ((1ull << EPT_GEN_BITS) - 1);
}

// max_leaf: 2 with 1 GiB leaves (IA32_VMX_EPT_VPID_CAP bit 17), 1 with 2 MiB only.
#define EPT_FMT(lv, bits, max_leaf, suffix)                                                        \
	{                                                                                          \
		.name = "ept" #lv suffix, .min_ia_bits = bits, .max_ia_bits = bits,                \
		.max_levels = lv, .max_leaf_level = max_leaf, .concat_log2 = 0,                    \
		.caps = S2_CAP_AD | S2_CAP_MMIO_MARKER, .mmio_gen_bits = EPT_GEN_BITS,             \
		.addr_mask = EPT_ADDR_MASK, .frozen = 0x5a0, .is_present = ept_is_present,         \
		.is_leaf = ept_is_leaf, .make_table = ept_make_table, .make_leaf = ept_make_leaf,  \
		.leaf_prot = ept_leaf_prot, .leaf_memtype = ept_leaf_memtype,                      \
		.make_mmio = ept_make_mmio, .is_mmio = ept_is_mmio, .mmio_gen = ept_mmio_gen,      \
	}

const struct s2_fmt s2_fmt_ept4 = EPT_FMT(4, 48, 2, "");
const struct s2_fmt s2_fmt_ept4_2m = EPT_FMT(4, 48, 1, "-2m");
const struct s2_fmt s2_fmt_ept5 = EPT_FMT(5, 57, 2, "");
