// SPDX-License-Identifier: Apache-2.0
//
// x86 second-level formats for the mm/ engine: Intel EPT (4- and 5-level) and
// AMD64 nested paging (4-level long-mode tables). Pure codecs, no privileged
// instruction: compiled into slat.efi (x86_64) and the hosted test build.
#ifndef SLAT_ARCH_X86_FMT_X86_H
#define SLAT_ARCH_X86_FMT_X86_H

#include "mm/s2_fmt.h"

extern const struct s2_fmt s2_fmt_ept4;	   // 48-bit guest-physical, 4 levels
extern const struct s2_fmt s2_fmt_ept4_2m; // the same without 1 GiB leaves
extern const struct s2_fmt s2_fmt_ept5; // 57-bit guest-physical, 5 levels
extern const struct s2_fmt s2_fmt_npt4; // 48-bit guest-physical, 4 levels
extern const struct s2_fmt s2_fmt_npt4_2m; // the same without 1 GiB leaves (no Page1GB)

// EPT entry bits.
#define EPT_R	     (1ull << 0)
#define EPT_W	     (1ull << 1)
#define EPT_X	     (1ull << 2)
#define EPT_MT_SHIFT 3 // memory type, leaves only: 0 UC, 1 WC, 6 WB
#define EPT_LARGE    (1ull << 7)
#define EPT_A	     (1ull << 8)
#define EPT_D	     (1ull << 9)
#define EPT_MMIO_TAG (1ull << 62) // software: marks an MMIO marker
// EPTP for a root: WB paging structures, walk length, A/D enable.
static inline uint64_t ept_eptp(uint64_t root_pa, unsigned levels, bool ad)
{
	return root_pa | 6u | ((uint64_t)(levels - 1) << 3) | (ad ? 1u << 6 : 0);
}

// NPT (long-mode page table) entry bits.
#define NPT_P	     (1ull << 0)
#define NPT_RW	     (1ull << 1)
#define NPT_US	     (1ull << 2)
#define NPT_PWT	     (1ull << 3)
#define NPT_PCD	     (1ull << 4)
#define NPT_A	     (1ull << 5)
#define NPT_D	     (1ull << 6)
#define NPT_PS	     (1ull << 7)
#define NPT_MMIO_TAG (1ull << 62)
#define NPT_NX	     (1ull << 63)

#endif
