// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm: a small VMM over the KVM API that boots a Linux bzImage as a VM.
//
//   slat-vmm --kernel bzImage [--initrd initrd.img] [--cmdline "..."]
//            [--mem 256M] [--cpus 1..4] [-v]
//
// Exit status: 0 the guest powered off (ACPI S5 through the FADT's sleep
// control register), 3 it reset (i8042 0xfe), 1 the VM failed (triple fault,
// an exit KVM could not handle, a failed ioctl), 2 bad arguments.
//
// The machine (x86_64): RAM from address 0 (vmm_layout.h), KVM's in-kernel
// irqchip (a local APIC per vCPU and an I/O APIC at 0xfec00000), ACPI tables
// for a hardware-reduced platform (no 8259 PIC, no PIT, no PM timer as far as
// the guest knows: Linux then uses the I/O APIC and the local APIC timer), an
// 8250/16550A UART at 0x3f8 on IRQ 4, and the i8042's reset line. Every other
// port reads as all ones and ignores writes; so does MMIO outside RAM.
//
// Boot (Linux's Documentation/x86/boot.rst, the 64-bit boot protocol): the
// protected-mode part of the bzImage goes to 1 MiB, the zero page holds the
// setup header, the e820 map, the command line and initrd addresses and the
// RSDP; vCPU 0 starts at startup_64 (load address + 0x200) in long mode set
// up directly through KVM_SET_SREGS: paging on identity tables of the low
// 4 GiB (2 MiB pages) built here, a GDT with flat __BOOT_CS/__BOOT_DS, RSI
// the zero page. The other vCPUs wait in KVM_RUN for the guest's INIT and
// STARTUP IPIs (KVM's wait-for-SIPI state with an in-kernel local APIC).
//
// CPUID is KVM_GET_SUPPORTED_CPUID's, per vCPU with its APIC ID, plus the
// hypervisor bit and TSC deadline (a KVM capability); of KVM's paravirtual
// features only kvmclock (set_vcpu_cpuid()); features whose MSRs the KVM does
// not keep (MTRRs, RDTSCP/RDPID without TSC_AUX) are taken out.
//
// Timekeeping: the guest has no PIT and no HPET. On Linux's KVM it finds
// kvmclock (and the TSC-deadline local APIC timer) in the CPUID KVM offers,
// which give it the TSC frequency without calibration. On a hypervisor
// without kvmclock or a PIT (Slat) the guest needs the frequencies told on
// its command line instead: tsc_early_khz=N (the TSC), lpj=N (the delay
// loop), and no_timer_check; a local APIC timer without TSC deadline would
// also need a known period (its calibration wants a reference clock).
//
// Reset: Linux on a hardware-reduced platform without EFI reboots by jumping
// to the real-mode reset vector, where a stub writes 0xfe to port 0x64; the
// FADT's reset register is that port too. kill -USR1 prints each vCPU's
// registers and local APIC timer (a guest that hangs).
//
// The UART raises IRQ 4 through KVM_IRQ_LINE when an enabled interrupt is
// pending (transmitter empty), so Linux's 8250 driver runs it interrupt
// driven; its IRQ reaches the guest through the DSDT's COM1 device (PNP0501),
// the path a hardware-reduced platform has for an ISA interrupt. There is no
// input: the receiver is always empty.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/kvm.h>
#include <linux/kvm_para.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm_layout.h"

#define MSR_MTRR_DEF_TYPE 0x2ff
#define MTRR_DEF_WB	  0xc06 // MTRRs enabled, fixed-range enabled, default WB
#define MSR_TSC_AUX	  0xc0000103

#define EXIT_POWEROFF 0
#define EXIT_FAILED   1
#define EXIT_USAGE    2
#define EXIT_RESET    3

