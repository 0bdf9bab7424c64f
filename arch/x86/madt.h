// SPDX-License-Identifier: Apache-2.0
//
// A minimal ACPI MADT for firmware that publishes none (OVMF under Bochs has
// no ACPI tables at all, so an OS sees one CPU and cannot power off).
#ifndef SLAT_ARCH_X86_MADT_H
#define SLAT_ARCH_X86_MADT_H

#include <stdbool.h>
#include <stdint.h>

#include "boot/efi.h"

// When the firmware's ACPI tables (`*rsdp`, may be NULL) have a MADT, does
// nothing and returns false. Otherwise installs, as the UEFI ACPI 2.0
// configuration table, an RSDP and XSDT that list a MADT with one enabled
// local APIC per entry of `apic_ids` (legacy 8259s present, no I/O APIC:
// the OS routes interrupts through the PIC) and keep every table the
// firmware had. With no ACPI at all and a PIIX4 power-management function
// on PCI bus 0, a FADT (PM1a event/control and PM timer at the PIIX4's PMBA,
// SCI 9, no SMI command port, reset register 0xCF9) with an empty DSDT and a
// FACS is added, so that the OS finds its power-off path (no \_S5_: Linux then
// powers off through the UEFI ResetSystem runtime service, which writes PM1a
// control). Sets `*rsdp` to the new RSDP and returns true.
bool x86_acpi_install_madt(EFI_SYSTEM_TABLE *st, const uint32_t *apic_ids, unsigned n,
			   const void **rsdp);

#endif
