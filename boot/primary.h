// SPDX-License-Identifier: Apache-2.0
//
// Making the running firmware Slat's primary VM and booting the OS in it:
//
//   1. read slat.cfg from the ESP (bad lines: a message with the line number,
//      the default kept);
//   2. reserve Slat's region and copy + relocate slat.efi into it
//      (boot/resident.h);
//   3. describe the machine's memory for the back end (core/plan.h);
//   4. arch_enter_hypervisor(): the firmware continues, deprivileged, here;
//   5. from a copy of slat.efi (boot/handoff.h, so that the loader sees only
//      its own image as EfiLoaderCode), load and start the configured loader
//      with slat.cfg's cmdline as its load options (plus
//      slat.region=BASE,SIZE with region_arg = yes) and its initrd.
//
// With hypervisor = off in slat.cfg, steps 2-4 are skipped: the loader starts
// the same way on the bare firmware (the boot benchmark's baseline).
//
// With no slat.cfg and no default loader on the ESP there is nothing to boot:
// Slat reports and returns EFI_SUCCESS without touching the machine.
//
// Under Secure Boot, before step 2, the firmware's LoadImage is asked whether
// it accepts the loader (boot/loader.h, loader_check); when it refuses,
// nothing is taken and *hand_back is set: the caller returns that status to
// the firmware, whose boot manager goes on with its next boot option.
#ifndef SLAT_BOOT_PRIMARY_H
#define SLAT_BOOT_PRIMARY_H

#include <stdbool.h>

#include "boot/efi.h"
#include "core/fw_info.h"

// Returns only when there is nothing to boot or something failed (status).
EFI_STATUS boot_primary(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, const struct fw_info *fw,
			bool *hand_back);

#endif
