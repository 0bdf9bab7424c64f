// SPDX-License-Identifier: Apache-2.0
//
// The C memory functions generic code may call. Both builds provide them under
// their standard names: the hosted build from libc, slat.efi from
// core/libc/string.c. Declaring the standard prototypes here keeps mm/ and core/
// free of <string.h>, which a freestanding build does not have.
#ifndef SLAT_CORE_MEM_H
#define SLAT_CORE_MEM_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif
