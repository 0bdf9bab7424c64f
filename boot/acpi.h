// SPDX-License-Identifier: Apache-2.0
//
// Read-only lookups in the firmware's ACPI tables (ACPI 6.x): find a table by
// signature through the XSDT, and the serial console from SPCR. Every length
// is checked against the table's own header; checksums are verified.
#ifndef SLAT_BOOT_ACPI_H
#define SLAT_BOOT_ACPI_H

#include <stddef.h>
#include <stdint.h>

#include "core/fw_info.h"

// The common header of every system description table.
struct acpi_sdt_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
} __attribute__((packed));

// The first table with `sig` (4 characters), or NULL. `rsdp` may be NULL.
const struct acpi_sdt_header *acpi_find_table(const void *rsdp, const char *sig);

// The console UART described by SPCR; false when there is none or it is of a
// kind Slat does not drive.
bool acpi_spcr_uart(const void *rsdp, struct fw_uart *uart);

#endif
