// SPDX-License-Identifier: Apache-2.0
//
// Slat's reserved region and the resident copy of slat.efi.
//
// The firmware loads slat.efi into EfiLoaderCode memory, which the OS reclaims
// once it boots. Whatever runs at EL2 / in root mode after that must live in
// memory the OS is never given, so Slat allocates one region of
// EfiReservedMemoryType (the OS sees it as reserved; the primary VM's
// second-level tables leave it unmapped) and copies its whole loaded image to
// the region's start. The copy is then relocated with the image's own PE base
// relocations (.reloc, IMAGE_REL_BASED_DIR64 entries) so that its absolute
// pointers point into the copy; code is position-independent by construction
// (PC-relative addressing). The loaded image keeps running in the primary VM
// (it loads the OS); the copy runs the hypervisor. The two share no writable
// data: the copy re-creates every pointer it keeps (see arch/arm64/hyp.c).
#ifndef SLAT_BOOT_RESIDENT_H
#define SLAT_BOOT_RESIDENT_H

#include "boot/efi.h"
#include "core/region.h"

// Allocates `size` bytes (a multiple of 2 MiB) of reserved memory aligned to
// 2 MiB, so the second-level map around it uses large blocks only.
EFI_STATUS resident_alloc_region(EFI_BOOT_SERVICES *bs, uint64_t size, struct region *r);

// What copying a loaded PE32+ image needs from its headers.
struct image_layout {
	uint64_t size;		       // SizeOfImage
	uint32_t section_align;	       // SectionAlignment
	uint32_t reloc_rva, reloc_len; // the base relocation directory
};

// Reads the headers of the loaded image at `image_base`; logs and returns
// EFI_LOAD_ERROR when it is not a PE32+ image with a relocation directory.
EFI_STATUS image_layout(uint64_t image_base, struct image_layout *out);

// Copies the image (l->size bytes) to `dst` and applies its base relocations
// for the new address. On error the copy is wiped and a message logged.
EFI_STATUS image_copy_relocated(uint64_t image_base, const struct image_layout *l, uint64_t dst);

// Copies the loaded PE image at `image_base` (SizeOfImage bytes) to the start
// of `r`, applies its base relocations for the new address and takes that
// space from `r`. On error nothing in `r` is taken and a message is logged.
EFI_STATUS resident_copy_image(uint64_t image_base, struct region *r, uint64_t *image_size);

#endif
