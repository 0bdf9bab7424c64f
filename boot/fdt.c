// SPDX-License-Identifier: Apache-2.0
//
// Minimal flattened-device-tree walker: the structure block is a sequence of
// big-endian 32-bit tokens (BEGIN_NODE name, PROP len nameoff value, END_NODE,
// NOP, END), each item padded to 4 bytes.
#include "boot/fdt.h"

#include <stddef.h>

#define FDT_MAGIC      0xd00dfeedu
#define FDT_BEGIN_NODE 1u
#define FDT_END_NODE   2u
#define FDT_PROP       3u
#define FDT_NOP	       4u
#define FDT_END	       9u
#define FDT_MAX_DEPTH  16

struct fdt_walk {
	const uint8_t *base;
	uint32_t struct_off, struct_size;
	uint32_t strings_off, strings_size;
	uint32_t pos; // offset inside the structure block
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool fdt_open(const void *fdt, struct fdt_walk *w)
{
	const uint8_t *h = fdt;

	if (!h || be32(h) != FDT_MAGIC)
		return false;
	uint32_t total = be32(h + 4);
	*w = (struct fdt_walk){
	    .base = h,
	    .struct_off = be32(h + 8),
	    .strings_off = be32(h + 12),
	    .strings_size = be32(h + 32),
	    .struct_size = be32(h + 36),
	};
	return w->struct_off < total && w->struct_size <= total - w->struct_off &&
	       w->strings_off < total && w->strings_size <= total - w->strings_off;
}

static bool next_u32(struct fdt_walk *w, uint32_t *v)
{
	if (w->struct_size - w->pos < 4 || w->pos > w->struct_size)
		return false;
	*v = be32(w->base + w->struct_off + w->pos);
	w->pos += 4;
	return true;
}

static bool skip(struct fdt_walk *w, uint32_t len)
{
	uint32_t padded = (len + 3) & ~3u;

	if (padded < len || padded > w->struct_size - w->pos)
		return false;
	w->pos += padded;
	return true;
}

static bool str_eq(const char *a, const char *b, uint32_t max)
{
	for (uint32_t i = 0; i < max; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return false;
}

// Is `want` one of the NUL-separated strings in value[0..len)?
static bool list_has(const char *value, uint32_t len, const char *want)
{
	uint32_t i = 0;

	while (i < len) {
		if (str_eq(value + i, want, len - i))
			return true;
		while (i < len && value[i])
			i++;
		i++;
	}
	return false;
}

static uint64_t read_cells(const uint8_t *p, uint32_t cells)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < cells; i++)
		v = v << 32 | be32(p + 4 * i);
	return v;
}

struct node_state {
	uint32_t child_addr_cells; // "#address-cells" for this node's children
	bool match;
	uint64_t reg;
};

bool fdt_find_compatible(const void *fdt, const char *compat, uint64_t *reg_base)
{
	struct fdt_walk w;
	struct node_state st[FDT_MAX_DEPTH + 1];
	int depth = 0;
	uint32_t tok;

	if (!fdt_open(fdt, &w))
		return false;
	st[0] = (struct node_state){.child_addr_cells = 2};
	while (next_u32(&w, &tok)) {
		if (tok == FDT_BEGIN_NODE) {
			const char *name = (const char *)w.base + w.struct_off + w.pos;
			uint32_t n = 0;
			while (w.pos + n < w.struct_size && name[n])
				n++;
			if (!skip(&w, n + 1) || ++depth > FDT_MAX_DEPTH)
				return false;
			st[depth] = (struct node_state){.child_addr_cells = 2};
		} else if (tok == FDT_END_NODE) {
			if (depth > 0 && st[depth].match) {
				if (reg_base)
					*reg_base = st[depth].reg;
				return true;
			}
			if (--depth < 0)
				return false;
		} else if (tok == FDT_PROP) {
			uint32_t len, nameoff;
			if (!next_u32(&w, &len) || !next_u32(&w, &nameoff) ||
			    nameoff >= w.strings_size)
				return false;
			const char *pname = (const char *)w.base + w.strings_off + nameoff;
			const uint8_t *val = w.base + w.struct_off + w.pos;
			uint32_t room = w.strings_size - nameoff;
			if (!skip(&w, len))
				return false;
			uint32_t cells = depth > 0 ? st[depth - 1].child_addr_cells : 2;
			if (str_eq(pname, "compatible", room) &&
			    list_has((const char *)val, len, compat))
				st[depth].match = true;
			else if (str_eq(pname, "#address-cells", room) && len == 4)
				st[depth].child_addr_cells = be32(val);
			else if (str_eq(pname, "reg", room) && cells <= 2 && len >= 4 * cells)
				st[depth].reg = read_cells(val, cells);
		} else if (tok != FDT_NOP) {
			return false; // FDT_END or garbage
		}
	}
	return false;
}
