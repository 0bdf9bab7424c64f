// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's fixed facts: the guest-physical memory layout it builds, the
// offsets it uses in the bzImage's setup header and in the zero page
// (struct boot_params, Linux's Documentation/x86/boot.rst and zero-page.rst),
// and the I/O ports it emulates; and what the x86 files share besides vmm.h.
#ifndef SLAT_VMM_X86_LAYOUT_H
#define SLAT_VMM_X86_LAYOUT_H

// Guest-physical layout. Everything below 1 MiB but the ACPI area is usable
// RAM in the e820 map: the kernel takes the boot structures over once it has
// read them (the zero page is copied first thing; startup_64 builds its own
// page tables), and it needs low memory for the SMP trampoline.
#define GPA_GDT		 0x500ull   // null, null, __BOOT_CS (0x10), __BOOT_DS (0x18)
#define GPA_ZERO_PAGE	 0x7000ull  // struct boot_params, RSI at the entry
#define GPA_STACK_TOP	 0x8ff0ull  // RSP at the entry (startup_64 sets its own)
#define GPA_PML4	 0x9000ull  // identity map of the low 4 GiB in 2 MiB pages
#define GPA_PDPT	 0xa000ull  // 4 entries
#define GPA_PD		 0xb000ull  // 4 page directories, 0xb000..0xefff
#define GPA_CMDLINE	 0x20000ull // the kernel command line, NUL-terminated
#define GPA_LOW_RAM_END	 0x9fc00ull // e820: RAM below, then the "EBDA" (reserved)
#define GPA_ACPI	 0xe0000ull // RSDP first (the BIOS area the spec names)
#define GPA_ACPI_END	 0x100000ull
#define GPA_RESET_VECTOR 0xffff0ull    // f000:fff0: a stub that resets through the i8042
#define GPA_KERNEL	 0x100000ull   // the protected-mode kernel (1 MiB)
#define GPA_VIRTIO_BLK	 0xd0000000ull // virtio-mmio registers (--disk)
#define GPA_VIRTIO_CON	 0xd0000200ull // the next window (--console virtio)
#define GPA_IOAPIC	 0xfec00000ull
#define GPA_LAPIC	 0xfee00000ull
#define IDENTITY_MAP_GIB 4

// Guest RAM is one block from address 0 (vmm.h: MEM_MAX_MIB keeps its top
// below the MMIO hole).
#define TSS_ADDR     0xfffbd000ul // KVM_SET_TSS_ADDR: 3 pages below 4 GiB (VMX)
#define BOOT_CS	     0x10
#define BOOT_DS	     0x18
#define KERNEL_ENTRY 0x200 // startup_64: the 64-bit entry, 0x200 into the kernel

// The setup header (offsets into the bzImage file and into the zero page).
#define HDR_START	     0x1f1
#define HDR_SETUP_SECTS	     0x1f1 // u8; 0 means 4
#define HDR_BOOT_FLAG	     0x1fe // u16 0xaa55
#define HDR_JUMP_END	     0x201 // u8: the header ends at 0x202 + this
#define HDR_MAGIC	     0x202 // "HdrS"
#define HDR_VERSION	     0x206 // u16
#define HDR_KERNEL_VERSION   0x20e // u16: the version string at this + 0x200
#define HDR_TYPE_OF_LOADER   0x210 // u8
#define HDR_LOADFLAGS	     0x211 // u8
#define HDR_RAMDISK_IMAGE    0x218 // u32
#define HDR_RAMDISK_SIZE     0x21c // u32
#define HDR_HEAP_END_PTR     0x224 // u16
#define HDR_CMD_LINE_PTR     0x228 // u32
#define HDR_INITRD_ADDR_MAX  0x22c // u32
#define HDR_KERNEL_ALIGNMENT 0x230 // u32
#define HDR_XLOADFLAGS	     0x236 // u16
#define HDR_CMDLINE_SIZE     0x238 // u32
#define HDR_PREF_ADDRESS     0x258 // u64
#define HDR_INIT_SIZE	     0x260 // u32
#define HDR_MIN_SIZE	     0x264 // a header through init_size

#define BOOT_FLAG	0xaa55
#define HDR_MAGIC_VALUE 0x53726448u // "HdrS"
#define PROTOCOL_MIN	0x020c	    // 2.12: xloadflags, the 64-bit entry
#define LOADED_HIGH	0x01	    // loadflags: the kernel runs at 1 MiB
#define CAN_USE_HEAP	0x80
#define XLF_KERNEL_64	0x01 // xloadflags: has the 64-bit entry at 0x200
#define LOADER_UNKNOWN	0xff // type_of_loader: no assigned id

// The zero page outside the setup header.
#define ZP_ACPI_RSDP_ADDR 0x070 // u64
#define ZP_E820_ENTRIES	  0x1e8 // u8
#define ZP_E820_TABLE	  0x2d0 // 20-byte entries: addr u64, size u64, type u32
#define ZP_E820_MAX	  128
#define E820_RAM	  1
#define E820_RESERVED	  2

// I/O ports.
#define PORT_COM1	   0x3f8 // 8 registers
#define COM1_IRQ	   4	 // ISA IRQ = I/O APIC pin (GSI) 4
#define VIRTIO_BLK_GSI	   16	 // an I/O APIC pin no ISA IRQ uses; level, active high
#define VIRTIO_CON_GSI	   17	 // the same for the virtio console
#define PORT_PIT_CH2	   0x42
#define PORT_PIT_MODE	   0x43
#define PORT_SYS_CTRL_B	   0x61 // bit 0: PIT channel 2 gate; bit 5: its output
#define PORT_CMOS_INDEX	   0x70 // bit 7: NMI mask
#define PORT_CMOS_DATA	   0x71
#define PORT_I8042_CMD	   0x64 // 0xfe: pulse the reset line
#define I8042_RESET	   0xfe
#define PORT_SLEEP_CONTROL 0x600 // ACPI 5 sleep control register (FADT)
#define PORT_SLEEP_STATUS  0x601 // ACPI 5 sleep status register (FADT)
#define SLEEP_TYPE_S5	   5	 // \_S5_ in the DSDT: the value poweroff writes

// What the x86 files share besides vmm.h.
#include <stdbool.h>
#include <stdint.h>
uint64_t build_acpi(int ncpus, bool virtio_blk, bool virtio_con);	 // vmm_x86_acpi.c
bool legacy_io(uint16_t port, bool write, uint8_t *data, unsigned size); // vmm_legacy.c

#endif
