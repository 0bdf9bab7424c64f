// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm: a small VMM over the KVM API that boots Linux as a VM: a bzImage
// on x86_64, an arm64 Image with a device tree on arm64 (vmm.h lists the
// files of each; this one is common to both: arguments, vCPU threads, exits).
//
//   slat-vmm --kernel bzImage|Image [--initrd initrd.img] [--cmdline "..."]
//            [--mem 256M] [--cpus 1..4] [--disk FILE[,ro]] [--timeout S] [-v]
//            [--console uart|virtio] [--gic v2|v3|auto (arm64)]
//
// Exit status: 0 the guest powered off (x86: ACPI S5 through the FADT's sleep
// control register; arm64: PSCI SYSTEM_OFF), 3 it reset (x86: i8042 0xfe;
// arm64: PSCI SYSTEM_RESET), 1 the VM failed (triple fault, an exit KVM could
// not handle, a failed ioctl, --timeout ran out), 2 bad arguments.
//
// The arm64 machine (QEMU virt's layout) is described in vmm_arm64_boot.c,
// vmm_arm64_fdt.c and vmm_arm64_kvm.c. The machine (x86_64): RAM from address 0 (vmm_layout.h),
// KVM's in-kernel irqchip (a local APIC per vCPU and an I/O APIC at 0xfec00000), ACPI tables for a
// hardware-reduced platform (no 8259 PIC, no PIT, no PM timer as far as the guest knows: Linux then
// uses the I/O APIC and the local APIC timer), an 8250/16550A UART at 0x3f8 on IRQ 4, and the
// i8042's reset line. Every other port reads as all ones and ignores writes; so does MMIO outside
// RAM.
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
// Devices (vmm.h lists the files): the UART raises IRQ 4 through KVM_IRQ_LINE
// while an enabled interrupt is pending (transmitter empty, data received),
// and reaches the guest through the DSDT's COM1 device (PNP0501), the path a
// hardware-reduced platform has for an ISA interrupt; its input is slat-vmm's
// stdin. With --disk FILE a virtio-mmio block device (virtio 1.x, ACPI
// LNRO0005 in the DSDT, level interrupt on GSI 16) serves the file as
// /dev/vda. With --console virtio a virtio-mmio console (ACPI LNRO0005,
// GSI 17) is the VM's hvc0 and takes stdin; the UART keeps the kernel's
// messages. PIT channel 2 and the CMOS clock answer the guest's calibration
// and wall-clock reads, which otherwise each spin for thousands of exits.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm.h"

struct vm vm;
static pthread_mutex_t end_lock = PTHREAD_MUTEX_INITIALIZER;

