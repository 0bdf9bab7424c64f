// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's parts and what they share (the VMM is described in slat-vmm.c).
// Common to both architectures:
//
//   slat-vmm.c         arguments, the vCPU threads, exits, ending the VM
//   vmm_uart.c         an 8250/16550A, output to stdout, input from stdin
//   vmm_virtio_mmio.c  the virtio-mmio transport the virtio devices share
//                      (vmm_virtio.h)
//   vmm_virtio_blk.c   a virtio-mmio block device over a disk image file
//   vmm_virtio_console.c  a virtio-mmio console (--console virtio): hvc0
//   vmm_fdt.c          a flattened devicetree writer (arm64's boot)
//
// x86_64 (vmm_x86_layout.h):
//
//   vmm_x86.c          port I/O, the i8042 reset, ACPI S5, register dumps
//   vmm_x86_boot.c     the bzImage, guest memory, page tables, zero page
//   vmm_x86_acpi.c     RSDP, XSDT, FADT, DSDT, MADT
//   vmm_x86_kvm.c      the VM and its vCPUs through the KVM API
//   vmm_legacy.c       PIT channel 2 (port 0x61 gate), the CMOS clock
//
// arm64 (vmm_arm64_layout.h):
//
//   vmm_arm64.c        MMIO dispatch, PSCI system events, register dumps
//   vmm_arm64_boot.c   the Image, initrd and device tree in guest memory
//   vmm_arm64_fdt.c    the machine's device tree
//   vmm_arm64_kvm.c    the VM, its vCPUs and the vGIC (v3 or v2) through the
//                      KVM API
//
// linux/linux.mk picks the files of one architecture; the "arch" functions
// below are what each set provides to slat-vmm.c and the devices.
//
// Devices run in the vCPU thread that exits to them, each under its own lock.
#ifndef SLAT_VMM_H
#define SLAT_VMM_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_POWEROFF 0
#define EXIT_FAILED   1
#define EXIT_USAGE    2
#define EXIT_RESET    3

// Guest RAM is one block from vm.ram_base, given to KVM as memory slots of at
// most 1 GiB each (Slat's slot limit).
#define MEM_MIN_MIB	 64
#define MEM_MAX_MIB	 3072
#define SLOT_MAX	 (1ull << 30)
#define VCPU_MAX	 4
#define VIRTIO_MMIO_SIZE 0x200
#define GICV2_VCPU_MAX	 8 // a GICv2 serves at most 8 CPUs

// --gic (arm64): the interrupt controller the VM gets. GIC_AUTO: a GICv3 when
// the KVM offers one, else a GICv2 (create_vm() decides).
enum gic_version {
	GIC_AUTO = 0,
	GIC_V2 = 2,
	GIC_V3 = 3,
};

struct options {
	const char *kernel;
	const char *initrd;
	const char *cmdline;
	const char *disk;
	bool disk_ro;
	bool console_virtio;  // --console virtio: stdin and stdout on hvc0
	enum gic_version gic; // --gic (arm64 only)
	uint64_t mem;
	int cpus;
	unsigned timeout; // seconds; 0: none
	bool verbose;
};

struct file_data {
	uint8_t *data;
	size_t size;
};

struct vcpu {
	int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	volatile int dump; // SIGUSR1: print the registers at the next KVM_RUN return
};

#define UART_RX_BUF 4096

struct uart {
	pthread_mutex_t lock;
	pthread_cond_t rx_space; // the stdin reader waits here while rx[] is full
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	bool thr_empty_irq; // the "transmitter holding register empty" interrupt
	bool irq_level;	    // what KVM_IRQ_LINE last said
	char out[256];
	size_t out_len;
	uint8_t rx[UART_RX_BUF]; // input not yet read by the guest: rx[head..tail)
	size_t rx_head, rx_tail;
	unsigned long rx_bytes; // delivered to the guest
};

