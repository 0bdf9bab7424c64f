// SPDX-License-Identifier: Apache-2.0
//
// slat-nested-churn [CYCLES] - the L1 churn scenario of nested SVM
// (docs/nested-svm.md), run in the primary's Linux on its own kvm_amd: CYCLES
// times (default 50), create a small VM through /dev/kvm, run its one vCPU
// (a real-mode loop that writes one byte into each of 16 pages, then OUT and
// HLT), and destroy it. After each cycle it reads Slat's shadow figures
// (CPUID 0x400000F0, which Slat answers while nested SVM is on) and checks
// that the shadow pages in use are back at the floor of the first cycle and
// the longest hash chain has not grown. Then one more VM, whose memory slot
// is deleted after its run (timed). Pinned to CPU 0, so that exactly one
// shadow root (this CPU's) stays between cycles. Exit status 0 when every
// cycle held, 1 otherwise, 2 when something could not be set up.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define GUEST_MEM  0x10000 // 64 KiB at guest-physical 0
#define CODE_AT	   0x100
#define DONE_PORT  0x10
#define STATS_LEAF 0x400000f0u

// xor bx,bx; l: mov [bx],al; add bx,0x1000; jnz l; out 0x10,al; hlt
static const uint8_t guest_code[] = {0x31, 0xdb, 0x88, 0x07, 0x81, 0xc3, 0x00,
				     0x10, 0x75, 0xf8, 0xe6, DONE_PORT, 0xf4};

struct shadow {
	uint32_t used, chain, created, orphans;
};

static struct shadow shadow_now(void)
{
	uint32_t a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(STATS_LEAF), "c"(0));
	return (struct shadow){a, b, c, d};
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

struct vm {
	int vm, vcpu;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem;
};

static int fail(const char *what)
{
	printf("churn: %s: %s\n", what, strerror(errno));
	return -1;
}

static int vm_make(int kvm, struct vm *g)
{
	struct kvm_sregs s;
	struct kvm_regs r = {.rip = CODE_AT, .rflags = 2, .rax = 0x2a};

	*g = (struct vm){.vm = -1, .vcpu = -1};
	g->vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (g->vm < 0)
		return fail("KVM_CREATE_VM");
	g->mem = mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->mem == MAP_FAILED)
		return fail("mmap");
	memcpy(g->mem + CODE_AT, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region mr = {
	    .slot = 0, .guest_phys_addr = 0, .memory_size = GUEST_MEM, .userspace_addr = (uintptr_t)g->mem};
	if (ioctl(g->vm, KVM_SET_USER_MEMORY_REGION, &mr))
		return fail("KVM_SET_USER_MEMORY_REGION");
	g->vcpu = ioctl(g->vm, KVM_CREATE_VCPU, 0);
	if (g->vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	g->run_size = (size_t)ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	g->run = mmap(NULL, g->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->vcpu, 0);
	if (g->run == MAP_FAILED)
		return fail("mmap kvm_run");
	if (ioctl(g->vcpu, KVM_GET_SREGS, &s))
		return fail("KVM_GET_SREGS");
	s.cs.base = 0, s.cs.selector = 0;
	s.ds.base = 0, s.ds.selector = 0;
	if (ioctl(g->vcpu, KVM_SET_SREGS, &s) || ioctl(g->vcpu, KVM_SET_REGS, &r))
		return fail("KVM_SET_SREGS/REGS");
	return 0;
}

// Runs the vCPU to its HLT; true when it wrote its 16 pages and said so.
static bool vm_run(struct vm *g)
{
	bool said = false;

	for (int i = 0; i < 8; i++) {
		if (ioctl(g->vcpu, KVM_RUN, 0))
			return fail("KVM_RUN"), false;
		if (g->run->exit_reason == KVM_EXIT_IO && g->run->io.port == DONE_PORT)
			said = true;
		else if (g->run->exit_reason == KVM_EXIT_HLT)
			break;
		else
			return printf("churn: unexpected exit %u\n", g->run->exit_reason), false;
	}
	for (unsigned p = 0; p < GUEST_MEM; p += 0x1000)
		if (g->mem[p] != 0x2a)
			return printf("churn: page 0x%x not written\n", p), false;
	return said;
}

static void vm_free(struct vm *g)
{
	if (g->run && g->run != MAP_FAILED)
		munmap(g->run, g->run_size);
	if (g->vcpu >= 0)
		close(g->vcpu);
	if (g->vm >= 0)
		close(g->vm);
	if (g->mem && g->mem != MAP_FAILED)
		munmap(g->mem, GUEST_MEM);
}

int main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 50, bad = 0;
	cpu_set_t one;
	struct shadow floor = {0};

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return fail("sched_setaffinity"), 2;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("/dev/kvm"), 2;
	for (int n = 1; n <= cycles; n++) {
		struct vm g;
		double t0 = now_us();
		if (vm_make(kvm, &g) || !vm_run(&g)) {
			vm_free(&g);
			return 2;
		}
		vm_free(&g);
		struct shadow s = shadow_now();
		if (n == 1)
			floor = s;
		bool ok = s.used == floor.used && s.chain <= floor.chain;
		bad += !ok;
		printf("churn: cycle %d: shadow pages %u (floor %u), longest chain %u, created %u, "
		       "orphans reclaimed %u, %.0f us%s\n",
		       n, s.used, floor.used, s.chain, s.created, s.orphans, now_us() - t0,
		       ok ? "" : " FAIL");
	}
	// The slot of a VM that ran is deleted: L1 zaps what maps it (through
	// Slat's emulated writes, timed here; Slat's summary has its side).
	struct vm g;
	if (vm_make(kvm, &g) || !vm_run(&g))
		return vm_free(&g), 2;
	struct shadow before = shadow_now();
	struct kvm_userspace_memory_region del = {.slot = 0};
	double t0 = now_us();
	int r = ioctl(g.vm, KVM_SET_USER_MEMORY_REGION, &del);
	double t1 = now_us();
	struct shadow after = shadow_now();
	printf("churn: slot delete %s in %.0f us; shadow pages %u -> %u\n", r ? "failed" : "done",
	       t1 - t0, before.used, after.used);
	vm_free(&g);
	printf("churn: %d cycles, %d failed\n", cycles, bad);
	return bad || r ? 1 : 0;
}
