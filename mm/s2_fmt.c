// SPDX-License-Identifier: Apache-2.0
//
// Geometry shared by every format: how many levels and how wide a root an
// input address width needs.
#include "mm/s2_fmt.h"

bool s2_fmt_geom(const struct s2_fmt *f, unsigned ia_bits, struct s2_geom *g)
{
	if (!f || ia_bits < f->min_ia_bits || ia_bits > f->max_ia_bits)
		return false;
	// Fewest levels such that the start level, with up to 2^concat_log2
	// tables concatenated, covers ia_bits: levels = ceil((ia - c - 12) / 9).
	unsigned bits = ia_bits - f->concat_log2 - S2_PAGE_SHIFT;
	unsigned levels = (bits + S2_LEVEL_BITS - 1) / S2_LEVEL_BITS;

	if (levels == 0 || levels > f->max_levels)
		return false;
	g->ia_bits = ia_bits;
	g->root_level = levels - 1;
	g->root_entries = 1u << (ia_bits - s2_level_shift(levels - 1));
	g->root_pages = g->root_entries > S2_PTES ? g->root_entries / S2_PTES : 1;
	return true;
}