struct options {
	const char *kernel;
	const char *initrd;
	const char *cmdline;
	uint64_t mem;
	int cpus;
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

struct uart {
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	bool thr_empty_irq; // the "transmitter holding register empty" interrupt
	bool irq_level;	    // what KVM_IRQ_LINE last said
	char out[256];
	size_t out_len;
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

static struct vm vm;
static pthread_mutex_t end_lock = PTHREAD_MUTEX_INITIALIZER;

// ---- messages and ending ----

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("slat-vmm: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&end_lock);
	fflush(stdout);
	fputs("slat-vmm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errno)
		fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	exit(EXIT_FAILED);
}

static void uart_flush_locked(struct uart *u);

// The N ports not emulated the guest used most, with their access counts.
static void print_busiest_ports(int n)
{
	uint32_t done = UINT32_MAX; // counts above this were printed already

	fprintf(stderr, "slat-vmm: busiest of them:");
	for (int k = 0; k < n; k++) {
		uint32_t best = 0;
		int port = -1;

		for (int p = 0; p < 65536; p++)
			if (vm.port_count[p] > best && vm.port_count[p] < done) {
				best = vm.port_count[p];
				port = p;
			}
		if (port < 0)
			break;
		for (int p = 0; p < 65536; p++)
			if (vm.port_count[p] == best)
				fprintf(stderr, " 0x%x %u", p, best);
		done = best;
	}
	fputc('\n', stderr);
}

// Ends the VM from any vCPU thread: the first caller wins, the others block.
static void __attribute__((noreturn)) vm_end(int status, const char *why)
{
	pthread_mutex_lock(&end_lock);
	pthread_mutex_lock(&vm.uart.lock);
	uart_flush_locked(&vm.uart);
	fflush(stdout);
	fprintf(stderr, "\nslat-vmm: %s, exit %d\n", why, status);
	if (vm.verbose)
		fprintf(stderr,
			"slat-vmm: ports not emulated: %lu reads, %lu writes; MMIO outside RAM: "
			"%lu reads, %lu writes\n",
			vm.port_reads, vm.port_writes, vm.mmio_reads, vm.mmio_writes);
	if (vm.verbose)
		print_busiest_ports(5);
	exit(status);
}

static uint32_t lapic_reg(const struct kvm_lapic_state *l, unsigned off)
{
	uint32_t v;

	memcpy(&v, l->regs + off, 4);
	return v;
}

// The local APIC's timer and pending vectors (what a stuck guest waits for).
static void dump_lapic(struct vcpu *v)
{
	struct kvm_lapic_state l;
	struct kvm_mp_state mp;

	if (ioctl(v->fd, KVM_GET_LAPIC, &l) < 0)
		return;
	if (ioctl(v->fd, KVM_GET_MP_STATE, &mp) < 0)
		mp.mp_state = ~0u;
	fprintf(stderr,
		"  mp_state %u lapic: svr %x lvtt %x tmict %x tmcct %x tdcr %x isr7 %08x irr7 "
		"%08x irr1 %08x esr %x\n",
		mp.mp_state, lapic_reg(&l, 0xf0), lapic_reg(&l, 0x320), lapic_reg(&l, 0x380),
		lapic_reg(&l, 0x390), lapic_reg(&l, 0x3e0), lapic_reg(&l, 0x170),
		lapic_reg(&l, 0x270), lapic_reg(&l, 0x210), lapic_reg(&l, 0x280));
}

static void dump_vcpu(struct vcpu *v)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 || ioctl(v->fd, KVM_GET_SREGS, &s) < 0) {
		fprintf(stderr, "slat-vmm: vcpu %d: registers unreadable: %s\n", v->id,
			strerror(errno));
		return;
	}
	fprintf(stderr,
		"slat-vmm: vcpu %d: rip %016llx rsp %016llx rflags %08llx\n"
		"  rax %016llx rbx %016llx rcx %016llx rdx %016llx\n"
		"  rsi %016llx rdi %016llx rbp %016llx\n"
		"  cr0 %08llx cr2 %016llx cr3 %016llx cr4 %08llx efer %llx\n"
		"  cs %04x base %llx l %d db %d  ss %04x  gdt %llx/%x idt %llx/%x\n",
		v->id, r.rip, r.rsp, r.rflags, r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp,
		s.cr0, s.cr2, s.cr3, s.cr4, s.efer, s.cs.selector, s.cs.base, s.cs.l, s.cs.db,
		s.ss.selector, s.gdt.base, s.gdt.limit, s.idt.base, s.idt.limit);
	dump_lapic(v);
}

static void __attribute__((noreturn)) vcpu_fail(struct vcpu *v, const char *what)
{
	pthread_mutex_lock(&vm.uart.lock);
	uart_flush_locked(&vm.uart);
	pthread_mutex_unlock(&vm.uart.lock);
	fflush(stdout);
	fprintf(stderr, "\nslat-vmm: vcpu %d: %s\n", v->id, what);
	dump_vcpu(v);
	vm_end(EXIT_FAILED, "VM failed");
}

// ---- arguments ----

static uint64_t parse_mem(const char *s)
{
	char *end;
	unsigned long long n;
	uint64_t mul = 1ull << 20; // a plain number is MiB

	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s)
		usage_error("--mem '%s': not a size (e.g. 256M, 1G)", s);
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30;
	else if (*end)
		usage_error("--mem '%s': not a size (e.g. 256M, 1G)", s);
	if (*end && end[1])
		usage_error("--mem '%s': not a size (e.g. 256M, 1G)", s);
	if (n > ((uint64_t)MEM_MAX_MIB << 20) / mul)
		usage_error("--mem %s: more than the %d MiB slat-vmm gives a VM", s, MEM_MAX_MIB);
	n *= mul;
	if (n % (1ull << 20))
		usage_error("--mem %s: not a whole number of MiB", s);
	if (n < ((uint64_t)MEM_MIN_MIB << 20))
		usage_error("--mem %s: too little memory (at least %d MiB)", s, MEM_MIN_MIB);
	if (n > ((uint64_t)MEM_MAX_MIB << 20))
		usage_error("--mem %s: more than the %d MiB slat-vmm gives a VM", s, MEM_MAX_MIB);
	return n;
}

