// SPDX-License-Identifier: Apache-2.0
//
// AMD64 nested page tables: ordinary long-mode entries walked with the
// guest's accesses treated as user accesses (U/S set everywhere). A present
// entry is always readable. MMIO markers are not-present entries with a
// software tag: the access exits as a #NPF and the handler reads the marker.
#include "arch/x86/fmt_x86.h"

#define NPT_ADDR_MASK 0x000ffffffffff000ull
#define NPT_GEN_SHIFT 12
#define NPT_GEN_BITS  19

_Static_assert(12 + 9 * 4 == 48, "NPT geometry");

static bool npt_is_present(s2_pte_t e)
{
	return (e & NPT_P) != 0;
}

static bool npt_is_leaf(s2_pte_t e, unsigned level)
{
	return npt_is_present(e) && (level == 0 || (e & NPT_PS));
}

static s2_pte_t npt_make_table(uint64_t pa)
{
	return (pa & NPT_ADDR_MASK) | NPT_P | NPT_RW | NPT_US | NPT_A;
}

static s2_pte_t npt_make_leaf(uint64_t pa, unsigned level, unsigned prot, enum s2_memtype mt,
			      unsigned caps)
{
	s2_pte_t e = (pa & NPT_ADDR_MASK) | NPT_P | NPT_US | NPT_A;

	if (prot & S2_PROT_W)
		e |= NPT_RW | NPT_D;
	if (!(prot & S2_PROT_X))
		e |= NPT_NX;
	if (level > 0)
		e |= NPT_PS;
	// Default PAT: index 0 WB, 2 UC-, 3 UC.
	if (mt == S2_MT_DEVICE)
		e |= NPT_PCD | NPT_PWT;
	else if (mt == S2_MT_NC)
		e |= NPT_PCD;
	return e;
}

static unsigned npt_leaf_prot(s2_pte_t e)
{
	return S2_PROT_R | (e & NPT_RW ? S2_PROT_W : 0) | (e & NPT_NX ? 0 : S2_PROT_X);
}

static enum s2_memtype npt_leaf_memtype(s2_pte_t e, unsigned caps)
{
	if ((e & (NPT_PCD | NPT_PWT)) == (NPT_PCD | NPT_PWT))
		return S2_MT_DEVICE;
	return e & NPT_PCD ? S2_MT_NC : S2_MT_WB;
}

static s2_pte_t npt_make_mmio(uint64_t gen)
{
	return NPT_MMIO_TAG | ((gen & ((1ull << NPT_GEN_BITS) - 1)) << NPT_GEN_SHIFT);
}

static bool npt_is_mmio(s2_pte_t e)
{
	return !(e & NPT_P) && (e & NPT_MMIO_TAG);
}

static uint64_t npt_mmio_gen(s2_pte_t e)
{
	return (e >> NPT_GEN_SHIFT) & ((1ull << NPT_GEN_BITS) - 1);
}

// max_leaf_level 2: 1 GiB leaves (CPUID Page1GB); 1: 2 MiB at the most.
#define NPT_FMT(name_, max_leaf_)                                                                  \
	{                                                                                          \
		.name = name_, .min_ia_bits = 48, .max_ia_bits = 48, .max_levels = 4,              \
		.max_leaf_level = max_leaf_, .concat_log2 = 0,                                     \
		.caps = S2_CAP_AD | S2_CAP_MMIO_MARKER, .mmio_gen_bits = NPT_GEN_BITS,             \
		.addr_mask = NPT_ADDR_MASK, .frozen = 0x5a0 & ~NPT_P,                              \
		.is_present = npt_is_present, .is_leaf = npt_is_leaf,                              \
		.make_table = npt_make_table, .make_leaf = npt_make_leaf,                          \
		.leaf_prot = npt_leaf_prot, .leaf_memtype = npt_leaf_memtype,                      \
		.make_mmio = npt_make_mmio, .is_mmio = npt_is_mmio, .mmio_gen = npt_mmio_gen,      \
	}

const struct s2_fmt s2_fmt_npt4 = NPT_FMT("npt4", 2);
const struct s2_fmt s2_fmt_npt4_2m = NPT_FMT("npt4-2m", 1);
