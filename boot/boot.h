// SPDX-License-Identifier: Apache-2.0
//
// boot/: the UEFI side of slat.efi (entry point, firmware discovery).
#ifndef SLAT_BOOT_BOOT_H
#define SLAT_BOOT_BOOT_H

#include "boot/efi.h"
#include "core/fw_info.h"

// Fills `fw` from the system table's configuration tables (ACPI, DTB).
void boot_collect_firmware_info(EFI_SYSTEM_TABLE *st, struct fw_info *fw);

// Powers the machine off (ResetSystem). ResetSystem does not return on
// success; if it does, this logs it and returns `status` for the caller to
// hand back to the firmware.
EFI_STATUS boot_power_off(EFI_SYSTEM_TABLE *st, EFI_STATUS status);
// Mirrors the log's errors and screen lines to the firmware's ConOut
// (core/log.h: log_set_mirror) from this copy of the image.
void boot_screen_mirror(EFI_SYSTEM_TABLE *st);

#endif
