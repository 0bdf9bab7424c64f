// SPDX-License-Identifier: Apache-2.0
//
// A flattened devicetree writer (the Devicetree Specification v0.4, chapter
// 5: format version 17). The tree is written top-down: nodes open and close
// in order, properties go right after their node's name. Big-endian
// throughout. fdt_finish() lays out, in this order and each 8-byte aligned:
// the 40-byte header, an empty memory reservation map (one zero entry), the
// structure block, the strings block (each property name once).
#ifndef SLAT_VMM_FDT_H
#define SLAT_VMM_FDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FDT_MAGIC	0xd00dfeedu
#define FDT_VERSION	17
#define FDT_LAST_COMP	16
#define FDT_HEADER_SIZE 40
#define FDT_BEGIN_NODE	1u
#define FDT_END_NODE	2u
#define FDT_PROP	3u
#define FDT_END		9u
#define FDT_STRUCT_MAX	(64u << 10)
#define FDT_STRINGS_MAX (8u << 10)

// Header field offsets (each a big-endian u32).
#define FDT_OFF_MAGIC	     0
#define FDT_OFF_TOTALSIZE    4
#define FDT_OFF_DT_STRUCT    8
#define FDT_OFF_DT_STRINGS   12
#define FDT_OFF_MEM_RSVMAP   16
#define FDT_OFF_VERSION	     20
#define FDT_OFF_LAST_COMP    24
#define FDT_OFF_BOOT_CPUID   28
#define FDT_OFF_SIZE_STRINGS 32
#define FDT_OFF_SIZE_STRUCT  36

struct fdt {
	uint8_t dt_struct[FDT_STRUCT_MAX];
	size_t struct_len;
	char strings[FDT_STRINGS_MAX];
	size_t strings_len;
	int depth;     // nodes open
	bool overflow; // a block ran out of room: fdt_finish() fails
};

void fdt_init(struct fdt *f);
void fdt_begin_node(struct fdt *f, const char *name);
void fdt_end_node(struct fdt *f);
void fdt_prop(struct fdt *f, const char *name, const void *val, size_t len);
void fdt_prop_u32(struct fdt *f, const char *name, uint32_t v);
void fdt_prop_cells(struct fdt *f, const char *name, const uint32_t *cells, size_t n);
void fdt_prop_u64s(struct fdt *f, const char *name, const uint64_t *v, size_t n);
void fdt_prop_str(struct fdt *f, const char *name, const char *s);
void fdt_prop_empty(struct fdt *f, const char *name);
// The blob into OUT (CAP bytes): its size, or 0 when it does not fit, a
// block overflowed or a node is still open.
size_t fdt_finish(struct fdt *f, uint8_t *out, size_t cap);

#endif
