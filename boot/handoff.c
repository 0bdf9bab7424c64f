// SPDX-License-Identifier: Apache-2.0
//
// The hand-off to the next loader from a copy of slat.efi (see handoff.h).
#include "boot/handoff.h"

#include "arch/arch.h"
#include "boot/boot.h"
#include "boot/image_range.h"
#include "boot/memmap.h"
#include "boot/resident.h"
#include "core/log.h"

#define PAGE 4096ull

static uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

// The loaded image's own allocation: the EfiLoaderCode pages around it
// (boot/image_range.h).
static EFI_STATUS image_allocation(EFI_BOOT_SERVICES *bs, struct handoff *h)
{
	EFI_MEMORY_DESCRIPTOR d;
	struct image_range r;
	EFI_STATUS s = memmap_find(bs, h->image_base, &d);

	if (EFI_ERROR(s))
		return s;
	if (d.Type != EfiLoaderCode ||
	    !image_range_of(d.PhysicalStart, d.NumberOfPages, h->image_base, h->image_size,
			    h->section_align, &r))
		return EFI_NOT_FOUND;
	h->alloc_base = r.base;
	h->alloc_pages = r.pages;
	return EFI_SUCCESS;
}

// Step 3 of handoff.h, run in the copy. Returns true when the range is held
// again (as EfiBootServicesData), false when it had to be left free.
static bool retype_original(EFI_BOOT_SERVICES *bs, const struct handoff *h)
{
	EFI_PHYSICAL_ADDRESS at = h->alloc_base;
	EFI_TPL old = bs->RaiseTPL(TPL_NOTIFY);
	EFI_STATUS fs = bs->FreePages(h->alloc_base, h->alloc_pages);
	EFI_STATUS as = EFI_ERROR(fs) ? fs
				      : bs->AllocatePages(AllocateAddress, EfiBootServicesData,
							  h->alloc_pages, &at);
	bs->RestoreTPL(old);
	if (EFI_ERROR(fs)) {
		log_warn("slat: cannot free the loaded image's pages (0x%llx); the loader will see "
			 "them as EfiLoaderCode\n",
			 (unsigned long long)fs);
		return true;
	}
	if (EFI_ERROR(as)) {
		log_warn("slat: loaded image's pages freed but not re-taken (0x%llx)\n",
			 (unsigned long long)as);
		return false;
	}
	log_info("slat: hand-off runs from a copy at 0x%llx; slat.efi's pages 0x%llx-0x%llx "
		 "re-typed EfiLoaderCode -> EfiBootServicesData\n",
		 (unsigned long long)h->copy_base, (unsigned long long)h->alloc_base,
		 (unsigned long long)(h->alloc_base + h->alloc_pages * PAGE - 1));
	return true;
}

// Runs in the copy (called through its relocated address); never returns.
static void handoff_in_copy(struct handoff *h)
{
	EFI_BOOT_SERVICES *bs = h->st->BootServices;

	// The log sink set by arch_console_init() and the screen mirror hold
	// function pointers into the original image: point them at this copy's.
	arch_console_init(h->fw);
	boot_screen_mirror(h->st);
	bool held = retype_original(bs, h);
	handoff_entry entry =
	    (handoff_entry)(uintptr_t)((uintptr_t)h->entry - h->image_base + h->copy_base);
	EFI_STATUS s = entry(h->arg);

	boot_power_off(h->st, s);
	if (held) {
		// Back to the firmware's StartImage of slat.efi, past every frame of
		// the original image; the firmware then unloads it (its pages are
		// held by Slat, so it frees only what it gave).
		bs->Exit(h->image, s, 0, NULL);
	}
	log_err("slat: cannot power off or leave; stopping here\n");
	log_flush();
	for (;;)
		;
}

EFI_STATUS handoff_run(struct handoff *h)
{
	EFI_BOOT_SERVICES *bs = h->st->BootServices;
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li;
	struct image_layout l;
	EFI_STATUS s = bs->HandleProtocol(h->image, &li_guid, (void **)&li);

	if (EFI_ERROR(s))
		return s;
	h->image_base = (uint64_t)(uintptr_t)li->ImageBase;
	if (EFI_ERROR((s = image_layout(h->image_base, &l))))
		return s;
	h->image_size = l.size;
	h->section_align = l.section_align;
	if (EFI_ERROR((s = image_allocation(bs, h)))) {
		log_warn("slat: no EfiLoaderCode allocation holds slat.efi (0x%llx)\n",
			 (unsigned long long)s);
		return s;
	}
	// Anything still staged in the log buffer would be printed by both copies.
	log_flush();
	EFI_PHYSICAL_ADDRESS copy = 0;
	s = bs->AllocatePages(AllocateAnyPages, EfiBootServicesCode, page_up(l.size) / PAGE, &copy);
	if (EFI_ERROR(s))
		return s;
	if (EFI_ERROR((s = image_copy_relocated(h->image_base, &l, copy)))) {
		bs->FreePages(copy, page_up(l.size) / PAGE);
		return s;
	}
	h->copy_base = copy;
	arch_sync_icache((const void *)(uintptr_t)copy, l.size);
	void (*in_copy)(struct handoff *) =
	    (void (*)(struct handoff *))((uintptr_t)handoff_in_copy - h->image_base + copy);
	in_copy(h);
	return EFI_ABORTED; // not reached: handoff_in_copy never returns
}