static int parse_cpus(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 1 || n > VCPU_MAX)
		usage_error("--cpus '%s': must be 1..%d", s, VCPU_MAX);
	return (int)n;
}

static void parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},  {"initrd", required_argument, NULL, 'i'},
	    {"cmdline", required_argument, NULL, 'c'}, {"mem", required_argument, NULL, 'm'},
	    {"cpus", required_argument, NULL, 'n'},    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct options){.cmdline = "console=ttyS0", .mem = 256ull << 20, .cpus = 1};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:i:c:m:n:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o->kernel = optarg;
			break;
		case 'i':
			o->initrd = optarg;
			break;
		case 'c':
			o->cmdline = optarg;
			break;
		case 'm':
			o->mem = parse_mem(optarg);
			break;
		case 'n':
			o->cpus = parse_cpus(optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			printf("usage: slat-vmm --kernel bzImage [--initrd FILE] [--cmdline STR] "
			       "[--mem SIZE] [--cpus 1..%d] [-v]\n",
			       VCPU_MAX);
			exit(0);
		default:
			usage_error("bad option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!o->kernel)
		usage_error("--kernel is required");
}

static struct file_data read_file(const char *what, const char *path)
{
	struct file_data f = {0};
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		usage_error("%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		usage_error("%s %s: not a regular file", what, path);
	f.size = (size_t)st.st_size;
	f.data = malloc(f.size ? f.size : 1);
	if (!f.data)
		usage_error("%s %s: out of memory", what, path);
	for (size_t done = 0; done < f.size;) {
		ssize_t n = read(fd, f.data + done, f.size - done);

		if (n <= 0)
			usage_error("%s %s: read failed", what, path);
		done += (size_t)n;
	}
	close(fd);
	return f;
}

// ---- the bzImage ----

static uint16_t get16(const uint8_t *p, size_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	return (uint32_t)get16(p, off) | (uint32_t)get16(p, off + 2) << 16;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
	return (uint64_t)get32(p, off) | (uint64_t)get32(p, off + 4) << 32;
}

static void put16(uint8_t *p, size_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

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

// ---- guest memory and the zero page ----

static void *gpa(uint64_t addr)
{
	return vm.mem + addr;
}

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

// ---- ACPI (hardware-reduced: FADT flag HW_REDUCED_ACPI, ACPI 6.0) ----

#define ACPI_HDR_LEN 36

static uint8_t acpi_sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

// A table header; the checksum is filled in by acpi_finish() once the body is.
static void acpi_header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put32(t, 4, len);
	t[8] = rev;
	memcpy(t + 10, "SLAT  ", 6);
	memcpy(t + 16, "SLATVMM ", 8);
	put32(t, 24, 1);
	memcpy(t + 28, "SLAT", 4);
	put32(t, 32, 1);
}

static void acpi_finish(uint8_t *t)
{
	t[9] = 0;
	t[9] = (uint8_t)-acpi_sum(t, get32(t, 4));
}

// A Generic Address Structure for one byte-wide I/O port.
static void acpi_gas_port(uint8_t *p, uint16_t port)
{
	p[0] = 1; // system I/O
	p[1] = 8; // bit width
	p[2] = 0; // bit offset
	p[3] = 1; // byte access
	put64(p, 4, port);
}

// The DSDT's AML: \_S5_ (the sleep type poweroff writes to the sleep control
// register) and COM1 (PNP0501 at 0x3f8, IRQ 4: the 8250's interrupt).
static const uint8_t dsdt_aml[] = {
    // Name (_S5, Package (4) { 5, 5, 0, 0 })
    0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0a, SLEEP_TYPE_S5, 0x0a, SLEEP_TYPE_S5, 0x00,
    0x00,
    // Device (COM1) {
    0x5b, 0x82, 0x2b, 'C', 'O', 'M', '1',
    //   Name (_HID, EisaId ("PNP0501"))
    0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x05, 0x01,
    //   Name (_UID, Zero)
    0x08, '_', 'U', 'I', 'D', 0x00,
    //   Name (_CRS, ResourceTemplate () { IO (Decode16, 0x3f8, 0x3f8, 1, 8) IRQNoFlags () {4} })
    0x08, '_', 'C', 'R', 'S', 0x11, 0x10, 0x0a, 0x0d, 0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03, 0x01,
    0x08, 0x22, 1 << COM1_IRQ, 0x00, 0x79, 0x00,
    // }
};

#define FADT_LEN	  276
#define FADT_FLAGS	  112
#define FADT_HW_REDUCED	  (1u << 20)
#define FADT_RESET_SUP	  (1u << 10)
#define FADT_BOOT_ARCH	  109
#define FADT_NO_VGA	  (1u << 2)
#define FADT_NO_CMOS_RTC  (1u << 5)
#define FADT_RESET_REG	  116
#define FADT_RESET_VALUE  128
#define FADT_MINOR	  131
#define FADT_DSDT	  40
#define FADT_X_DSDT	  140
#define FADT_SLEEP_CTRL	  244
#define FADT_SLEEP_STATUS 256
#define FADT_HYPERVISOR	  268

static uint32_t acpi_fadt(uint8_t *t, uint64_t dsdt)
{
	acpi_header(t, "FACP", FADT_LEN, 6);
	put32(t, FADT_DSDT, (uint32_t)dsdt);
	put64(t, FADT_X_DSDT, dsdt);
	put16(t, FADT_BOOT_ARCH, FADT_NO_VGA | FADT_NO_CMOS_RTC); // and no 8042
	put32(t, FADT_FLAGS, FADT_HW_REDUCED | FADT_RESET_SUP);
	acpi_gas_port(t + FADT_RESET_REG, PORT_I8042_CMD);
	t[FADT_RESET_VALUE] = I8042_RESET;
	t[FADT_MINOR] = 0;
	acpi_gas_port(t + FADT_SLEEP_CTRL, PORT_SLEEP_CONTROL);
	acpi_gas_port(t + FADT_SLEEP_STATUS, PORT_SLEEP_STATUS);
	memcpy(t + FADT_HYPERVISOR, "SlatVMM", 8);
	acpi_finish(t);
	return FADT_LEN;
}

static uint32_t acpi_dsdt(uint8_t *t)
{
	uint32_t len = ACPI_HDR_LEN + sizeof(dsdt_aml);

	acpi_header(t, "DSDT", len, 2);
	memcpy(t + ACPI_HDR_LEN, dsdt_aml, sizeof(dsdt_aml));
	acpi_finish(t);
	return len;
}

// MADT: one enabled local APIC per vCPU (APIC IDs 0..n-1), the I/O APIC at
// GSI 0, and IRQ 4 as an ISA interrupt on GSI 4 (edge, active high).
static uint32_t acpi_madt(uint8_t *t, int ncpus)
{
	uint32_t off = ACPI_HDR_LEN + 8;

	put32(t, ACPI_HDR_LEN, (uint32_t)GPA_LAPIC);
	put32(t, ACPI_HDR_LEN + 4, 0); // no PCAT_COMPAT: no 8259s
	for (int i = 0; i < ncpus; i++, off += 8) {
		t[off] = 0; // processor local APIC
		t[off + 1] = 8;
		t[off + 2] = (uint8_t)i; // ACPI processor UID
		t[off + 3] = (uint8_t)i; // APIC ID
		put32(t, off + 4, 1);	 // enabled
	}
	t[off] = 1; // I/O APIC
	t[off + 1] = 12;
	t[off + 2] = (uint8_t)ncpus; // its ID, after the CPUs'
	t[off + 3] = 0;
	put32(t, off + 4, (uint32_t)GPA_IOAPIC);
	put32(t, off + 8, 0); // GSI base
	off += 12;
	t[off] = 2; // interrupt source override
	t[off + 1] = 10;
	t[off + 2] = 0; // ISA
	t[off + 3] = COM1_IRQ;
	put32(t, off + 4, COM1_IRQ);
	put16(t, off + 8, 0x5); // active high, edge
	off += 10;
	acpi_header(t, "APIC", off, 4);
	acpi_finish(t);
	return off;
}

static uint32_t acpi_xsdt(uint8_t *t, const uint64_t *tables, int n)
{
	uint32_t len = ACPI_HDR_LEN + 8u * n;

	acpi_header(t, "XSDT", len, 1);
	for (int i = 0; i < n; i++)
		put64(t, ACPI_HDR_LEN + 8u * i, tables[i]);
	acpi_finish(t);
	return len;
}

static void acpi_rsdp(uint8_t *t, uint64_t xsdt)
{
	memcpy(t, "RSD PTR ", 8);
	memcpy(t + 9, "SLAT  ", 6);
	t[15] = 2; // revision: ACPI 2.0+, with the XSDT
	put32(t, 20, 36);
	put64(t, 24, xsdt);
	t[8] = (uint8_t)-acpi_sum(t, 20);
	t[32] = (uint8_t)-acpi_sum(t, 36);
}

static uint64_t align16(uint64_t a)
{
	return (a + 15) & ~15ull;
}

// Lays the tables out from GPA_ACPI: RSDP, XSDT, FADT, DSDT, MADT. Returns
// the RSDP's address.
static uint64_t build_acpi(int ncpus)
{
	uint64_t rsdp = GPA_ACPI, xsdt = rsdp + 64, fadt = xsdt + 64;
	uint64_t dsdt = align16(fadt + FADT_LEN), madt;
	uint64_t tables[2];

	madt = align16(dsdt + acpi_dsdt(gpa(dsdt)));
	acpi_fadt(gpa(fadt), dsdt);
	acpi_madt(gpa(madt), ncpus);
	tables[0] = fadt;
	tables[1] = madt;
	acpi_xsdt(gpa(xsdt), tables, 2);
	acpi_rsdp(gpa(rsdp), xsdt);
	return rsdp;
}

// ---- loading ----

static void load_guest(const struct options *o)
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
	build_zero_page(&bz, o->cmdline, initrd_addr, inf.size, build_acpi(o->cpus));
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

// ---- the VM and its vCPUs ----

static int kvm_ioctl(int fd, unsigned long req, void *arg, const char *name)
{
	int r = ioctl(fd, req, arg);

	if (r < 0)
		die("%s failed", name);
	return r;
}

static void create_vm(void)
{
	vm.kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm.kvm_fd < 0)
		die("cannot open /dev/kvm");
	errno = 0;
	if (ioctl(vm.kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		die("/dev/kvm: KVM API version is not %d", KVM_API_VERSION);
	vm.vm_fd = ioctl(vm.kvm_fd, KVM_CREATE_VM, 0);
	if (vm.vm_fd < 0)
		die("KVM_CREATE_VM failed");
	if (ioctl(vm.vm_fd, KVM_SET_TSS_ADDR, TSS_ADDR) < 0)
		die("KVM_SET_TSS_ADDR failed");
	for (uint32_t slot = 0; (uint64_t)slot * SLOT_MAX < vm.mem_size; slot++) {
		uint64_t base = (uint64_t)slot * SLOT_MAX;
		struct kvm_userspace_memory_region r = {
		    .slot = slot,
		    .guest_phys_addr = base,
		    .memory_size = vm.mem_size - base < SLOT_MAX ? vm.mem_size - base : SLOT_MAX,
		    .userspace_addr = (uint64_t)(uintptr_t)(vm.mem + base),
		};
		kvm_ioctl(vm.vm_fd, KVM_SET_USER_MEMORY_REGION, &r, "KVM_SET_USER_MEMORY_REGION");
	}
	kvm_ioctl(vm.vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP");
}

// Linux's KVM_CREATE_IRQCHIP also makes two 8259s, whose output reaches vCPU
// 0 through its LINT0 (KVM resets it to ExtINT, and a guest without a PIC
// leaves it so): mask them, as a guest of a hardware-reduced platform never
// will. Slat has no 8259 (-EINVAL): nothing to mask.
static void mask_pics(void)
{
	for (uint32_t chip = KVM_IRQCHIP_PIC_MASTER; chip <= KVM_IRQCHIP_PIC_SLAVE; chip++) {
		struct kvm_irqchip c = {.chip_id = chip};

		if (ioctl(vm.vm_fd, KVM_GET_IRQCHIP, &c) < 0)
			return;
		c.chip.pic.imr = 0xff;
		kvm_ioctl(vm.vm_fd, KVM_SET_IRQCHIP, &c, "KVM_SET_IRQCHIP (8259 mask)");
	}
}

static void get_supported_cpuid(void)
{
	for (unsigned n = 64;; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

		if (!c)
			die("out of memory");
		c->nent = n;
		if (ioctl(vm.kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			vm.cpuid = c;
			return;
		}
		free(c);
		if (errno != E2BIG || n >= 4096)
			die("KVM_GET_SUPPORTED_CPUID failed");
	}
}

// Whether KVM keeps MSR INDEX for the guest (KVM_GET_MSR_INDEX_LIST).
static bool kvm_keeps_msr(uint32_t index)
{
	struct kvm_msr_list probe = {.nmsrs = 0}, *l;
	bool found = false;

	if (ioctl(vm.kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return false;
	l = calloc(1, sizeof(*l) + probe.nmsrs * sizeof(l->indices[0]));
	if (!l)
		die("out of memory");
	l->nmsrs = probe.nmsrs;
	if (ioctl(vm.kvm_fd, KVM_GET_MSR_INDEX_LIST, l) == 0)
		for (uint32_t i = 0; i < l->nmsrs; i++)
			found |= l->indices[i] == index;
	free(l);
	return found;
}

// MTRRs on with write-back as the default type, as firmware leaves them: a
// guest (and a hypervisor that honours guest MTRRs) otherwise sees all memory
// uncached. A KVM without these MSRs (Slat) keeps its own choice.
static bool set_boot_msrs(struct vcpu *v)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[1];
	} m = {.hdr.nmsrs = 1, .e = {{.index = MSR_MTRR_DEF_TYPE, .data = MTRR_DEF_WB}}};

	return ioctl(v->fd, KVM_SET_MSRS, &m) == 1;
}

// KVM's paravirtual features the VM gets (CPUID 0x40000001 EAX): kvmclock
// only. Those that wait for a hypercall (PV spinlocks' KVM_HC_KICK_CPU, PV
// IPIs, PV TLB flush, sched yield, async page faults) stay out: under nested
// SVM emulated by QEMU a vCPU halted in kvm_wait() with interrupts off was
// never kicked, and they are KVM's, not the hardware's, to offer.
#define KVM_PV_OFFERED                                                                             \
	((1u << KVM_FEATURE_CLOCKSOURCE) | (1u << KVM_FEATURE_NOP_IO_DELAY) |                      \
	 (1u << KVM_FEATURE_CLOCKSOURCE2) | (1u << KVM_FEATURE_CLOCKSOURCE_STABLE_BIT))

// The supported CPUID with this vCPU's APIC ID in every field that holds one,
// the hypervisor bit (without it Linux does not look for KVM's leaves, so
// finds no kvmclock), and the TSC-deadline timer when KVM has it (KVM leaves
// both out of the supported table: the first is the VMM's to set, the second
// a capability). Features whose MSRs this KVM does not keep are taken out:
// MTRRs when MTRRdefType cannot be set, RDTSCP and RDPID without TSC_AUX (a
// guest writes it unchecked while bringing up a CPU: a #GP there is a triple
// fault).
static void set_vcpu_cpuid(struct vcpu *v, bool mtrr)
{
	size_t sz = sizeof(*vm.cpuid) + vm.cpuid->nent * sizeof(vm.cpuid->entries[0]);
	struct kvm_cpuid2 *c = malloc(sz);
	bool deadline = ioctl(vm.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0;
	bool tsc_aux = kvm_keeps_msr(MSR_TSC_AUX);
	uint32_t id = (uint32_t)v->id;

	if (!c)
		die("out of memory");
	memcpy(c, vm.cpuid, sz);
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x00ffffffu) | id << 24;
			e->ecx |= 1u << 31; // a hypervisor: look at leaves 0x40000000+
			if (deadline)
				e->ecx |= 1u << 24;
			if (!mtrr)
				e->edx &= ~(1u << 12); // MTRR
			break;
		case 7:
			if (e->index == 0 && !tsc_aux)
				e->ecx &= ~(1u << 22); // RDPID
			break;
		case 0x80000001:
			if (!tsc_aux)
				e->edx &= ~(1u << 27); // RDTSCP
			break;
		case 0xb:
		case 0x1f:
			e->edx = id; // x2APIC ID
			break;
		case 0x8000001e:
			e->eax = id; // extended APIC ID (AMD)
			break;
		case KVM_CPUID_FEATURES:
			e->eax &= KVM_PV_OFFERED;
			break;
		}
	}
	kvm_ioctl(v->fd, KVM_SET_CPUID2, c, "KVM_SET_CPUID2");
	free(c);
}

static void set_segment(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){
	    .base = 0,
	    .limit = 0xffffffff,
	    .selector = sel,
	    .type = type,
	    .present = 1,
	    .dpl = 0,
	    .db = code ? 0 : 1,
	    .s = 1,
	    .l = code ? 1 : 0,
	    .g = 1,
	};
}

// vCPU 0 at startup_64: long mode, paging on the identity tables, flat
// __BOOT_CS/__BOOT_DS, interrupts off, RSI the zero page.
static void set_boot_state(struct vcpu *v)
{
	struct kvm_sregs s;
	struct kvm_regs r = {0};

	kvm_ioctl(v->fd, KVM_GET_SREGS, &s, "KVM_GET_SREGS");
	set_segment(&s.cs, BOOT_CS, 0xb, true);
	set_segment(&s.ds, BOOT_DS, 0x3, false);
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.gdt.base = GPA_GDT;
	s.gdt.limit = 4 * 8 - 1;
	s.idt.base = 0;
	s.idt.limit = 0;
	s.cr3 = GPA_PML4;
	s.cr4 = 1u << 5;					  // PAE
	s.cr0 = (1u << 0) | (1u << 4) | (1u << 5) | (1ull << 31); // PE, ET, NE, PG
	s.efer = (1u << 8) | (1u << 10);			  // LME, LMA
	kvm_ioctl(v->fd, KVM_SET_SREGS, &s, "KVM_SET_SREGS");
	r.rflags = 0x2;
	r.rip = GPA_KERNEL + KERNEL_ENTRY;
	r.rsi = GPA_ZERO_PAGE;
	r.rsp = GPA_STACK_TOP;
	kvm_ioctl(v->fd, KVM_SET_REGS, &r, "KVM_SET_REGS");
}

static void create_vcpus(void)
{
	int sz = ioctl(vm.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	if (sz <= 0)
		die("KVM_GET_VCPU_MMAP_SIZE failed");
	vm.run_size = (size_t)sz;
	get_supported_cpuid();
	for (int i = 0; i < vm.ncpus; i++) {
		struct vcpu *v = &vm.vcpus[i];

		v->id = i;
		v->fd = ioctl(vm.vm_fd, KVM_CREATE_VCPU, i);
		if (v->fd < 0)
			die("KVM_CREATE_VCPU %d failed", i);
		v->run = mmap(NULL, vm.run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
		if (v->run == MAP_FAILED)
			die("mmap of vCPU %d's kvm_run failed", i);
		set_vcpu_cpuid(v, true);
		if (!set_boot_msrs(v))
			set_vcpu_cpuid(v, false); // again before any KVM_RUN: allowed
	}
	set_boot_state(&vm.vcpus[0]);
}

// ---- the 8250/16550A UART ----

#define UART_RBR_THR 0 // DLL with DLAB
#define UART_IER     1 // DLM with DLAB
#define UART_IIR_FCR 2
#define UART_LCR     3
#define UART_MCR     4
#define UART_LSR     5
#define UART_MSR     6
#define UART_SCR     7

#define LCR_DLAB      0x80
#define IER_THRI      0x02
#define IIR_NO_INT    0x01
#define IIR_THRI      0x02
#define IIR_FIFO      0xc0 // FIFOs enabled (a 16550A)
#define FCR_FIFO      0x01
#define LSR_THRE_TEMT 0x60
#define MCR_LOOP      0x10
#define MSR_IDLE      0xb0 // DCD, DSR, CTS

static void uart_flush_locked(struct uart *u)
{
	if (u->out_len) {
		fwrite(u->out, 1, u->out_len, stdout);
		fflush(stdout);
		u->out_len = 0;
	}
}

static void uart_putc(struct uart *u, uint8_t ch)
{
	u->out[u->out_len++] = (char)ch;
	if (ch == '\n' || u->out_len == sizeof(u->out))
		uart_flush_locked(u);
}

// IRQ 4 follows "an enabled interrupt is pending"; the only source is the
// transmitter-empty interrupt (there is no input).
static void uart_update_irq(struct uart *u)
{
	bool level = (u->ier & IER_THRI) && u->thr_empty_irq;
	struct kvm_irq_level l = {.irq = COM1_IRQ, .level = level};

	if (level == u->irq_level)
		return;
	u->irq_level = level;
	if (ioctl(vm.vm_fd, KVM_IRQ_LINE, &l) < 0)
		die("KVM_IRQ_LINE %d failed", COM1_IRQ);
}

static uint8_t uart_iir(struct uart *u)
{
	uint8_t fifo = (u->fcr & FCR_FIFO) ? IIR_FIFO : 0;

	if ((u->ier & IER_THRI) && u->thr_empty_irq) {
		u->thr_empty_irq = false; // reading IIR clears the THRE interrupt
		return fifo | IIR_THRI;
	}
	return fifo | IIR_NO_INT;
}

// MSR in loopback mode: CTS = RTS, DSR = DTR, RI = OUT1, DCD = OUT2.
static uint8_t uart_msr(const struct uart *u)
{
	if (u->mcr & MCR_LOOP)
		return (uint8_t)((u->mcr & 0x0f) << 4);
	return MSR_IDLE;
}

static uint8_t uart_read(struct uart *u, unsigned reg)
{
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case UART_RBR_THR:
		return dlab ? u->dll : 0;
	case UART_IER:
		return dlab ? u->dlm : u->ier;
	case UART_IIR_FCR:
		return uart_iir(u);
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		return LSR_THRE_TEMT;
	case UART_MSR:
		return uart_msr(u);
	default:
		return u->scr;
	}
}

static void uart_write(struct uart *u, unsigned reg, uint8_t val)
{
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case UART_RBR_THR:
		if (dlab) {
			u->dll = val;
		} else {
			if (!(u->mcr & MCR_LOOP))
				uart_putc(u, val);
			u->thr_empty_irq = true; // sent at once: empty again
		}
		break;
	case UART_IER:
		if (dlab) {
			u->dlm = val;
		} else {
			if ((val & IER_THRI) && !(u->ier & IER_THRI))
				u->thr_empty_irq = true; // enabling THRI with THR empty
			u->ier = val & 0x0f;
		}
		break;
	case UART_IIR_FCR:
		u->fcr = val & 0xc9; // FIFO enable, DMA mode, trigger; the resets self-clear
		break;
	case UART_LCR:
		u->lcr = val;
		break;
	case UART_MCR:
		u->mcr = val & 0x1f;
		break;
	case UART_SCR:
		u->scr = val;
		break;
	default:
		break; // LSR and MSR are read-only
	}
}

static void uart_io(unsigned reg, bool write, uint8_t *data)
{
	struct uart *u = &vm.uart;

	pthread_mutex_lock(&u->lock);
	if (write)
		uart_write(u, reg, *data);
	else
		*data = uart_read(u, reg);
	uart_update_irq(u);
	pthread_mutex_unlock(&u->lock);
}

// ---- exits ----

static void sleep_control_write(uint8_t val)
{
	unsigned type = (val >> 2) & 7;

	if (!(val & 0x20)) // SLP_EN
		return;
	if (type == SLEEP_TYPE_S5)
		vm_end(EXIT_POWEROFF, "guest powered off (ACPI S5)");
	fprintf(stderr, "slat-vmm: guest asked for sleep type %u, not offered; ignored\n", type);
}

// One port access of SIZE bytes at DATA: the devices, else all ones / ignored.
static void port_io(uint16_t port, bool write, uint8_t *data, unsigned size)
{
	if (port >= PORT_COM1 && port < PORT_COM1 + 8 && size == 1) {
		uart_io(port - PORT_COM1, write, data);
		return;
	}
	if (write && port == PORT_I8042_CMD && size == 1 && *data == I8042_RESET)
		vm_end(EXIT_RESET, "guest reset (i8042 0xfe)");
	if (write && port == PORT_SLEEP_CONTROL && size == 1) {
		sleep_control_write(*data);
		return;
	}
	if (!write && port == PORT_SLEEP_STATUS && size == 1) {
		*data = 0;
		return;
	}
	__atomic_add_fetch(&vm.port_count[port], 1, __ATOMIC_RELAXED);
	if (write) {
		__atomic_add_fetch(&vm.port_writes, 1, __ATOMIC_RELAXED);
	} else {
		memset(data, 0xff, size);
		__atomic_add_fetch(&vm.port_reads, 1, __ATOMIC_RELAXED);
	}
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool write = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size)
		port_io(run->io.port, write, data, run->io.size);
}

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	if (run->mmio.is_write) {
		__atomic_add_fetch(&vm.mmio_writes, 1, __ATOMIC_RELAXED);
	} else {
		memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
		__atomic_add_fetch(&vm.mmio_reads, 1, __ATOMIC_RELAXED);
	}
}

