// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm: loading a bzImage (Linux's Documentation/x86/boot.rst, the 64-bit
// boot protocol) into guest memory with the zero page, page tables and GDT
// the 64-bit entry expects.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm.h"
#include "vmm_x86_layout.h"

// ---- the bzImage ----

struct bzimage {
	const uint8_t *file;
	size_t hdr_end;	  // the setup header is file[0x1f1, hdr_end)
	size_t pm_offset; // the protected-mode kernel in the file
	size_t pm_size;
	uint16_t version;    // boot protocol
	uint32_t init_size;  // what the kernel needs from its load address
	uint32_t alignment;  // kernel_alignment
	uint64_t pref;	     // pref_address
	uint32_t initrd_max; // initrd_addr_max: the last byte the initrd may use
	uint32_t cmdline_max;
	char version_str[80];
};

static void parse_bzimage(const struct file_data *f, const char *path, struct bzimage *bz)
{
	const uint8_t *d = f->data;
	unsigned sects;

	if (f->size < 1024 || get16(d, HDR_BOOT_FLAG) != BOOT_FLAG ||
	    get32(d, HDR_MAGIC) != HDR_MAGIC_VALUE)
		usage_error("--kernel %s: not a bzImage (no Linux x86 boot header)", path);
	*bz = (struct bzimage){.file = d, .version = get16(d, HDR_VERSION)};
	if (bz->version < PROTOCOL_MIN)
		usage_error("--kernel %s: boot protocol %u.%02u, slat-vmm needs 2.12 or later",
			    path, bz->version >> 8, bz->version & 0xff);
	bz->hdr_end = 0x202u + d[HDR_JUMP_END];
	if (bz->hdr_end < HDR_MIN_SIZE || bz->hdr_end > 0x1000)
		usage_error("--kernel %s: setup header of %zu bytes", path, bz->hdr_end);
	if (!(d[HDR_LOADFLAGS] & LOADED_HIGH) || !(get16(d, HDR_XLOADFLAGS) & XLF_KERNEL_64))
		usage_error("--kernel %s: not a 64-bit bzImage (no 64-bit entry)", path);
	sects = d[HDR_SETUP_SECTS] ? d[HDR_SETUP_SECTS] : 4;
	bz->pm_offset = (sects + 1) * 512u;
	if (bz->pm_offset >= f->size)
		usage_error("--kernel %s: truncated bzImage", path);
	bz->pm_size = f->size - bz->pm_offset;
	bz->init_size = get32(d, HDR_INIT_SIZE);
	bz->alignment = get32(d, HDR_KERNEL_ALIGNMENT);
	bz->pref = get64(d, HDR_PREF_ADDRESS);
	bz->initrd_max = get32(d, HDR_INITRD_ADDR_MAX);
	bz->cmdline_max = get32(d, HDR_CMDLINE_SIZE);
	size_t vs = get16(d, HDR_KERNEL_VERSION) + 0x200u;
	if (get16(d, HDR_KERNEL_VERSION) && vs < f->size) {
		size_t i;

		for (i = 0; i + 1 < sizeof(bz->version_str) && vs + i < f->size; i++) {
			char ch = (char)d[vs + i];

			if (ch == '\0' || ch == ' ')
				break;
			bz->version_str[i] = ch;
		}
		bz->version_str[i] = '\0';
	}
}

// The end of what the kernel uses from 1 MiB before it knows the e820 map:
// the compressed image, and the buffer it decompresses into, which starts at
// the load address aligned up to kernel_alignment but not below pref_address
// (LOAD_PHYSICAL_ADDR) and spans init_size.
static uint64_t kernel_end(const struct bzimage *bz)
{
	uint64_t align = bz->alignment ? bz->alignment : 1;
	uint64_t base = (GPA_KERNEL + align - 1) / align * align;
	uint64_t end;

	if (base < bz->pref)
		base = bz->pref;
	end = base + bz->init_size;
	if (end < GPA_KERNEL + bz->pm_size)
		end = GPA_KERNEL + bz->pm_size;
	return end;
}

// ---- the boot structures and the zero page ----

static void build_page_tables(void)
{
	uint64_t *pml4 = gpa(GPA_PML4), *pdpt = gpa(GPA_PDPT), *pd = gpa(GPA_PD);

	pml4[0] = GPA_PDPT | 0x3; // present, writable
	for (int g = 0; g < IDENTITY_MAP_GIB; g++) {
		pdpt[g] = (GPA_PD + g * 0x1000ull) | 0x3;
		for (int i = 0; i < 512; i++)
			pd[g * 512 + i] = ((uint64_t)g << 30 | (uint64_t)i << 21) | 0x83; // 2 MiB
	}
}

static void build_gdt(void)
{
	uint64_t *gdt = gpa(GPA_GDT);

	gdt[0] = 0;
	gdt[1] = 0;
	gdt[BOOT_CS / 8] = 0x00af9b000000ffffull; // code: long mode, present, exec/read
	gdt[BOOT_DS / 8] = 0x00cf93000000ffffull; // data: 4 GiB flat, read/write
}

