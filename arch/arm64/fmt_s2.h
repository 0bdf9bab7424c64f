// SPDX-License-Identifier: Apache-2.0
//
// Arm64 stage-2 format for the mm/ engine, 4 KiB granule, IPA 32..48 bits
// with up to 16 concatenated start-level tables. Pure codecs plus the
// VTCR_EL2 arithmetic; no system register access.
#ifndef SLAT_ARCH_ARM64_FMT_S2_H
#define SLAT_ARCH_ARM64_FMT_S2_H

#include "mm/s2_fmt.h"

extern const struct s2_fmt s2_fmt_arm64_4k;

#define S2D_VALID      (1ull << 0)
#define S2D_TABLE      (1ull << 1) // table (levels 1..3) or page (level 0)
#define S2D_ATTR_SHIFT 2	   // MemAttr[3:0]
#define S2D_AP_R       (1ull << 6)
#define S2D_AP_W       (1ull << 7)
#define S2D_SH_INNER   (3ull << 8)
#define S2D_AF	       (1ull << 10)
#define S2D_XN	       (2ull << 53) // XN[1:0] = 0b10: no execution at EL1/EL0

// VTCR_EL2 for a geometry: 4 KiB granule (TG0 0), inner-shareable write-back
// walks, SL0 from the root level, T0SZ from the IPA width; `ps` is the
// physical-size encoding (ID_AA64MMFR0_EL1.PARange).
static inline uint64_t arm64_s2_vtcr(const struct s2_geom *g, unsigned ps)
{
	uint64_t sl0 = g->root_level - 1; // arm start level 1 (our 2) -> SL0 1
	return (1ull << 31) | ((uint64_t)ps << 16) | (3ull << 12) | (1ull << 10) | (1ull << 8) |
	       (sl0 << 6) | (64 - g->ia_bits);
}

#endif
