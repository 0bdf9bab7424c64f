// SPDX-License-Identifier: Apache-2.0
//
// Second-level translation formats ("format traits"): one descriptor per
// hardware format, one generic walker in mm/ that reads it. A descriptor is
// pure data plus entry codecs (no privileged instruction), compiled both
// hosted and in slat.efi. Instances: arch/x86/fmt_x86.h (EPT 4/5-level, NPT
// 4-level) and arch/arm64/fmt_s2.h (stage-2, 4 KiB granule).
//
// Level numbering is the same for every format: level 0 holds 4 KiB entries,
// level 1 2 MiB entries, level 2 1 GiB entries, level 3 512 GiB, level 4
// 256 TiB. An entry at level L covers 1 << (12 + 9 * L) bytes. The root level
// and its number of entries (which may exceed 512 when the format
// concatenates start-level tables, arm64) depend on the input address width
// and are computed once per VM (struct s2_geom).
#ifndef SLAT_MM_S2_FMT_H
#define SLAT_MM_S2_FMT_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t s2_pte_t;

#define S2_PAGE_SHIFT 12
#define S2_PAGE_SIZE  (1ull << S2_PAGE_SHIFT)
#define S2_LEVEL_BITS 9
#define S2_PTES	      512u // entries per 4 KiB table page
#define S2_MAX_LEVELS 5	   // EPT 5-level

static inline unsigned s2_level_shift(unsigned level)
{
	return S2_PAGE_SHIFT + S2_LEVEL_BITS * level;
}
static inline uint64_t s2_level_size(unsigned level)
{
	return 1ull << s2_level_shift(level);
}

// Access permissions of a leaf (and of a fault).
enum {
	S2_PROT_R = 1u << 0,
	S2_PROT_W = 1u << 1,
	S2_PROT_X = 1u << 2,
	S2_PROT_RW = 3u,
	S2_PROT_RWX = 7u,
};

// Memory types a leaf may carry. The format maps them to its own encoding
// (EPT memory type, NPT PAT bits, arm64 MemAttr with or without FWB).
enum s2_memtype {
	S2_MT_WB = 0,	  // normal, write-back cacheable
	S2_MT_NC = 1,	  // normal, non-cacheable (write-combining on x86)
	S2_MT_DEVICE = 2, // device / uncacheable (MMIO)
};

// Capability flags: a format advertises what it supports (s2_fmt.caps); a VM
// enables a subset (s2_vm_config.caps), e.g. FWB only when the CPU has it.
enum {
	S2_CAP_BBM = 1u << 0,	      // live valid->valid changes need break-before-make
	S2_CAP_FWB = 1u << 1,	      // stage-2 forces the memory type (no CMO on unmap)
	S2_CAP_RANGE_INVAL = 1u << 2, // range invalidation available
	S2_CAP_AD = 1u << 3,	      // accessed/dirty bits in leaves
	S2_CAP_MMIO_MARKER = 1u << 4, // "no slot here" cached as a marker entry
};

struct s2_fmt {
	const char *name;
	unsigned min_ia_bits, max_ia_bits; // input (guest-physical) address width
	unsigned max_levels;		   // levels at max_ia_bits
	unsigned max_leaf_level;	   // 2: 1 GiB leaves allowed
	unsigned concat_log2;		   // log2 of the most start tables concatenated
	unsigned caps;			   // S2_CAP_* the format can do
	unsigned mmio_gen_bits;		   // generation bits a marker holds (0: none)
	uint64_t addr_mask;		   // output-address bits of an entry
	s2_pte_t frozen;		   // non-present value of an entry being removed

	// Hardware-valid: a table pointer or a translating leaf.
	bool (*is_present)(s2_pte_t e);
	// A present entry at `level` that maps memory (always true at level 0).
	bool (*is_leaf)(s2_pte_t e, unsigned level);
	s2_pte_t (*make_table)(uint64_t table_pa);
	// `caps`: the VM's enabled S2_CAP_* (FWB changes arm64 MemAttr).
	s2_pte_t (*make_leaf)(uint64_t pa, unsigned level, unsigned prot, enum s2_memtype mt,
			      unsigned caps);
	unsigned (*leaf_prot)(s2_pte_t e);
	enum s2_memtype (*leaf_memtype)(s2_pte_t e, unsigned caps);
	// MMIO marker: a non-translating entry that makes the next access exit
	// quickly (EPT: misconfiguration) and carries a truncated generation.
	// NULL without S2_CAP_MMIO_MARKER.
	s2_pte_t (*make_mmio)(uint64_t gen);
	bool (*is_mmio)(s2_pte_t e);
	uint64_t (*mmio_gen)(s2_pte_t e);
};

// Output address of an entry (table or leaf), or of a detached table entry
// (a page-aligned raw address: non-present in every format, see mm/walk.c).
static inline uint64_t s2_pte_addr(const struct s2_fmt *f, s2_pte_t e)
{
	return e & f->addr_mask;
}

// Per-VM geometry: how many levels for a given input width, how wide the
// root is (concatenated tables on arm64).
struct s2_geom {
	unsigned ia_bits;
	unsigned root_level;   // level of the root's entries
	unsigned root_entries; // entries in the root (may be < or > 512)
	unsigned root_pages;   // 4 KiB pages of the root (>= 1)
};

// Fills `g` for an input width; false when the format cannot do `ia_bits`.
// root_level = the fewest levels that cover ia_bits with at most
// 1 << concat_log2 start tables concatenated.
bool s2_fmt_geom(const struct s2_fmt *f, unsigned ia_bits, struct s2_geom *g);

// Index of `addr` in a table of `level` (the root uses g->root_entries).
static inline unsigned s2_index(const struct s2_geom *g, uint64_t addr, unsigned level)
{
	uint64_t n = level == g->root_level ? g->root_entries : S2_PTES;

	return (unsigned)((addr >> s2_level_shift(level)) & (n - 1));
}

#endif
