// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's flattened devicetree writer (vmm_fdt.h). The structure block is
// a sequence of 4-byte aligned tokens: BEGIN_NODE with the NUL-terminated
// unit name, PROP with its value length, the offset of its name in the
// strings block and the value, END_NODE, and END once at the close.
#include <string.h>

#include "vmm_fdt.h"

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void fdt_init(struct fdt *f)
{
	memset(f, 0, sizeof(*f));
}

// Appends LEN bytes and zero padding up to 4-byte alignment (the invariant
// of the structure block: every token starts 4-byte aligned).
static void put_bytes(struct fdt *f, const void *p, size_t len)
{
	size_t padded = (len + 3) & ~(size_t)3;

	if (f->overflow || padded > FDT_STRUCT_MAX - f->struct_len) {
		f->overflow = true;
		return;
	}
	if (len)
		memcpy(f->dt_struct + f->struct_len, p, len);
	memset(f->dt_struct + f->struct_len + len, 0, padded - len);
	f->struct_len += padded;
}

static void put_u32(struct fdt *f, uint32_t v)
{
	uint8_t b[4];

	be32(b, v);
	put_bytes(f, b, 4);
}

// The offset of NAME in the strings block, added when it is not there yet.
static uint32_t string_offset(struct fdt *f, const char *name)
{
	size_t n = strlen(name) + 1;

	for (size_t off = 0; off < f->strings_len; off += strlen(f->strings + off) + 1)
		if (!strcmp(f->strings + off, name))
			return (uint32_t)off;
	if (n > FDT_STRINGS_MAX - f->strings_len) {
		f->overflow = true;
		return 0;
	}
	memcpy(f->strings + f->strings_len, name, n);
	f->strings_len += n;
	return (uint32_t)(f->strings_len - n);
}

void fdt_begin_node(struct fdt *f, const char *name)
{
	put_u32(f, FDT_BEGIN_NODE);
	put_bytes(f, name, strlen(name) + 1);
	f->depth++;
}

void fdt_end_node(struct fdt *f)
{
	put_u32(f, FDT_END_NODE);
	f->depth--;
}

void fdt_prop(struct fdt *f, const char *name, const void *val, size_t len)
{
	uint32_t nameoff = string_offset(f, name);

	put_u32(f, FDT_PROP);
	put_u32(f, (uint32_t)len);
	put_u32(f, nameoff);
	put_bytes(f, val, len);
}

void fdt_prop_cells(struct fdt *f, const char *name, const uint32_t *cells, size_t n)
{
	uint8_t b[64];

	if (n > sizeof(b) / 4) {
		f->overflow = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		be32(b + 4 * i, cells[i]);
	fdt_prop(f, name, b, 4 * n);
}

void fdt_prop_u32(struct fdt *f, const char *name, uint32_t v)
{
	fdt_prop_cells(f, name, &v, 1);
}

// N 64-bit values, each as two cells (high first): "reg" with
// #address-cells = #size-cells = 2.
void fdt_prop_u64s(struct fdt *f, const char *name, const uint64_t *v, size_t n)
{
	uint32_t cells[16];

	if (n > sizeof(cells) / 8) {
		f->overflow = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		cells[2 * i] = (uint32_t)(v[i] >> 32);
		cells[2 * i + 1] = (uint32_t)v[i];
	}
	fdt_prop_cells(f, name, cells, 2 * n);
}

void fdt_prop_str(struct fdt *f, const char *name, const char *s)
{
	fdt_prop(f, name, s, strlen(s) + 1);
}

void fdt_prop_empty(struct fdt *f, const char *name)
{
	fdt_prop(f, name, NULL, 0);
}

size_t fdt_finish(struct fdt *f, uint8_t *out, size_t cap)
{
	size_t rsv = FDT_HEADER_SIZE, st, str, total;

	put_u32(f, FDT_END);
	if (f->overflow || f->depth != 0)
		return 0;
	st = rsv + 16; // one all-zero reservation entry ends the (empty) map
	str = st + f->struct_len;
	total = (str + f->strings_len + 7) & ~(size_t)7;
	if (total > cap)
		return 0;
	memset(out, 0, total);
	be32(out + FDT_OFF_MAGIC, FDT_MAGIC);
	be32(out + FDT_OFF_TOTALSIZE, (uint32_t)total);
	be32(out + FDT_OFF_DT_STRUCT, (uint32_t)st);
	be32(out + FDT_OFF_DT_STRINGS, (uint32_t)str);
	be32(out + FDT_OFF_MEM_RSVMAP, (uint32_t)rsv);
	be32(out + FDT_OFF_VERSION, FDT_VERSION);
	be32(out + FDT_OFF_LAST_COMP, FDT_LAST_COMP);
	be32(out + FDT_OFF_BOOT_CPUID, 0);
	be32(out + FDT_OFF_SIZE_STRINGS, (uint32_t)f->strings_len);
	be32(out + FDT_OFF_SIZE_STRUCT, (uint32_t)f->struct_len);
	memcpy(out + st, f->dt_struct, f->struct_len);
	memcpy(out + str, f->strings, f->strings_len);
	return total;
}
