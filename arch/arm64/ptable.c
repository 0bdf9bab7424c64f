// SPDX-License-Identifier: Apache-2.0
//
// 4 KiB-granule identity table builder (see ptable.h). Geometry from the Arm
// ARM (DDI 0487, D8.2): each level resolves 9 bits, level 3 maps 4 KiB pages,
// levels 1 and 2 may hold 1 GiB / 2 MiB blocks.
#include "arch/arm64/ptable.h"

static unsigned level_shift(unsigned level)
{
	return 12 + 9 * (3 - level);
}

bool ptable_init(struct ptable *pt, struct region *pages, unsigned va_bits, unsigned concat)
{
	*pt = (struct ptable){.pages = pages};
	if (va_bits < 25 || va_bits > 48)
		return false;
	unsigned level = va_bits > 39 ? 0 : va_bits > 30 ? 1 : 2;
	unsigned bits_at_root = va_bits - level_shift(level);
	unsigned entries = 1u << bits_at_root;

	// A stage-2 root may start one level lower with up to 16 tables side by side.
	if (concat > 1 && level < 2) {
		unsigned bits_next = va_bits - level_shift(level + 1);
		if (bits_next > 9 && bits_next <= 13 && (1u << (bits_next - 9)) == concat) {
			level++;
			entries = 1u << bits_next;
		}
	}
	unsigned root_pages = entries > 512 ? entries / 512 : 1;
	pt->root = region_alloc(pages, root_pages, (uint64_t)root_pages * 4096);
	if (!pt->root)
		return false;
	pt->start_level = level;
	pt->root_entries = entries;
	pt->table_pages = root_pages;
	return true;
}

static uint64_t *entry_at(uint64_t table, uint64_t va, unsigned level, unsigned entries)
{
	uint64_t idx = (va >> level_shift(level)) & (entries - 1);
	return (uint64_t *)(uintptr_t)table + idx;
}

// The next-level table under `e`, allocating it if the entry is empty.
static uint64_t next_table(struct ptable *pt, uint64_t *e)
{
	if (*e & PT_VALID)
		return (*e & PT_TABLE) ? (*e & PT_ADDR_MASK) : 0; // 0: a block is there
	uint64_t t = region_alloc(pt->pages, 1, 4096);
	if (!t)
		return 0;
	pt->table_pages++;
	*e = t | PT_TABLE | PT_VALID;
	return t;
}

static bool map_one(struct ptable *pt, uint64_t addr, unsigned leaf_level, uint64_t attrs)
{
	uint64_t table = pt->root;
	unsigned entries = pt->root_entries;

	for (unsigned level = pt->start_level; level < leaf_level; level++) {
		table = next_table(pt, entry_at(table, addr, level, entries));
		if (!table)
			return false;
		entries = 512;
	}
	uint64_t *e = entry_at(table, addr, leaf_level, entries);
	if (*e & PT_VALID)
		return false; // overlapping request
	*e = addr | attrs | PT_AF | PT_VALID | (leaf_level == 3 ? PT_TABLE : 0);
	pt->leaves[leaf_level]++;
	return true;
}

bool ptable_map_identity(struct ptable *pt, uint64_t addr, uint64_t size, uint64_t attrs)
{
	if ((addr | size) & 0xfff)
		return false;
	while (size) {
		unsigned level = 3;
		for (unsigned l = pt->start_level ? pt->start_level : 1; l < 3; l++) {
			uint64_t blk = 1ull << level_shift(l);
			if (!(addr & (blk - 1)) && size >= blk) {
				level = l;
				break;
			}
		}
		if (!map_one(pt, addr, level, attrs))
			return false;
		uint64_t step = 1ull << level_shift(level);
		addr += step;
		size -= step;
	}
	return true;
}

bool plan_walk_layout(const struct slat_plan *plan, uint64_t limit, layout_fn fn, void *ctx)
{
	uint64_t at = 0;

	for (unsigned i = 0; i < plan->n_ranges && at < limit; i++) {
		const struct plan_range *r = &plan->ranges[i];
		uint64_t base = r->base < at ? at : r->base;
		uint64_t end = r->base + r->size > limit ? limit : r->base + r->size;
		if (base >= end)
			continue;
		if ((base > at && !fn(ctx, at, base - at, PLAN_MEM_DEVICE)) ||
		    !fn(ctx, base, end - base, r->kind))
			return false;
		at = end;
	}
	return at >= limit || fn(ctx, at, limit - at, PLAN_MEM_DEVICE);
}