struct vm {
	int kvm_fd;
	int vm_fd;
	uint8_t *mem;	   // guest RAM [ram_base, ram_base + mem_size)
	uint64_t ram_base; // where the architecture's RAM starts (arch_init())
	uint64_t mem_size;
	// Where the architecture put the devices (arch_init()): the virtio-mmio
	// registers, and the interrupt lines set_irq_line() takes for the UART
	// and the disk (x86: I/O APIC GSIs; arm64: GIC SPI INTIDs).
	uint64_t virtio_base;
	uint32_t uart_irq, virtio_irq;
	const char *irq_kind; // how the disk's line is named ("GSI", "SPI INTID")
	// The virtio console's registers and line (--console virtio), the next
	// virtio-mmio window after the disk's; console_virtio: it is the console
	// (stdin goes to it, not to the UART).
	uint64_t console_base;
	uint32_t console_irq;
	bool console_virtio;
	// arm64: the GIC --gic asked for; GIC_V2 or GIC_V3 once create_vm()
	// has chosen.
	enum gic_version gic;
	int ncpus;
	bool verbose;
	size_t run_size;
	struct kvm_cpuid2 *cpuid; // x86: KVM_GET_SUPPORTED_CPUID
	struct vcpu vcpus[VCPU_MAX];
	struct uart uart;
	unsigned long port_reads, port_writes, mmio_reads, mmio_writes;
	uint32_t port_count[65536]; // accesses to ports not emulated (-v, x86)
};

extern struct vm vm;

// Messages and ending the VM (slat-vmm.c).
void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...);
void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);
void __attribute__((noreturn)) vm_end(int status, const char *why);
void __attribute__((noreturn)) vcpu_fail(struct vcpu *v, const char *what);
struct file_data read_file(const char *what, const char *path);
void *gpa(uint64_t addr);    // guest-physical ADDR in RAM (the caller checked it)
void set_memory_slots(void); // vm.mem to KVM
void open_kvm_vm(void);	     // /dev/kvm and a VM (type 0)
void open_vcpus(void);	     // the vCPUs' fds and kvm_run pages

// What each architecture provides (vmm_x86*.c, vmm_arm64*.c).
void arch_init(void);			      // vm.ram_base, the devices' places
void load_guest(const struct options *o);     // the kernel, initrd, boot data
void create_vm(void);			      // the VM, memory slots, irqchip
void create_vcpus(void);		      // vCPUs with their boot state
void set_irq_line(uint32_t line, bool level); // KVM_IRQ_LINE for a device's line
bool arch_exit(struct vcpu *v);		      // an exit of its own; false: unknown
// An MMIO access outside RAM and the in-kernel devices; false: not decoded.
bool arch_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size);
void arch_system_event(struct vcpu *v); // KVM_EXIT_SYSTEM_EVENT
void dump_vcpu(struct vcpu *v);		// registers to stderr
void arch_verbose_summary(void);	// -v: accesses nothing decoded
extern const char arch_kernel_usage[];	// "bzImage" / "Image" in --help
extern const bool arch_has_gic;		// --gic is an option (arm64)

// Devices. Each returns false for an access it does not decode.
void uart_init(void);
void uart_start_input(void);
void uart_flush(void);
bool uart_access(unsigned reg, bool write, uint8_t *data, unsigned size);
void virtio_blk_open(const char *path, bool read_only);
bool virtio_blk_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size);
void virtio_blk_summary(void);
void virtio_console_init(void);
bool virtio_console_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size);
void virtio_console_input(const uint8_t *buf, size_t n); // stdin's bytes (the reader)
void virtio_console_summary(void);

static inline uint16_t get16(const uint8_t *p, size_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static inline uint32_t get32(const uint8_t *p, size_t off)
{
	return (uint32_t)get16(p, off) | (uint32_t)get16(p, off + 2) << 16;
}

static inline uint64_t get64(const uint8_t *p, size_t off)
{
	return (uint64_t)get32(p, off) | (uint64_t)get32(p, off + 4) << 32;
}

static inline void put16(uint8_t *p, size_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, size_t off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}

static inline void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

#endif
