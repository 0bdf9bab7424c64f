// SPDX-License-Identifier: Apache-2.0
//
// A summary of the UEFI memory map: regions and size per memory type, usable
// RAM and the largest free (conventional) region.
#ifndef SLAT_BOOT_MEMMAP_H
#define SLAT_BOOT_MEMMAP_H

#include <stdint.h>

#include "boot/efi.h"

#define MEMMAP_TYPES 16 // EFI_MEMORY_TYPE values 0..15 (15: unaccepted)

struct memmap_summary {
	uint32_t entries;
	uint32_t count[MEMMAP_TYPES + 1]; // last slot: unknown types
	uint64_t pages[MEMMAP_TYPES + 1];
	uint64_t ram_pages; // every type that is RAM (not MMIO/reserved)
	uint64_t largest_free_base;
	uint64_t largest_free_pages;
};

// Reads the current map. Returns EFI_SUCCESS or the firmware's error.
EFI_STATUS memmap_summarise(EFI_BOOT_SERVICES *bs, struct memmap_summary *sum);

// The descriptor of the current map that contains `addr` (EFI_NOT_FOUND if none).
EFI_STATUS memmap_find(EFI_BOOT_SERVICES *bs, uint64_t addr, EFI_MEMORY_DESCRIPTOR *out);

// Logs the summary, one line per type present.
void memmap_report(const struct memmap_summary *sum);

#endif
