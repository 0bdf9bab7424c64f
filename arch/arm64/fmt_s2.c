// SPDX-License-Identifier: Apache-2.0
//
// Arm64 stage-2 descriptors, 4 KiB granule. Our level 0 is the architecture's
// level 3 (pages), level 1 its level 2 (2 MiB blocks), level 2 its level 1
// (1 GiB blocks); level 3 (arm level 0) holds tables only. MemAttr depends on
// FEAT_S2FWB: with FWB the stage-2 attribute forces the final memory type.
#include "arch/arm64/fmt_s2.h"

#define S2D_ADDR_MASK 0x0000fffffffff000ull

// MemAttr[3:0] values.
#define ATTR_DEV_NGNRE 0x1 // both encodings
#define ATTR_NC	       0x5 // non-FWB: outer/inner NC; FWB: forced NC
#define ATTR_WB	       0xf // non-FWB: outer/inner write-back
#define ATTR_FWB_WB    0x6 // FWB: forced write-back

_Static_assert(12 + 9 * 3 + 4 == 43 && 12 + 9 * 4 == 48, "stage-2 4K geometry");

static bool s2d_is_present(s2_pte_t e)
{
	return (e & S2D_VALID) != 0;
}

static bool s2d_is_leaf(s2_pte_t e, unsigned level)
{
	if (!(e & S2D_VALID))
		return false;
	return level == 0 || !(e & S2D_TABLE);
}

static s2_pte_t s2d_make_table(uint64_t pa)
{
	return (pa & S2D_ADDR_MASK) | S2D_VALID | S2D_TABLE;
}

static s2_pte_t s2d_make_leaf(uint64_t pa, unsigned level, unsigned prot, enum s2_memtype mt,
			      unsigned caps)
{
	bool fwb = caps & S2_CAP_FWB;
	uint64_t attr = mt == S2_MT_DEVICE ? ATTR_DEV_NGNRE
			: mt == S2_MT_NC   ? ATTR_NC
			: fwb		   ? ATTR_FWB_WB
					   : ATTR_WB;
	s2_pte_t e = (pa & S2D_ADDR_MASK) | S2D_VALID | S2D_AF | (attr << S2D_ATTR_SHIFT);

	if (level == 0)
		e |= S2D_TABLE; // page descriptor
	if (mt != S2_MT_DEVICE)
		e |= S2D_SH_INNER;
	e |= (prot & S2_PROT_R ? S2D_AP_R : 0) | (prot & S2_PROT_W ? S2D_AP_W : 0);
	if (!(prot & S2_PROT_X))
		e |= S2D_XN;
	return e;
}

static unsigned s2d_leaf_prot(s2_pte_t e)
{
	return (e & S2D_AP_R ? S2_PROT_R : 0) | (e & S2D_AP_W ? S2_PROT_W : 0) |
	       ((e & S2D_XN) ? 0 : S2_PROT_X);
}

static enum s2_memtype s2d_leaf_memtype(s2_pte_t e, unsigned caps)
{
	unsigned attr = (unsigned)(e >> S2D_ATTR_SHIFT) & 0xf;

	if (caps & S2_CAP_FWB) {
		if (!(attr & 0x4))
			return S2_MT_DEVICE;
		return (attr & 3) == 2 ? S2_MT_WB : S2_MT_NC;
	}
	if (!(attr >> 2))
		return S2_MT_DEVICE;
	return attr == ATTR_WB ? S2_MT_WB : S2_MT_NC;
}

const struct s2_fmt s2_fmt_arm64_4k = {
    .name = "arm64-4k",
    .min_ia_bits = 32,
    .max_ia_bits = 48,
    .max_levels = 4,
    .max_leaf_level = 2,
    .concat_log2 = 4,
    .caps = S2_CAP_BBM | S2_CAP_FWB | S2_CAP_RANGE_INVAL,
    .mmio_gen_bits = 0,
    .addr_mask = S2D_ADDR_MASK,
    .frozen = 0x5a0 & ~S2D_VALID,
    .is_present = s2d_is_present,
    .is_leaf = s2d_is_leaf,
    .make_table = s2d_make_table,
    .make_leaf = s2d_make_leaf,
    .leaf_prot = s2d_leaf_prot,
    .leaf_memtype = s2d_leaf_memtype,
};
