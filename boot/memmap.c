// SPDX-License-Identifier: Apache-2.0
//
// UEFI memory map summary (UEFI 2.10, 7.2 GetMemoryMap()).
#include "boot/memmap.h"

#include <stdbool.h>

#include "core/log.h"

static const char *const memmap_type_names[MEMMAP_TYPES + 1] = {
    "Reserved",	   "LoaderCode",  "LoaderData",	   "BootServicesCode", "BootServicesData",
    "RuntimeCode", "RuntimeData", "Conventional",  "Unusable",	       "ACPIReclaim",
    "ACPINVS",	   "MMIO",	  "MMIOPortSpace", "PalCode",	       "Persistent",
    "Unaccepted",  "(unknown)",
};

// Types backed by RAM that an OS ends up owning or that firmware keeps in RAM.
static bool memmap_type_is_ram(uint32_t type)
{
	switch (type) {
	case EfiLoaderCode:
	case EfiLoaderData:
	case EfiBootServicesCode:
	case EfiBootServicesData:
	case EfiRuntimeServicesCode:
	case EfiRuntimeServicesData:
	case EfiConventionalMemory:
	case EfiACPIReclaimMemory:
	case EfiACPIMemoryNVS:
	case 14: // persistent memory
	case 15: // unaccepted memory
		return true;
	default:
		return false;
	}
}

static void memmap_add(struct memmap_summary *sum, const EFI_MEMORY_DESCRIPTOR *d)
{
	uint32_t t = d->Type < MEMMAP_TYPES ? d->Type : MEMMAP_TYPES;

	sum->entries++;
	sum->count[t]++;
	sum->pages[t] += d->NumberOfPages;
	if (memmap_type_is_ram(d->Type))
		sum->ram_pages += d->NumberOfPages;
	if (d->Type == EfiConventionalMemory && d->NumberOfPages > sum->largest_free_pages) {
		sum->largest_free_pages = d->NumberOfPages;
		sum->largest_free_base = d->PhysicalStart;
	}
}

// Reads the current map into a pool buffer the caller frees (*map, *size
// bytes of *desc_size descriptors).
static EFI_STATUS memmap_read(EFI_BOOT_SERVICES *bs, EFI_MEMORY_DESCRIPTOR **out, UINTN *out_size,
			      UINTN *out_desc_size)
{
	UINTN size = 0, key, desc_size;
	UINT32 desc_version;
	EFI_MEMORY_DESCRIPTOR *map = NULL;
	EFI_STATUS st;

	st = bs->GetMemoryMap(&size, NULL, &key, &desc_size, &desc_version);
	// The pool allocation itself may add entries: retry with some slack.
	for (int tries = 0; st == EFI_BUFFER_TOO_SMALL && tries < 4; tries++) {
		size += 8 * desc_size;
		st = bs->AllocatePool(EfiLoaderData, size, (void **)&map);
		if (EFI_ERROR(st))
			return st;
		st = bs->GetMemoryMap(&size, map, &key, &desc_size, &desc_version);
		if (EFI_ERROR(st)) {
			bs->FreePool(map);
			map = NULL;
		}
	}
	if (EFI_ERROR(st))
		return st;
	if (!map || desc_size < sizeof(EFI_MEMORY_DESCRIPTOR)) {
		if (map)
			bs->FreePool(map);
		return EFI_DEVICE_ERROR;
	}
	*out = map;
	*out_size = size;
	*out_desc_size = desc_size;
	return EFI_SUCCESS;
}

EFI_STATUS memmap_summarise(EFI_BOOT_SERVICES *bs, struct memmap_summary *sum)
{
	EFI_MEMORY_DESCRIPTOR *map;
	UINTN size, desc_size;
	EFI_STATUS st = memmap_read(bs, &map, &size, &desc_size);

	*sum = (struct memmap_summary){0};
	if (EFI_ERROR(st))
		return st;
	for (UINTN off = 0; off + desc_size <= size; off += desc_size)
		memmap_add(sum, (const EFI_MEMORY_DESCRIPTOR *)((const uint8_t *)map + off));
	bs->FreePool(map);
	return EFI_SUCCESS;
}

EFI_STATUS memmap_find(EFI_BOOT_SERVICES *bs, uint64_t addr, EFI_MEMORY_DESCRIPTOR *out)
{
	EFI_MEMORY_DESCRIPTOR *map;
	UINTN size, desc_size;
	EFI_STATUS st = memmap_read(bs, &map, &size, &desc_size);

	if (EFI_ERROR(st))
		return st;
	st = EFI_NOT_FOUND;
	for (UINTN off = 0; off + desc_size <= size; off += desc_size) {
		const EFI_MEMORY_DESCRIPTOR *d = (const void *)((const uint8_t *)map + off);
		if (addr >= d->PhysicalStart && addr - d->PhysicalStart < d->NumberOfPages * 4096) {
			*out = *d;
			st = EFI_SUCCESS;
			break;
		}
	}
	bs->FreePool(map);
	return st;
}

static unsigned long long pages_kib(uint64_t pages)
{
	return (unsigned long long)pages * 4;
}

void memmap_report(const struct memmap_summary *sum)
{
	log_info("memmap: %u entries, RAM %llu MiB, largest free region %llu MiB at 0x%llx\n",
		 sum->entries, pages_kib(sum->ram_pages) / 1024,
		 pages_kib(sum->largest_free_pages) / 1024,
		 (unsigned long long)sum->largest_free_base);
	for (int t = 0; t <= MEMMAP_TYPES; t++) {
		if (!sum->count[t])
			continue;
		log_info("memmap:   %-16s %4u regions %10llu KiB\n", memmap_type_names[t],
			 sum->count[t], pages_kib(sum->pages[t]));
	}
}
