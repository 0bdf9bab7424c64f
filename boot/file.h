// SPDX-License-Identifier: Apache-2.0
//
// Reading files from the volume slat.efi was loaded from (the ESP), and
// device paths that name them (for LoadImage).
#ifndef SLAT_BOOT_FILE_H
#define SLAT_BOOT_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "boot/efi.h"

struct esp {
	EFI_BOOT_SERVICES *bs;
	EFI_HANDLE device; // the ESP's device handle
	EFI_FILE_HANDLE root;
};

// Opens the volume slat.efi (`image`) came from.
EFI_STATUS esp_open(struct esp *esp, EFI_BOOT_SERVICES *bs, EFI_HANDLE image);

// Reads the whole file at ESP path `path` (ASCII, `\` separators) into a pool
// buffer of `mem_type`, NUL-terminated one byte past `*size`. EFI_NOT_FOUND
// when it does not exist; EFI_BAD_BUFFER_SIZE when larger than `max`.
EFI_STATUS esp_read(struct esp *esp, const char *path, EFI_MEMORY_TYPE mem_type, uint64_t max,
		    void **data, uint64_t *size);

// True when `path` names an existing file.
bool esp_exists(struct esp *esp, const char *path);

// A pool-allocated device path: the ESP's own, then a file-path node for
// `path`, then the end node. NULL on failure.
EFI_DEVICE_PATH *esp_file_device_path(struct esp *esp, const char *path);

// ASCII to UCS-2 into `out` (capacity `cap` characters, NUL included).
// Returns false when it does not fit.
bool ascii_to_ucs2(const char *in, CHAR16 *out, size_t cap);

#endif
