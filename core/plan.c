// SPDX-License-Identifier: Apache-2.0
//
// Editing the memory description of a plan (see plan.h).
#include "core/plan.h"

#include "core/mem.h"

// Inserts one range at index `at`, merging with equal-kind neighbours.
static bool insert_at(struct slat_plan *p, unsigned at, uint64_t base, uint64_t size,
		      enum plan_mem_kind kind)
{
	struct plan_range *prev = at ? &p->ranges[at - 1] : NULL;
	struct plan_range *next = at < p->n_ranges ? &p->ranges[at] : NULL;
	bool join_prev = prev && prev->kind == kind && prev->base + prev->size == base;
	bool join_next = next && next->kind == kind && base + size == next->base;

	if (join_prev && join_next) {
		prev->size += size + next->size;
		memmove(next, next + 1, (p->n_ranges - at - 1) * sizeof(*next));
		p->n_ranges--;
	} else if (join_prev) {
		prev->size += size;
	} else if (join_next) {
		next->base = base;
		next->size += size;
	} else {
		if (p->n_ranges == PLAN_MAX_RANGES)
			return false;
		memmove(&p->ranges[at + 1], &p->ranges[at], (p->n_ranges - at) * sizeof(*next));
		p->ranges[at] = (struct plan_range){base, size, kind};
		p->n_ranges++;
	}
	return true;
}

bool plan_fill_gaps(struct slat_plan *p, uint64_t base, uint64_t size, enum plan_mem_kind kind)
{
	uint64_t end = base + size;

	if (end < base)
		end = UINT64_MAX;
	for (unsigned i = 0; base < end; i++) {
		// The gap before range i (or after the last one).
		uint64_t gap_end = i < p->n_ranges ? p->ranges[i].base : UINT64_MAX;
		if (gap_end > base) {
			uint64_t piece_end = end < gap_end ? end : gap_end;
			unsigned before = p->n_ranges;
			if (!insert_at(p, i, base, piece_end - base, kind))
				return false;
			// Keep i on the range that followed the gap: a plain insert shifted
			// it up one slot; a merge with both neighbours folded it into i - 1.
			if (p->n_ranges > before)
				i++;
			else if (p->n_ranges < before)
				i--;
			base = piece_end;
		}
		if (i >= p->n_ranges)
			break;
		uint64_t r_end = p->ranges[i].base + p->ranges[i].size;
		if (r_end > base)
			base = r_end;
	}
	return true;
}
