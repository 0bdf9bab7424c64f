// SPDX-License-Identifier: Apache-2.0
//
// Starting the primary VM's next loader (the OS): LoadImage/StartImage of an
// ESP file with the configured command line as its load options, and the
// initrd served through the Linux initrd media device path (a LoadFile2
// protocol on a handle whose device path is the vendor node
// LINUX_EFI_INITRD_MEDIA_GUID), which Linux's EFI stub asks for first. The
// firmware's LoadImage verifies the loader (Secure Boot's db and dbx); Slat
// does not use shim's protocol (docs/real-hardware.md).
#ifndef SLAT_BOOT_LOADER_H
#define SLAT_BOOT_LOADER_H

#include "boot/file.h"

struct loader_request {
	const char *loader;  // ESP path
	const char *initrd;  // ESP path, or empty for none
	const char *cmdline; // ASCII load options (may be empty)
};

// True when the firmware enforces Secure Boot (its SecureBoot variable is 1).
bool loader_secure_boot_on(EFI_SYSTEM_TABLE *st);

// Loads `loader` through the firmware's LoadImage, which verifies its
// signature as the firmware verifies any image under Secure Boot, and unloads
// it again: EFI_SUCCESS when the firmware would start it; otherwise its
// refusal, logged in one line.
EFI_STATUS loader_check(EFI_HANDLE parent, struct esp *esp, const char *loader);

// Loads and starts the loader. Returns only when that fails or when the loader
// itself returns (its status), after logging why.
EFI_STATUS loader_start(EFI_HANDLE parent, struct esp *esp, const struct loader_request *req);

#endif
