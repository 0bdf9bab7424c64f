// SPDX-License-Identifier: Apache-2.0
//
// The C memory functions generic code may call. Both builds provide them under
// their standard names: the hosted build from libc, slat.efi from
// core/libc/string.c. Declaring the standard prototypes here keeps mm/ and core/
// free of <string.h>, which a freestanding build does not have.
#ifndef SLAT_CORE_MEM_H
#define SLAT_CORE_MEM_H

#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

// Little-endian fields at any alignment (firmware tables, PE images; both
// targets are little-endian).
static inline uint16_t load_le16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t load_le32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t load_le64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

#endif