// ---- messages and ending ----
void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("slat-vmm: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
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

// Ends the VM from any vCPU thread: the first caller wins, the others block.
void __attribute__((noreturn)) vm_end(int status, const char *why)
{
	pthread_mutex_lock(&end_lock);
	uart_flush();
	fprintf(stderr, "\nslat-vmm: %s, exit %d\n", why, status);
	virtio_blk_summary();
	virtio_console_summary();
	if (vm.verbose)
		arch_verbose_summary();
	exit(status);
}

void __attribute__((noreturn)) vcpu_fail(struct vcpu *v, const char *what)
{
	uart_flush();
	fprintf(stderr, "\nslat-vmm: vcpu %d: %s\n", v->id, what);
	dump_vcpu(v);
	vm_end(EXIT_FAILED, "VM failed");
}

// ---- files and guest memory ----

struct file_data read_file(const char *what, const char *path)
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

void *gpa(uint64_t addr)
{
	return vm.mem + (addr - vm.ram_base);
}

// Guest RAM to KVM: slots of at most SLOT_MAX from vm.ram_base.
void set_memory_slots(void)
{
	for (uint32_t slot = 0; (uint64_t)slot * SLOT_MAX < vm.mem_size; slot++) {
		uint64_t off = (uint64_t)slot * SLOT_MAX;
		struct kvm_userspace_memory_region r = {
		    .slot = slot,
		    .guest_phys_addr = vm.ram_base + off,
		    .memory_size = vm.mem_size - off < SLOT_MAX ? vm.mem_size - off : SLOT_MAX,
		    .userspace_addr = (uint64_t)(uintptr_t)(vm.mem + off),
		};

		if (ioctl(vm.vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
			die("KVM_SET_USER_MEMORY_REGION failed");
	}
}

// /dev/kvm (API version 12) and a VM of type 0 in vm.kvm_fd, vm.vm_fd.
void open_kvm_vm(void)
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
}

// The vCPUs' fds and kvm_run mappings (vm.ncpus of them, ids 0..n-1); each
// architecture then gives them their state.
void open_vcpus(void)
{
	int sz = ioctl(vm.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	if (sz <= 0)
		die("KVM_GET_VCPU_MMAP_SIZE failed");
	vm.run_size = (size_t)sz;
	for (int i = 0; i < vm.ncpus; i++) {
		struct vcpu *v = &vm.vcpus[i];

		v->id = i;
		v->fd = ioctl(vm.vm_fd, KVM_CREATE_VCPU, i);
		if (v->fd < 0)
			die("KVM_CREATE_VCPU %d failed", i);
		v->run = mmap(NULL, vm.run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
		if (v->run == MAP_FAILED)
			die("mmap of vCPU %d's kvm_run failed", i);
	}
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

static unsigned parse_timeout(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 1 || n > 86400)
		usage_error("--timeout '%s': must be 1..86400 seconds", s);
	return (unsigned)n;
}

// --disk FILE or FILE,ro (a read-only device). The file is opened later,
// with the other checks of what the arguments name.
static void parse_disk(char *arg, struct options *o)
{
	size_t n = strlen(arg);

	if (o->disk)
		usage_error("--disk given twice (slat-vmm has one block device)");
	if (n > 3 && !strcmp(arg + n - 3, ",ro")) {
		arg[n - 3] = '\0';
		o->disk_ro = true;
	}
	if (!*arg)
		usage_error("--disk: no file named");
	o->disk = arg;
}

static void parse_console(const char *arg, struct options *o)
{
	if (!strcmp(arg, "virtio"))
		o->console_virtio = true;
	else if (!strcmp(arg, "uart"))
		o->console_virtio = false;
	else
		usage_error("--console %s: uart or virtio", arg);
}

// --gic v2|v3|auto: arm64's interrupt controller (vmm_arm64_kvm.c).
static void parse_gic(const char *arg, struct options *o)
{
	if (!arch_has_gic)
		usage_error("--gic %s: arm64 only (an x86_64 VM has APICs, no GIC)", arg);
	if (!strcmp(arg, "auto"))
		o->gic = GIC_AUTO;
	else if (!strcmp(arg, "v2"))
		o->gic = GIC_V2;
	else if (!strcmp(arg, "v3"))
		o->gic = GIC_V3;
	else
		usage_error("--gic %s: v2, v3 or auto", arg);
}

static void parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},
	    {"initrd", required_argument, NULL, 'i'},
	    {"cmdline", required_argument, NULL, 'c'},
	    {"mem", required_argument, NULL, 'm'},
	    {"cpus", required_argument, NULL, 'n'},
	    {"disk", required_argument, NULL, 'd'},
	    {"timeout", required_argument, NULL, 't'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"console", required_argument, NULL, 'C'},
	    {"gic", required_argument, NULL, 'G'}, // arm64
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct options){.cmdline = "console=ttyS0", .mem = 256ull << 20, .cpus = 1};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:i:c:m:n:d:t:C:G:vh", longopts, NULL)) != -1) {
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
		case 't':
			o->timeout = parse_timeout(optarg);
			break;
		case 'd':
			parse_disk(optarg, o);
			break;
		case 'C':
			parse_console(optarg, o);
			break;
		case 'G':
			parse_gic(optarg, o);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			printf("usage: slat-vmm --kernel %s [--initrd FILE] [--cmdline STR] "
			       "[--mem SIZE] [--cpus 1..%d] [--disk FILE[,ro]]\n"
			       "       [--console uart|virtio]%s [--timeout SECONDS] [-v]\n",
			       arch_kernel_usage, VCPU_MAX,
			       arch_has_gic ? " [--gic v2|v3|auto]" : "");
			exit(0);
		default:
			usage_error("bad option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!o->kernel)
		usage_error("--kernel is required");
	if (o->gic == GIC_V2 && o->cpus > GICV2_VCPU_MAX)
		usage_error("--gic v2 --cpus %d: a GICv2 serves at most %d vCPUs", o->cpus,
			    GICV2_VCPU_MAX);
}

// ---- exits ----

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	if (run->mmio.len <= 8 &&
	    arch_mmio(run->mmio.phys_addr, run->mmio.is_write, run->mmio.data, run->mmio.len))
		return;

	if (run->mmio.is_write) {
		__atomic_add_fetch(&vm.mmio_writes, 1, __ATOMIC_RELAXED);
	} else {
		memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
		__atomic_add_fetch(&vm.mmio_reads, 1, __ATOMIC_RELAXED);
	}
}

static void handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char msg[160];

	switch (run->exit_reason) {
	case KVM_EXIT_MMIO:
		handle_mmio(v);
		return;
	case KVM_EXIT_INTR:
		return;
	case KVM_EXIT_SYSTEM_EVENT:
		arch_system_event(v);
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
		if (arch_exit(v))
			return;
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
static void request_dumps(void)
{
	for (int i = 0; i < vm.ncpus; i++) {
		__atomic_store_n(&vm.vcpus[i].dump, 1, __ATOMIC_RELAXED);
		pthread_kill(vm.vcpus[i].thread, SIGUSR2);
	}
}

// The main thread's work once the vCPUs run: register dumps on SIGUSR1, and
// with --timeout the end of a VM that runs too long (its registers first).
static void __attribute__((noreturn)) supervise(unsigned timeout_s)
{
	struct timespec end, now, left;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_s;
	for (;;) {
		if (!timeout_s) {
			int sig;

			if (sigwait(&set, &sig) == 0)
				request_dumps();
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000;
		}
		if (left.tv_sec < 0 || sigtimedwait(&set, NULL, &left) < 0) {
			if (left.tv_sec >= 0 && errno == EINTR)
				continue;
			fprintf(stderr,
				"\nslat-vmm: still running after %u s (--timeout): registers\n",
				timeout_s);
			request_dumps();
			sleep(1); // for the vCPU threads to print
			vm_end(EXIT_FAILED, "VM timed out");
		}
		request_dumps();
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

	arch_init();
	parse_args(argc, argv, &o);
	vm.mem_size = o.mem;
	vm.ncpus = o.cpus;
	vm.verbose = o.verbose;
	vm.gic = o.gic;
	uart_init();
	// Everything the arguments decide is checked before /dev/kvm is opened.
	if (o.disk)
		virtio_blk_open(o.disk, o.disk_ro);
	vm.console_virtio = o.console_virtio;
	if (o.console_virtio)
		virtio_console_init();
	map_memory();
	load_guest(&o);
	create_vm();
	create_vcpus();
	start_vcpus();
	uart_start_input(); // a thread too: after start_vcpus() blocked SIGUSR1
	supervise(o.timeout);
}
