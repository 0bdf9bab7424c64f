// SPDX-License-Identifier: Apache-2.0
//
// Read-only lookups in a flattened device tree (Devicetree Specification
// v0.4, chapter 5). Bounds are checked against the blob's own header: a
// malformed blob gives "not found", never a fault outside it.
#ifndef SLAT_BOOT_FDT_H
#define SLAT_BOOT_FDT_H

#include <stdbool.h>
#include <stdint.h>

// Finds the first node whose "compatible" list holds `compat`. On success
// stores the first address of its "reg" (0 if it has none) in `*reg_base`
// when that is not NULL.
bool fdt_find_compatible(const void *fdt, const char *compat, uint64_t *reg_base);

#endif
