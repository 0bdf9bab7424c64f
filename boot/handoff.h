// SPDX-License-Identifier: Apache-2.0
//
// The hand-off to the next loader, run from a copy of slat.efi.
//
// The firmware loaded slat.efi into EfiLoaderCode pages (edk2 CoreLoadImage:
// an application's image is allocated as EfiLoaderCode, SectionAlignment
// bytes more than SizeOfImage). Left alone, that allocation is still there
// when the next loader runs, so the loader's memory map shows two
// EfiLoaderCode regions, its own and Slat's, and a loader that takes "the"
// LoaderCode region for its own image picks the wrong one. Slat's resident
// copy (boot/resident.h) lives in its reserved region and does not need the
// loaded image; only the code that starts the loader does, until the loader
// starts. So:
//
//   1. copy the whole image to fresh EfiBootServicesCode pages and apply its
//      base relocations there (boot/resident.h), sync the I-cache;
//   2. call handoff_in_copy() *in the copy*; from here no code or data of
//      the loaded image is used again (the copy re-installs its console and
//      screen mirror, the only pointers set at run time into the original);
//   3. re-type the loaded image's pages from EfiLoaderCode to
//      EfiBootServicesData: FreePages + AllocatePages(AllocateAddress) of
//      the same range at TPL_NOTIFY, so that no event callback can take the
//      pages in between. They are never freed for good: the firmware's
//      record of the image still names them, and if the image is ever
//      unloaded (Exit, below) the firmware frees pages Slat still holds, not
//      someone else's. Their contents may be gone (edk2 debug builds scrub
//      freed pages; its memory protection makes freed pages non-executable),
//      which is why nothing may run there again;
//   4. run the entry (start the loader). If the loader returns, power off;
//      if ResetSystem returns, leave through gBS->Exit() on slat.efi's
//      handle, which unwinds to the firmware's StartImage without returning
//      through a single frame of the original image.
//
// The copy (about SizeOfImage bytes of EfiBootServicesCode) is never freed:
// after ExitBootServices the OS reclaims it like any boot-services memory.
#ifndef SLAT_BOOT_HANDOFF_H
#define SLAT_BOOT_HANDOFF_H

#include "boot/efi.h"
#include "core/fw_info.h"

// Runs in the copy; its return value is the status Slat powers off with.
typedef EFI_STATUS (*handoff_entry)(void *arg);

struct handoff {
	EFI_HANDLE image; // slat.efi's image handle
	EFI_SYSTEM_TABLE *st;
	const struct fw_info *fw; // for the console in the copy
	handoff_entry entry;	  // a function of slat.efi (original address)
	void *arg;		  // must not point into the loaded image
	// Filled by handoff_run: the loaded image's range and where the copy is.
	uint64_t image_base, image_size, copy_base, alloc_base, alloc_pages;
	uint32_t section_align;
};

// Copies the image, moves execution into the copy and runs h->entry there
// (see above). Does not return once the copy runs; returns only when the copy
// could not be made (nothing changed; the caller may run the entry itself).
EFI_STATUS handoff_run(struct handoff *h);

#endif
