// SPDX-License-Identifier: Apache-2.0
//
// What slat.efi learned from the firmware before doing anything: where the
// ACPI tables and the device tree are, and which serial port the firmware
// names as its console. Filled by boot/ (boot/firmware.c) before the console is up, then handed
// to the architecture (arch/arch.h). Plain data: no EFI types, so arch code
// can read it without the EFI headers.
#ifndef SLAT_CORE_FW_INFO_H
#define SLAT_CORE_FW_INFO_H

#include <stdbool.h>
#include <stdint.h>

enum fw_uart_kind {
	FW_UART_NONE,
	FW_UART_16550, // 16550-compatible
	FW_UART_PL011, // Arm PL011 or SBSA generic UART
};

struct fw_uart {
	enum fw_uart_kind kind;
	bool port_io; // base is an x86 I/O port, else MMIO
	uint64_t base;
	const char *source; // "ACPI SPCR", "device tree", ...
};

struct fw_info {
	const void *acpi_rsdp; // ACPI 2.0+ RSDP, or NULL
	const void *fdt;       // flattened device tree, or NULL
	struct fw_uart uart;   // the firmware's serial console, if it names one
	const void *efi_system_table; // EFI_SYSTEM_TABLE * (arch code that needs boot
				      // services, e.g. x86 MP services, casts it)
};

#endif
