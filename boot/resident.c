// SPDX-License-Identifier: Apache-2.0
//
// Reserved region and resident image copy (see resident.h). PE/COFF layout
// from the Microsoft PE format specification: the DOS header's e_lfanew at
// 0x3c, "PE\0\0", a 20-byte COFF header, then the PE32+ optional header with
// SizeOfImage at +56 and the data directories at +112 (entry 5: base
// relocations). Relocation blocks are {page RVA, block size, u16 entries}.
#include "boot/resident.h"

#include "core/log.h"
#include "core/mem.h"

#define SZ_2M		   (2ull << 20)
#define PE_OPT_MAGIC_PE32P 0x20b
#define PE_DIR_BASERELOC   5
#define REL_ABSOLUTE	   0
#define REL_DIR64	   10

EFI_STATUS resident_alloc_region(EFI_BOOT_SERVICES *bs, uint64_t size, struct region *r)
{
	EFI_PHYSICAL_ADDRESS raw = 0;
	UINTN pages = (size + SZ_2M) / 4096; // room to align to 2 MiB
	EFI_STATUS s = bs->AllocatePages(AllocateAnyPages, EfiReservedMemoryType, pages, &raw);

	if (EFI_ERROR(s)) {
		log_err("slat: cannot reserve %llu KiB for Slat (0x%llx)\n",
			(unsigned long long)(size / 1024), (unsigned long long)s);
		return s;
	}
	uint64_t base = (raw + SZ_2M - 1) & ~(SZ_2M - 1);
	uint64_t head = base - raw, tail = raw + pages * 4096ull - (base + size);
	// Give back what alignment did not need; the region itself stays reserved.
	if (head)
		bs->FreePages(raw, head / 4096);
	if (tail)
		bs->FreePages(base + size, tail / 4096);
	region_init(r, base, size);
	memset((void *)(uintptr_t)base, 0, size);
	return EFI_SUCCESS;
}

// Applies every DIR64 relocation of the copy at `copy` (size `size`) by `delta`.
static bool relocate(uint8_t *copy, uint64_t size, uint32_t rva, uint32_t len, uint64_t delta)
{
	if (rva > size || len > size - rva)
		return false;
	for (uint32_t off = 0; off + 8 <= len;) {
		uint32_t page = load_le32(copy + rva + off),
			 bsize = load_le32(copy + rva + off + 4);
		if (bsize < 8 || bsize > len - off)
			return false;
		for (uint32_t i = 8; i + 2 <= bsize; i += 2) {
			uint16_t e = load_le16(copy + rva + off + i);
			uint64_t at = (uint64_t)page + (e & 0xfff);
			if ((e >> 12) == REL_ABSOLUTE)
				continue;
			if ((e >> 12) != REL_DIR64 || at + 8 > size)
				return false;
			uint64_t v;
			memcpy(&v, copy + at, 8);
			v += delta;
			memcpy(copy + at, &v, 8);
		}
		off += bsize;
	}
	return true;
}

EFI_STATUS image_layout(uint64_t image_base, struct image_layout *out)
{
	const uint8_t *img = (const uint8_t *)(uintptr_t)image_base;

	if (img[0] != 'M' || img[1] != 'Z')
		goto bad;
	uint32_t pe = load_le32(img + 0x3c);
	if (pe > 0x1000 || memcmp(img + pe, "PE\0\0", 4) != 0)
		goto bad;
	const uint8_t *opt = img + pe + 24;
	if (load_le16(opt) != PE_OPT_MAGIC_PE32P || load_le32(opt + 108) <= PE_DIR_BASERELOC)
		goto bad;
	out->size = load_le32(opt + 56);
	out->section_align = load_le32(opt + 32);
	out->reloc_rva = load_le32(opt + 112 + 8 * PE_DIR_BASERELOC);
	out->reloc_len = load_le32(opt + 112 + 8 * PE_DIR_BASERELOC + 4);
	return EFI_SUCCESS;
bad:
	log_err("slat: the loaded image at 0x%llx is not a PE32+ image\n",
		(unsigned long long)image_base);
	return EFI_LOAD_ERROR;
}

EFI_STATUS image_copy_relocated(uint64_t image_base, const struct image_layout *l, uint64_t dst)
{
	uint8_t *copy = (uint8_t *)(uintptr_t)dst;

	memcpy(copy, (const void *)(uintptr_t)image_base, l->size);
	if (!relocate(copy, l->size, l->reloc_rva, l->reloc_len, dst - image_base)) {
		memset(copy, 0, l->size);
		log_err("slat: cannot relocate a copy of the image (bad .reloc)\n");
		return EFI_LOAD_ERROR;
	}
	return EFI_SUCCESS;
}

EFI_STATUS resident_copy_image(uint64_t image_base, struct region *r, uint64_t *image_size)
{
	struct image_layout l;
	EFI_STATUS s = image_layout(image_base, &l);

	if (EFI_ERROR(s))
		return s;
	if (r->used != 0 || l.size > r->size / 2) {
		log_err("slat: image of %llu KiB does not fit the region\n",
			(unsigned long long)(l.size / 1024));
		return EFI_BUFFER_TOO_SMALL;
	}
	if (EFI_ERROR((s = image_copy_relocated(image_base, &l, r->base))))
		return s;
	region_take_front(r, l.size);
	*image_size = l.size;
	return EFI_SUCCESS;
}
