// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's fixed facts on arm64: the guest-physical layout (that of QEMU's
// "virt" machine, which Linux's arm64 kernel knows well), the arm64 Image
// header (Linux's Documentation/arm64/booting.rst), and what the arm64 files
// share besides vmm.h.
#ifndef SLAT_VMM_ARM64_LAYOUT_H
#define SLAT_VMM_ARM64_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "vmm.h"

// Guest-physical layout: devices below 1 GiB, RAM from 1 GiB.
#define GPA_GICD       0x08000000ull // distributor (GICv3 or GICv2), 64 KiB
#define GICD_SIZE      0x10000ull
#define GPA_GICR       0x080a0000ull // GICv3 redistributors: RD + SGI frames per vCPU
#define GICR_STRIDE    0x20000ull
#define GPA_GICC       0x08010000ull // GICv2 CPU interface (--gic v2), 8 KiB
#define GICC_SIZE      0x2000ull
#define GPA_UART       0x09000000ull // ns16550a, one byte per register
#define UART_SIZE      0x1000ull     // decoded: the first 8 bytes
#define GPA_VIRTIO_BLK 0x0a000000ull // virtio-mmio registers (--disk)
#define GPA_VIRTIO_CON 0x0a000200ull // the next window (--console virtio)
#define GPA_RAM	       0x40000000ull
#define GIC_SPI_BASE   32u // INTID of SPI 0
#define UART_SPI       1u  // INTID 33, level high
#define VIRTIO_SPI     16u // INTID 48, level high
#define VIRTIO_CON_SPI 17u // INTID 49, level high
#define GIC_NR_IRQS    96u // KVM_DEV_ARM_VGIC_GRP_NR_IRQS: 32 private + 64 SPIs
#define GIC_PHANDLE    1u

// The Image header (booting.rst): little-endian fields.
#define IMG_TEXT_OFFSET 8  // u64: load this far above a 2 MiB aligned base
#define IMG_IMAGE_SIZE	16 // u64: what the kernel uses from its load address; 0 before 3.17
#define IMG_FLAGS	24 // u64: bit 0 big-endian
#define IMG_MAGIC	56 // u32 "ARM\x64"
#define IMG_MAGIC_VALUE 0x644d5241u
#define IMG_HEADER_SIZE 64
#define IMG_FLAG_BE	1u
#define IMG_BASE_ALIGN	(2ull << 20)
#define DTB_MAX		(2ull << 20) // booting.rst: at most 2 MiB, 8-byte aligned
#define CMDLINE_MAX	2048	     // arm64's COMMAND_LINE_SIZE

// KVM_{GET,SET}_ONE_REG id of a core register (struct kvm_regs' FIELD), the
// only register ids slat-vmm uses.
#define CORE_REG(field)                                                                            \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | KVM_REG_ARM_CORE_REG(field))

// The machine's device tree into OUT (vmm_arm64_fdt.c): its size, 0 when it
// does not fit in CAP bytes.
struct arm64_fdt_args {
	int ncpus;
	uint64_t mem_base, mem_size;
	const char *cmdline;
	uint64_t initrd_start, initrd_end; // end 0: no initrd
	bool virtio_blk;
	bool virtio_con;
	enum gic_version gic; // GIC_V2: a GICv2; anything else: a GICv3
};
size_t arm64_build_fdt(const struct arm64_fdt_args *a, uint8_t *out, size_t cap);

// What load_guest() leaves for create_vm() and create_vcpus(): vCPU 0's pc
// and x0, the kernel's version, and the device tree's contents but for the
// GIC, which create_vm() chooses before arm64_write_fdt() writes the tree at
// dtb and says what the guest got.
struct arm64_boot {
	uint64_t entry;	  // the Image's load address
	uint64_t dtb;	  // the device tree's guest-physical address
	char version[80]; // from the Image's "Linux version " banner, else "kernel"
	struct arm64_fdt_args fdt;
};
extern struct arm64_boot arm64_boot;
void arm64_write_fdt(void);

#endif
