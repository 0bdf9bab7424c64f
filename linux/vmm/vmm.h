// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's parts and what they share (the VMM is described in slat-vmm.c):
//
//   slat-vmm.c         arguments, the vCPU threads, exits, ending the VM
//   vmm_boot.c         the bzImage, guest memory, page tables, zero page
//   vmm_acpi.c         RSDP, XSDT, FADT, DSDT, MADT
//   vmm_kvm.c          the VM and its vCPUs through the KVM API
//   vmm_uart.c         the 16550A on COM1, output to stdout, input from stdin
//   vmm_legacy.c       PIT channel 2 (port 0x61 gate), the CMOS clock
//   vmm_virtio_blk.c   a virtio-mmio block device over a disk image file
//
// Devices run in the vCPU thread that exits to them, each under its own lock.
#ifndef SLAT_VMM_H
#define SLAT_VMM_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm_layout.h"

#define EXIT_POWEROFF 0
#define EXIT_FAILED   1
#define EXIT_USAGE    2
#define EXIT_RESET    3

struct options {
	const char *kernel;
	const char *initrd;
	const char *cmdline;
	const char *disk;
	bool disk_ro;
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
	uint8_t *mem;
	uint64_t mem_size;
	int ncpus;
	bool verbose;
	size_t run_size;
	struct kvm_cpuid2 *cpuid;
	struct vcpu vcpus[VCPU_MAX];
	struct uart uart;
	unsigned long port_reads, port_writes, mmio_reads, mmio_writes;
	uint32_t port_count[65536]; // accesses to ports not emulated (-v)
};

extern struct vm vm;

// Messages and ending the VM (slat-vmm.c).
void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...);
void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);
void __attribute__((noreturn)) vm_end(int status, const char *why);
struct file_data read_file(const char *what, const char *path);
void set_irq_line(uint32_t gsi, bool level);

// Boot (vmm_boot.c, vmm_acpi.c).
void *gpa(uint64_t addr);
void load_guest(const struct options *o);
uint64_t build_acpi(int ncpus, bool virtio_blk);

// The KVM VM and vCPUs (vmm_kvm.c).
void create_vm(void);
void mask_pics(void);
void create_vcpus(void);

// Devices. Each *_io returns false for an access it does not decode.
void uart_init(void);
void uart_start_input(void);
void uart_flush(void);
bool uart_io(uint16_t port, bool write, uint8_t *data, unsigned size);
bool legacy_io(uint16_t port, bool write, uint8_t *data, unsigned size);
void virtio_blk_open(const char *path, bool read_only);
bool virtio_blk_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size);
void virtio_blk_summary(void);

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