static void handle_system_event(struct vcpu *v)
{
	switch (v->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		vm_end(EXIT_POWEROFF, "guest powered off (system event)");
	case KVM_SYSTEM_EVENT_RESET:
		vm_end(EXIT_RESET, "guest reset (system event)");
	default:
		vcpu_fail(v, "KVM_EXIT_SYSTEM_EVENT of an unknown type");
	}
}

static void handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char msg[160];

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(v);
		return;
	case KVM_EXIT_MMIO:
		handle_mmio(v);
		return;
	case KVM_EXIT_INTR:
		return;
	case KVM_EXIT_SYSTEM_EVENT:
		handle_system_event(v);
		return;
	case KVM_EXIT_HLT:
		vcpu_fail(v, "KVM_EXIT_HLT (halted with nothing to wake it)");
	case KVM_EXIT_SHUTDOWN:
		vcpu_fail(v, "KVM_EXIT_SHUTDOWN (triple fault)");
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(msg, sizeof(msg), "KVM_EXIT_FAIL_ENTRY, hardware reason 0x%llx",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		vcpu_fail(v, msg);
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(msg, sizeof(msg),
			 "KVM_EXIT_INTERNAL_ERROR, suberror %u, data %llx %llx %llx %llx",
			 run->internal.suberror,
			 run->internal.ndata > 0 ? run->internal.data[0] : 0,
			 run->internal.ndata > 1 ? run->internal.data[1] : 0,
			 run->internal.ndata > 2 ? run->internal.data[2] : 0,
			 run->internal.ndata > 3 ? run->internal.data[3] : 0);
		vcpu_fail(v, msg);
	default:
		snprintf(msg, sizeof(msg), "unexpected exit reason %u", run->exit_reason);
		vcpu_fail(v, msg);
	}
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;

	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				if (__atomic_exchange_n(&v->dump, 0, __ATOMIC_RELAXED))
					dump_vcpu(v);
				continue;
			}
			die("vcpu %d: KVM_RUN failed", v->id);
		}
		handle_exit(v);
	}
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig; // only ends KVM_RUN with -EINTR
}

