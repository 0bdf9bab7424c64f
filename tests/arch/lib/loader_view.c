// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/lib/loader_view.c - the loader's view of the firmware (see
 * loader_view.h). Bare, the firmware's boot manager starts the payload: the
 * map has one EfiLoaderCode region, the payload's, and no load options.
 * Under Slat the payload must see exactly the same.
 */
#include "loader_view.h"

#include "ta_efi.h"

#define MAP_SLACK     16
#define OPTIONS_SHOWN 100

static EFI_LOADED_IMAGE *own_image(void)
{
	EFI_GUID guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li = NULL;
	if (EFI_ERROR(ta_bs()->HandleProtocol(ta_image_handle, &guid, (void **)&li)))
		return NULL;
	return li;
}

/* The memory map in a pool buffer (NULL on failure). */
static EFI_MEMORY_DESCRIPTOR *read_map(UINTN *size, UINTN *dsize)
{
	EFI_BOOT_SERVICES *bs = ta_bs();
	EFI_MEMORY_DESCRIPTOR *map = NULL;
	UINTN key;
	UINT32 ver;
	*size = 0;
	EFI_STATUS s = bs->GetMemoryMap(size, NULL, &key, dsize, &ver);
	for (unsigned tries = 0; s == EFI_BUFFER_TOO_SMALL && tries < 4; tries++) {
		*size += MAP_SLACK * *dsize;
		if (EFI_ERROR(bs->AllocatePool(EfiLoaderData, *size, (void **)&map)))
			return NULL;
		s = bs->GetMemoryMap(size, map, &key, dsize, &ver);
		if (EFI_ERROR(s)) {
			bs->FreePool(map);
			map = NULL;
		}
	}
	return map;
}

static void check_loader_code(void)
{
	EFI_LOADED_IMAGE *li = own_image();
	UINTN size, dsize;
	EFI_MEMORY_DESCRIPTOR *map = read_map(&size, &dsize);
	if (!li || !map) {
		ta_verdict("loader-code-regions", "cannot read (%s)",
			   li ? "memory map" : "LoadedImage");
		return;
	}
	uint64_t base = (uint64_t)(uintptr_t)li->ImageBase, end = base + li->ImageSize;
	unsigned regions = 0, own = 0;
	for (UINTN off = 0; off + dsize <= size; off += dsize) {
		const EFI_MEMORY_DESCRIPTOR *d = (const void *)((const uint8_t *)map + off);
		if (d->Type != EfiLoaderCode)
			continue;
		uint64_t d_end = d->PhysicalStart + d->NumberOfPages * 4096;
		regions++;
		own += base >= d->PhysicalStart && end <= d_end;
		ta_info("LoaderCode 0x%llx-0x%llx%s", (unsigned long long)d->PhysicalStart,
			(unsigned long long)(d_end - 1),
			base >= d->PhysicalStart && end <= d_end ? " (this image)" : "");
	}
	ta_bs()->FreePool(map);
	ta_info("image 0x%llx-0x%llx", (unsigned long long)base, (unsigned long long)(end - 1));
	ta_verdict("loader-code-regions", "%u", regions);
	ta_verdict("loader-code-own-image", "%s", own ? "yes" : "no");
}

/* The load options as text: "none" when absent, else the UCS-2 string
 * (non-ASCII shown as '?', cut at OPTIONS_SHOWN characters). Returns true
 * when they are exactly "return". */
static int check_load_options(void)
{
	EFI_LOADED_IMAGE *li = own_image();
	char text[OPTIONS_SHOWN + 1];
	unsigned n = 0;
	if (!li || !li->LoadOptions || li->LoadOptionsSize == 0) {
		ta_verdict("load-options", "none");
		return 0;
	}
	const CHAR16 *w = li->LoadOptions;
	unsigned chars = li->LoadOptionsSize / sizeof(CHAR16);
	for (; n < chars && n < OPTIONS_SHOWN && w[n]; n++)
		text[n] = w[n] >= 0x20 && w[n] < 0x7f ? (char)w[n] : '?';
	text[n] = '\0';
	ta_verdict("load-options", "%u bytes \"%s\"", (unsigned)li->LoadOptionsSize, text);
	const char *ret = "return";
	for (unsigned i = 0; i <= 6; i++)
		if (text[i] != ret[i])
			return 0;
	return 1;
}

int loader_view_checks(void)
{
	check_loader_code();
	return check_load_options();
}

void loader_view_return(void)
{
	ta_printf("ARCHTEST-END %u verdicts (returning to the parent image)\n", ta_verdict_count());
	ta_bs()->Exit(ta_image_handle, EFI_SUCCESS, 0, NULL);
	ta_abort("Exit returned");
	for (;;)
		;
}
