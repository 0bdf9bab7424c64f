// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's identity map (mm/s2.h, "primary identity map"), one
// builder for arm64 stage-2, NPT and EPT. [0, top) is cut at every boundary
// of the layout (memory ranges, overrides, Slat's region); the pieces are
// classified (hole, override, memory, gap) and consecutive pieces with the
// same attributes are mapped by one s2_map, which picks the largest leaves
// the alignment of that whole run allows.
#include "mm/s2_internal.h"

struct ident_piece {
	bool mapped; // false inside the hole
	enum s2_memtype mt;
	unsigned prot;
};

static bool aligned(uint64_t v)
{
	return (v & (S2_PAGE_SIZE - 1)) == 0;
}

// Ranges are 4 KiB aligned, non-empty, ascending and disjoint.
static bool ranges_ok(const struct s2_ident_range *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!aligned(r[i].base) || !aligned(r[i].size) || !r[i].size ||
		    r[i].base + r[i].size < r[i].base || (r[i].prot & ~S2_PROT_RWX) ||
		    r[i].mt > S2_MT_DEVICE)
			return false;
		if (i && r[i].base < r[i - 1].base + r[i - 1].size)
			return false;
	}
	return true;
}

static int layout_check(const struct s2_vm *vm, const struct s2_ident_layout *l)
{
	if ((l->n_mem && !l->mem) || (l->n_over && !l->over))
		return S2_E_INVAL;
	if (!aligned(l->top) || !aligned(l->hole_base) || !aligned(l->hole_size))
		return S2_E_UNALIGNED;
	if (!l->top)
		return S2_E_ZERO;
	if (l->top > (1ull << vm->geom.ia_bits))
		return S2_E_RANGE;
	if ((l->gap_prot & ~S2_PROT_RWX) || l->gap_mt > S2_MT_DEVICE ||
	    l->hole_base + l->hole_size < l->hole_base || !ranges_ok(l->mem, l->n_mem) ||
	    !ranges_ok(l->over, l->n_over))
		return S2_E_INVAL;
	return 0;
}

// Lowers *next to the first boundary of `r` above `at`; returns the range
// that contains `at`, or NULL.
static const struct s2_ident_range *range_at(const struct s2_ident_range *r, unsigned n,
					     uint64_t at, uint64_t *next)
{
	const struct s2_ident_range *hit = NULL;

	for (unsigned i = 0; i < n; i++) {
		uint64_t end = r[i].base + r[i].size;

		if (r[i].base > at && r[i].base < *next)
			*next = r[i].base;
		if (end > at && end < *next)
			*next = end;
		if (r[i].base <= at && at < end)
			hit = &r[i];
	}
	return hit;
}

// Attributes at `at`; *next: where they may change.
static struct ident_piece piece_at(const struct s2_ident_layout *l, uint64_t at, uint64_t *next)
{
	struct s2_ident_range hole = {.base = l->hole_base, .size = l->hole_size};
	const struct s2_ident_range *over, *mem;
	bool in_hole;

	*next = l->top;
	in_hole = l->hole_size && range_at(&hole, 1, at, next);
	over = range_at(l->over, l->n_over, at, next);
	mem = range_at(l->mem, l->n_mem, at, next);
	if (in_hole)
		return (struct ident_piece){.mapped = false};
	if (over)
		return (struct ident_piece){true, over->mt, over->prot};
	if (mem)
		return (struct ident_piece){true, mem->mt, mem->prot};
	return (struct ident_piece){true, l->gap_mt, l->gap_prot};
}

static bool same(struct ident_piece a, struct ident_piece b)
{
	return a.mapped == b.mapped && a.mt == b.mt && a.prot == b.prot;
}

int s2_map_identity(struct s2_vm *vm, struct s2_root *root, const struct s2_ident_layout *l,
		    struct s2_stats *out)
{
	struct ident_piece run = {.mapped = false};
	uint64_t run_lo = 0, at = 0;
	int r;

	if (!vm || !root || !l)
		return S2_E_INVAL;
	r = layout_check(vm, l);
	if (r)
		return r;
	while (at < l->top) {
		uint64_t next;
		struct ident_piece p = piece_at(l, at, &next);

		if (!same(p, run)) {
			if (run.mapped)
				r = s2_map(vm, root, run_lo, at - run_lo, run_lo, run.prot, run.mt);
			if (r)
				return r;
			run = p;
			run_lo = at;
		}
		at = next;
	}
	if (run.mapped)
		r = s2_map(vm, root, run_lo, l->top - run_lo, run_lo, run.prot, run.mt);
	if (!r && out)
		s2_vm_stats(vm, out);
	return r;
}
