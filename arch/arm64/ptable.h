// SPDX-License-Identifier: Apache-2.0
//
// A minimal VMSAv8-64 4 KiB-granule table builder for Slat's own EL2
// stage-1 identity map. Leaf attribute bits are supplied by the caller, so the
// same geometry serves any 4K-granule format. (The primary VM's stage-2 is the
// mm/ engine's job; see s2.c.)
#ifndef SLAT_ARCH_ARM64_PTABLE_H
#define SLAT_ARCH_ARM64_PTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/plan.h"
#include "core/region.h"

#define PT_VALID     (1ull << 0)
#define PT_TABLE     (1ull << 1) // table (levels 0-2) or page (level 3)
#define PT_AF	     (1ull << 10)
#define PT_ADDR_MASK 0x0000fffffffff000ull

struct ptable {
	struct region *pages;  // where table pages come from
	uint64_t root;	       // physical address of the root table(s)
	unsigned start_level;  // 0..2
	unsigned root_entries; // 512, or more for concatenated stage-2 roots
	uint64_t leaves[4];    // leaves written per level (statistics)
	uint64_t table_pages;  // tables allocated, root included
};

// Geometry for an input address size of `va_bits` (the root is allocated
// here, with `concat` concatenated tables when the start level allows it).
bool ptable_init(struct ptable *pt, struct region *pages, unsigned va_bits, unsigned concat);

// Maps [addr, addr + size) to itself with the largest leaves alignment allows
// (1 GiB, 2 MiB, 4 KiB). `attrs` holds every leaf bit except the address and
// the valid/page bits. The range must be page-aligned and not yet mapped.
bool ptable_map_identity(struct ptable *pt, uint64_t addr, uint64_t size, uint64_t attrs);

// Visits the memory layout of [0, limit) for EL2's own stage-1 map: every
// plan range with its kind, gaps as PLAN_MEM_DEVICE. Stops at the first
// callback that returns false and returns false then. (The primary's
// stage-2, which leaves out Slat's region, is mm/'s s2_map_identity.)
typedef bool (*layout_fn)(void *ctx, uint64_t base, uint64_t size, enum plan_mem_kind kind);
bool plan_walk_layout(const struct slat_plan *plan, uint64_t limit, layout_fn fn, void *ctx);

#endif