// The "BIOS" at the real-mode reset vector (f000:fff0): pulse the i8042's
// reset line. Linux on a hardware-reduced ACPI platform reboots through EFI
// and, without EFI, by jumping there in real mode (machine_real_restart()).
static void build_reset_stub(void)
{
	static const uint8_t stub[] = {
	    0xb0, I8042_RESET,	  // mov al, 0xfe
	    0xe6, PORT_I8042_CMD, // out 0x64, al
	    0xf4,		  // hlt
	    0xeb, 0xfd,		  // jmp hlt
	};

	memcpy(gpa(GPA_RESET_VECTOR), stub, sizeof(stub));
}

static void e820_add(uint8_t *zp, uint64_t addr, uint64_t size, uint32_t type)
{
	uint8_t n = zp[ZP_E820_ENTRIES];
	size_t off = ZP_E820_TABLE + n * 20u;

	put64(zp, off, addr);
	put64(zp, off + 8, size);
	put32(zp, off + 16, type);
	zp[ZP_E820_ENTRIES] = n + 1;
}

static void build_zero_page(const struct bzimage *bz, const char *cmdline, uint64_t initrd_addr,
			    uint64_t initrd_size, uint64_t rsdp)
{
	uint8_t *zp = gpa(GPA_ZERO_PAGE);

	memset(zp, 0, 4096);
	memcpy(zp + HDR_START, bz->file + HDR_START, bz->hdr_end - HDR_START);
	zp[HDR_TYPE_OF_LOADER] = LOADER_UNKNOWN;
	zp[HDR_LOADFLAGS] |= CAN_USE_HEAP;
	put16(zp, HDR_HEAP_END_PTR, 0xfe00 - 0x200);
	put32(zp, HDR_CMD_LINE_PTR, (uint32_t)GPA_CMDLINE);
	put32(zp, HDR_RAMDISK_IMAGE, (uint32_t)initrd_addr);
	put32(zp, HDR_RAMDISK_SIZE, (uint32_t)initrd_size);
	put64(zp, ZP_ACPI_RSDP_ADDR, rsdp);
	strcpy(gpa(GPA_CMDLINE), cmdline);
	e820_add(zp, 0, GPA_LOW_RAM_END, E820_RAM);
	e820_add(zp, GPA_LOW_RAM_END, 0xa0000 - GPA_LOW_RAM_END, E820_RESERVED);
	e820_add(zp, GPA_ACPI, GPA_ACPI_END - GPA_ACPI, E820_RESERVED);
	e820_add(zp, GPA_KERNEL, vm.mem_size - GPA_KERNEL, E820_RAM);
}

void load_guest(const struct options *o)
{
	struct file_data kf = read_file("--kernel", o->kernel);
	struct file_data inf = {0};
	struct bzimage bz;
	uint64_t kend, initrd_addr = 0, top;

	parse_bzimage(&kf, o->kernel, &bz);
	if (strlen(o->cmdline) >= bz.cmdline_max)
		usage_error("--cmdline: %zu bytes, the kernel takes at most %u", strlen(o->cmdline),
			    bz.cmdline_max - 1);
	kend = kernel_end(&bz);
	if (kend > vm.mem_size)
		usage_error("--kernel %s needs %llu MiB from 1 MiB on, --mem gives %llu MiB",
			    o->kernel, (unsigned long long)(kend >> 20),
			    (unsigned long long)(vm.mem_size >> 20));
	if (o->initrd) {
		inf = read_file("--initrd", o->initrd);
		top = vm.mem_size;
		if (top > (uint64_t)bz.initrd_max + 1)
			top = (uint64_t)bz.initrd_max + 1;
		if (inf.size == 0 || inf.size > top)
			usage_error("--initrd %s: %zu bytes do not fit below %llu MiB", o->initrd,
				    inf.size, (unsigned long long)(top >> 20));
		initrd_addr = (top - inf.size) & ~0xfffull;
		if (initrd_addr < kend)
			usage_error("--initrd %s: kernel (to %llu MiB) and initrd (%zu KiB) do not "
				    "fit in %llu MiB",
				    o->initrd, (unsigned long long)(kend >> 20), inf.size >> 10,
				    (unsigned long long)(vm.mem_size >> 20));
		memcpy(gpa(initrd_addr), inf.data, inf.size);
	}
	memcpy(gpa(GPA_KERNEL), kf.data + bz.pm_offset, bz.pm_size);
	build_page_tables();
	build_gdt();
	build_reset_stub();
	build_zero_page(&bz, o->cmdline, initrd_addr, inf.size,
			build_acpi(o->cpus, o->disk != NULL, o->console_virtio));
	fprintf(stderr,
		"slat-vmm: %s (boot protocol %u.%02u), %llu MiB, %d vCPU%s, initrd %zu KiB at "
		"0x%llx, 64-bit entry 0x%llx\n",
		bz.version_str[0] ? bz.version_str : "kernel", bz.version >> 8, bz.version & 0xff,
		(unsigned long long)(vm.mem_size >> 20), o->cpus, o->cpus > 1 ? "s" : "",
		inf.size >> 10, (unsigned long long)initrd_addr,
		(unsigned long long)(GPA_KERNEL + KERNEL_ENTRY));
	free(kf.data);
	free(inf.data);
}
