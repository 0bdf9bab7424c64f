// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm: loading an arm64 Image (Linux's Documentation/arm64/booting.rst)
// with its initrd and device tree into guest memory. RAM from GPA_RAM:
//
//   GPA_RAM + text_offset   the Image (GPA_RAM is 2 MiB aligned), image_size
//                           bytes of it the kernel's from there on
//   next 2 MiB boundary     the device tree (at most 2 MiB, alone in its
//                           2 MiB block: the kernel maps it with blocks)
//   2 MiB above that        the initrd, page aligned
//
// vCPU 0 starts at the Image's first byte with x0 the device tree and x1..x3
// zero, at EL1 with interrupts masked (KVM's reset state, vmm_arm64_kvm.c).
// The device tree is written last, by create_vm() through arm64_write_fdt():
// its GIC node depends on what the KVM offers (--gic auto), and the lines
// that describe the guest wait for it, so that a --gic the KVM cannot give
// is refused in the one line of a bad argument.
#define _GNU_SOURCE // memmem
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm.h"
#include "vmm_arm64_layout.h"
#include "vmm_fdt.h"

struct arm64_boot arm64_boot;

struct image {
	uint64_t text_offset;
	uint64_t image_size;
	char version[80]; // from the "Linux version " banner, when found
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

// "Linux version X ..." in the (uncompressed) Image: X, else "kernel".
static void find_version(const struct file_data *f, struct image *img)
{
	static const char banner[] = "Linux version ";
	const uint8_t *p = memmem(f->data, f->size, banner, sizeof(banner) - 1);
	size_t i = 0;

	if (p) {
		p += sizeof(banner) - 1;
		while (i + 1 < sizeof(img->version) && p + i < f->data + f->size && p[i] > ' ' &&
		       p[i] < 0x7f) {
			img->version[i] = (char)p[i];
			i++;
		}
	}
	img->version[i] = '\0';
	if (!i)
		strcpy(img->version, "kernel");
}

static void parse_image(const struct file_data *f, const char *path, struct image *img)
{
	const uint8_t *d = f->data;

	if (f->size < IMG_HEADER_SIZE || get32(d, IMG_MAGIC) != IMG_MAGIC_VALUE)
		usage_error("--kernel %s: not an arm64 Image (no \"ARM\\x64\" magic at offset 56)",
			    path);
	*img = (struct image){
	    .text_offset = get64(d, IMG_TEXT_OFFSET),
	    .image_size = get64(d, IMG_IMAGE_SIZE),
	};
	if (img->image_size == 0)
		usage_error("--kernel %s: image_size 0 (a kernel older than 3.17), slat-vmm needs "
			    "the size the kernel uses",
			    path);
	if (get64(d, IMG_FLAGS) & IMG_FLAG_BE)
		usage_error("--kernel %s: a big-endian kernel", path);
	if (img->text_offset % 4096 || img->text_offset >= IMG_BASE_ALIGN)
		usage_error("--kernel %s: text_offset 0x%llx", path,
			    (unsigned long long)img->text_offset);
	if (img->image_size < f->size)
		usage_error("--kernel %s: image_size %llu is less than the file's %zu bytes", path,
			    (unsigned long long)img->image_size, f->size);
	find_version(f, img);
}

static void __attribute__((noreturn)) too_small(const char *path, uint64_t need)
{
	usage_error("--kernel %s needs %llu MiB with its device tree, --mem gives %llu MiB", path,
		    (unsigned long long)((need + (1 << 20) - 1) >> 20),
		    (unsigned long long)(vm.mem_size >> 20));
}

// The tree of arm64_boot.fdt, its GIC vm.gic's (chosen by now), at
// arm64_boot.dtb, and the lines that say what the guest got. The command
// line is at most CMDLINE_MAX bytes, so a tree that does not fit is
// slat-vmm's fault, not the arguments'.
void arm64_write_fdt(void)
{
	const struct arm64_fdt_args *a = &arm64_boot.fdt;
	uint64_t initrd_size = a->initrd_end ? a->initrd_end - a->initrd_start : 0;
	size_t n;

	fprintf(stderr,
		"slat-vmm: %s (arm64 Image), %llu MiB, %d vCPU%s, initrd %llu KiB at 0x%llx, "
		"entry 0x%llx\n",
		arm64_boot.version, (unsigned long long)(a->mem_size >> 20), a->ncpus,
		a->ncpus > 1 ? "s" : "", (unsigned long long)(initrd_size >> 10),
		(unsigned long long)a->initrd_start, (unsigned long long)arm64_boot.entry);
	arm64_boot.fdt.gic = vm.gic;
	n = arm64_build_fdt(&arm64_boot.fdt, gpa(arm64_boot.dtb), DTB_MAX);
	if (!n) {
		errno = 0;
		die("the device tree does not fit in %llu KiB",
		    (unsigned long long)(DTB_MAX >> 10));
	}
	fprintf(stderr, "slat-vmm: device tree %zu bytes at 0x%llx\n", n,
		(unsigned long long)arm64_boot.dtb);
}

void load_guest(const struct options *o)
{
	struct file_data kf = read_file("--kernel", o->kernel);
	struct file_data inf = {0};
	struct image img;
	uint64_t ram_end = GPA_RAM + vm.mem_size, kend, initrd = 0;

	parse_image(&kf, o->kernel, &img);
	if (strlen(o->cmdline) >= CMDLINE_MAX)
		usage_error("--cmdline: %zu bytes, the kernel takes at most %u", strlen(o->cmdline),
			    CMDLINE_MAX - 1);
	arm64_boot.entry = GPA_RAM + img.text_offset;
	kend = arm64_boot.entry + img.image_size;
	// The device tree in a 2 MiB block of its own above the kernel.
	arm64_boot.dtb = align_up(kend, IMG_BASE_ALIGN);
	if (arm64_boot.dtb + DTB_MAX > ram_end)
		too_small(o->kernel, arm64_boot.dtb + DTB_MAX - GPA_RAM);
	if (o->initrd) {
		inf = read_file("--initrd", o->initrd);
		initrd = arm64_boot.dtb + DTB_MAX;
		if (inf.size == 0 || inf.size > ram_end - initrd)
			usage_error("--initrd %s: kernel (to %llu MiB) and initrd (%zu KiB) do not "
				    "fit in %llu MiB",
				    o->initrd, (unsigned long long)((initrd - GPA_RAM) >> 20),
				    inf.size >> 10, (unsigned long long)(vm.mem_size >> 20));
		memcpy(gpa(initrd), inf.data, inf.size);
	}
	memcpy(gpa(arm64_boot.entry), kf.data, kf.size);
	snprintf(arm64_boot.version, sizeof(arm64_boot.version), "%s", img.version);
	arm64_boot.fdt = (struct arm64_fdt_args){
	    .ncpus = o->cpus,
	    .mem_base = GPA_RAM,
	    .mem_size = vm.mem_size,
	    .cmdline = o->cmdline,
	    .initrd_start = initrd,
	    .initrd_end = inf.size ? initrd + inf.size : 0,
	    .virtio_blk = o->disk != NULL,
	    .virtio_con = o->console_virtio,
	};
	free(kf.data);
	free(inf.data);
}
