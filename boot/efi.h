// SPDX-License-Identifier: Apache-2.0
//
// GNU-EFI's type and protocol headers (only the headers: slat.efi links no EFI
// library). Everything under boot/ that talks to the firmware includes this.
#ifndef SLAT_BOOT_EFI_H
#define SLAT_BOOT_EFI_H

#include <efi.h>

#endif