// The vCPU threads take SIGUSR2 (a kick out of KVM_RUN); SIGUSR1, the
// request for a register dump, waits for the main thread.
static void start_vcpus(void)
{
	sigset_t set;
	struct sigaction sa = {.sa_handler = kick_handler};

	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < vm.ncpus; i++) {
		errno = pthread_create(&vm.vcpus[i].thread, NULL, vcpu_thread, &vm.vcpus[i]);
		if (errno)
			die("cannot start the thread of vCPU %d", i);
	}
}

// kill -USR1 prints every vCPU's registers (a guest that hangs).
static void wait_for_dump_request(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigwait(&set, &sig) != 0)
		return;
	for (int i = 0; i < vm.ncpus; i++) {
		__atomic_store_n(&vm.vcpus[i].dump, 1, __ATOMIC_RELAXED);
		pthread_kill(vm.vcpus[i].thread, SIGUSR2);
	}
}

static void map_memory(void)
{
	vm.mem = mmap(NULL, vm.mem_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vm.mem == MAP_FAILED)
		usage_error("--mem: cannot map %llu MiB", (unsigned long long)(vm.mem_size >> 20));
}

int main(int argc, char **argv)
{
	struct options o;

	parse_args(argc, argv, &o);
	vm.mem_size = o.mem;
	vm.ncpus = o.cpus;
	vm.verbose = o.verbose;
	pthread_mutex_init(&vm.uart.lock, NULL);
	// Everything the arguments decide is checked before /dev/kvm is opened.
	map_memory();
	load_guest(&o);
	create_vm();
	mask_pics();
	create_vcpus();
	start_vcpus();
	for (;;)
		wait_for_dump_request();
}
