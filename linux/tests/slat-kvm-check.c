// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check: the KVM API on /dev/kvm as slat.ko answers it (arm64),
// argument by argument: every bad ioctl argument gets the error KVM gives
// (docs/kvm-api.md), a capability Slat lacks answers 0, and a small guest
// shows the exits (MMIO write and read with the VMM's answer, an unknown
// SMCCC call answered NOT_SUPPORTED in the kernel, WFI, PSCI SYSTEM_OFF as a
// system event) and immediate_exit leaving the last exit as it was; then
// PSCI with two vCPUs (CPU_ON into a vCPU whose thread waits in KVM_RUN,
// CPU_OFF, AFFINITY_INFO, SYSTEM_SUSPEND to the VMM, every refusal). Prints
// one "SLAT-GUEST: kvmcheck: ..." line per check and a PASS/FAIL verdict.
#define _GNU_SOURCE // pthread_timedjoin_np
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvmcheck.h"

#define PAGE	 4096ul
#define MMIO_GPA 0x10000000ull
#define CODE_GPA 0x0ull
#define SLOT_SZ	 (64 * 1024ul)
#define DATA_OFF 0x8000u // a page of slot 0 the guest reads and the VMM replaces

#define CORE(f)                                                                                    \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |                                     \
	 (offsetof(struct kvm_regs, f) / sizeof(uint32_t)))

static int one_reg(int vcpu, uint64_t id, uint64_t *val, bool set)
{
	struct kvm_one_reg r = {.id = id, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(vcpu, set ? KVM_SET_ONE_REG : KVM_GET_ONE_REG, &r);
}

static void check_system(int kvm)
{
	check("KVM_GET_API_VERSION", ioctl(kvm, KVM_GET_API_VERSION, 0) == 12,
	      ioctl(kvm, KVM_GET_API_VERSION, 0), 12);
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
	check("KVM_CAP_NR_MEMSLOTS", n == 32764, n, 32764);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	check("KVM_CAP_MAX_VCPUS >= 64", n >= 64, n, 64);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_IMMEDIATE_EXIT);
	check("KVM_CAP_IMMEDIATE_EXIT", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_READONLY_MEM);
	check("KVM_CAP_READONLY_MEM", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_DIRTY_LOG_RING);
	check("KVM_CAP_DIRTY_LOG_RING (not implemented)", n == 0, n, 0);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_MMU);
	check("KVM_CAP_SYNC_MMU", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PSCI_0_2);
	check("KVM_CAP_ARM_PSCI_0_2", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_SYSTEM_SUSPEND);
	check("KVM_CAP_ARM_SYSTEM_SUSPEND", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MP_STATE);
	check("KVM_CAP_MP_STATE", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PMU_V3);
	check("KVM_CAP_ARM_PMU_V3 (not implemented)", n == 0, n, 0);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, 999999);
	check("KVM_CHECK_EXTENSION 999999", n == 0, n, 0);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_VM_IPA_SIZE);
	check("KVM_CAP_ARM_VM_IPA_SIZE >= 40", n >= 40, n, 40);
	check("KVM_GET_VCPU_MMAP_SIZE",
	      ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0) >= (long)sizeof(struct kvm_run),
	      ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0), sizeof(struct kvm_run));
	expect("unknown /dev/kvm ioctl", ioctl(kvm, _IO(KVMIO, 0xfe), 0), ENOTTY);
	expect("KVM_CREATE_VM IPA 60 bits", ioctl(kvm, KVM_CREATE_VM, 60), EINVAL);
	expect("KVM_CREATE_VM IPA 20 bits", ioctl(kvm, KVM_CREATE_VM, 20), EINVAL);
	expect("KVM_CREATE_VM unknown type bits", ioctl(kvm, KVM_CREATE_VM, 0x1000), EINVAL);
}

static void check_regions(int vm, uint8_t *mem)
{
	uint8_t *none = mmap(NULL, SLOT_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	expect("region flags READONLY | LOG_DIRTY_PAGES",
	       region(vm, 1, KVM_MEM_READONLY | KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem),
	       EINVAL);
	expect("region flags bit 2", region(vm, 1, 1u << 2, 0x100000, PAGE, mem), EINVAL);
	expect("region flags LOG_DIRTY_PAGES",
	       region(vm, 1, KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem), EINVAL);
	expect("region slot 32764", region(vm, 32764, 0, 0x100000, PAGE, mem), EINVAL);
	expect("region address space 1", region(vm, 1 | 1u << 16, 0, 0x100000, PAGE, mem), EINVAL);
	expect("region gpa unaligned", region(vm, 1, 0, 0x100800, PAGE, mem), EINVAL);
	expect("region size unaligned", region(vm, 1, 0, 0x100000, 100, mem), EINVAL);
	expect("region user address unaligned", region(vm, 1, 0, 0x100000, PAGE, mem + 8), EINVAL);
	expect("region wrapping gpa", region(vm, 1, 0, ~0ull & ~(PAGE - 1), 2 * PAGE, mem), EINVAL);
	expect("region kernel address",
	       region(vm, 1, 0, 0x100000, PAGE, (void *)0xffff000000000000ull), EINVAL);
	expect("region beyond the VM's 40-bit IPA", region(vm, 1, 0, 1ull << 40, PAGE, mem),
	       EFAULT);
	// KVM checks the memory at the guest's access, not here.
	expect("region over memory the VMM cannot write", region(vm, 1, 0, 0x100000, PAGE, none),
	       0);
	expect("... deleted", region(vm, 1, 0, 0x100000, 0, none), 0);
	expect("delete of a slot that does not exist", region(vm, 9, 0, 0, 0, mem), EINVAL);
	expect("region overlapping slot 0", region(vm, 1, 0, CODE_GPA + PAGE, PAGE, mem + SLOT_SZ),
	       EEXIST);
	expect("region slot 2 added", region(vm, 2, 0, 0x200000, PAGE, mem + SLOT_SZ), 0);
	expect("region slot 2 with another size",
	       region(vm, 2, 0, 0x200000, 2 * PAGE, mem + SLOT_SZ), EINVAL);
	expect("region slot 2 moved", region(vm, 2, 0, 0x300000, PAGE, mem + SLOT_SZ), 0);
	expect("region slot 2 moved onto slot 0", region(vm, 2, 0, CODE_GPA, PAGE, mem + SLOT_SZ),
	       EEXIST);
	expect("region slot 2 made read-only while it lives",
	       region(vm, 2, KVM_MEM_READONLY, 0x300000, PAGE, mem + SLOT_SZ), EINVAL);
	expect("region slot 2 deleted", region(vm, 2, 0, 0, 0, mem + SLOT_SZ), 0);
	expect("unknown VM ioctl", ioctl(vm, _IO(KVMIO, 0xfe), 0), ENOTTY);
	munmap(none, SLOT_SZ);
}

// AArch64 encodings of the few instructions the guest needs.
static uint32_t movz(unsigned rd, uint16_t imm, unsigned hw)
{
	return 0xD2800000u | hw << 21 | (uint32_t)imm << 5 | rd;
}
static uint32_t movk(unsigned rd, uint16_t imm, unsigned hw)
{
	return 0xF2800000u | hw << 21 | (uint32_t)imm << 5 | rd;
}
#define HVC0		   0xD4000002u
#define WFI		   0xD503207Fu
#define STR_X(rt, rn, off) (0xF9000000u | ((off) / 8) << 10 | (rn) << 5 | (rt))
#define LDR_X(rt, rn, off) (0xF9400000u | ((off) / 8) << 10 | (rn) << 5 | (rt))

static void write_guest(uint8_t *mem)
{
	const uint32_t code[] = {
	    movz(0, 0x2345, 0),
	    movk(0, 0x1, 1),
	    HVC0,		  // an SMCCC function nobody has
	    movz(2, 0x1000, 1),	  // x2 = MMIO_GPA
	    STR_X(0, 2, 0),	  // MMIO write of the HVC's x0
	    LDR_X(3, 2, 0),	  // MMIO read: the VMM answers
	    STR_X(3, 2, 8),	  // ... and sees it back
	    WFI,		  // completes without an exit
	    movz(4, DATA_OFF, 0), // the data page, read twice: the VMM replaces it in between
	    LDR_X(5, 4, 0),
	    STR_X(5, 2, 16),
	    LDR_X(5, 4, 0),
	    STR_X(5, 2, 24),
	    movz(0, 0x0008, 0),
	    movk(0, 0x8400, 1),
	    HVC0, // PSCI SYSTEM_OFF
	};

	memcpy(mem + CODE_GPA, code, sizeof(code));
}

static void check_vcpu_state(int vm, int vcpu)
{
	struct kvm_vcpu_init init;
	uint64_t v = 0;

	expect("KVM_RUN before KVM_ARM_VCPU_INIT", ioctl(vcpu, KVM_RUN, 0), ENOEXEC);
	expect("KVM_GET_ONE_REG before KVM_ARM_VCPU_INIT", one_reg(vcpu, CORE(regs.pc), &v, false),
	       ENOEXEC);
	expect("KVM_ARM_PREFERRED_TARGET", ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init), 0);
	init.target ^= 1;
	expect("KVM_ARM_VCPU_INIT other target", ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), EINVAL);
	init.target ^= 1;
	init.features[0] = 1u << KVM_ARM_VCPU_PMU_V3;
	expect("KVM_ARM_VCPU_INIT with a PMU (not offered)", ioctl(vcpu, KVM_ARM_VCPU_INIT, &init),
	       EINVAL);
	init.features[0] = 0;
	init.features[1] = 1;
	expect("KVM_ARM_VCPU_INIT with a feature bit of word 1",
	       ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), EINVAL);
	init.features[1] = 0;
	init.features[0] = 0;
	expect("KVM_ARM_VCPU_INIT", ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), 0);
	one_reg(vcpu, CORE(regs.pstate), &v, false);
	check("reset pstate EL1h, DAIF masked", v == 0x3c5, v, 0x3c5);
	v = 0x3c9; // EL2h
	expect("SET pstate EL2h", one_reg(vcpu, CORE(regs.pstate), &v, true), EINVAL);
	one_reg(vcpu, CORE(regs.pstate), &v, false);
	check("pstate unchanged by the refusal", v == 0x3c5, v, 0x3c5);
	expect("GET of a register Slat does not keep (V0)",
	       one_reg(vcpu,
		       KVM_REG_ARM64 | KVM_REG_SIZE_U128 | KVM_REG_ARM_CORE |
			   (offsetof(struct kvm_regs, fp_regs.vregs[0]) / 4),
		       &v, false),
	       ENOENT);
	expect("GET of an unknown system register",
	       one_reg(vcpu, ARM64_SYS_REG(3, 0, 15, 15, 7), &v, false), ENOENT);
	uint64_t mpidr = 0;
	expect("GET MPIDR_EL1", one_reg(vcpu, ARM64_SYS_REG(3, 0, 0, 0, 5), &mpidr, false), 0);
	v = mpidr ^ 1;
	expect("SET MPIDR_EL1 to another value",
	       one_reg(vcpu, ARM64_SYS_REG(3, 0, 0, 0, 5), &v, true), EINVAL);
	uint64_t mmfr0 = 0;
	expect("GET ID_AA64MMFR0_EL1", one_reg(vcpu, ARM64_SYS_REG(3, 0, 0, 7, 0), &mmfr0, false),
	       0);
	v = mmfr0 ^ 0xf;
	expect("SET ID_AA64MMFR0_EL1 to another value",
	       one_reg(vcpu, ARM64_SYS_REG(3, 0, 0, 7, 0), &v, true), EINVAL);
	expect("SET ID_AA64MMFR0_EL1 to its value",
	       one_reg(vcpu, ARM64_SYS_REG(3, 0, 0, 7, 0), &mmfr0, true), 0);
	struct kvm_reg_list small = {.n = 0};
	expect("KVM_GET_REG_LIST too small", ioctl(vcpu, KVM_GET_REG_LIST, &small), E2BIG);
	check("KVM_GET_REG_LIST says how many", small.n > 31, small.n, 32);
	v = 0x4000;
	expect("SET sp_el1", one_reg(vcpu, CORE(sp_el1), &v, true), 0);
	v = 0;
	one_reg(vcpu, CORE(sp_el1), &v, false);
	check("sp_el1 reads back", v == 0x4000, v, 0x4000);
	expect("unknown vCPU ioctl", ioctl(vcpu, _IO(KVMIO, 0xfe), 0), ENOTTY);
}

static void check_run(int vcpu, struct kvm_run *run, uint8_t *mem)
{
	uint64_t v;

	v = CODE_GPA;
	one_reg(vcpu, CORE(regs.pc), &v, true);
	expect("KVM_RUN to the MMIO write", ioctl(vcpu, KVM_RUN, 0), 0);
	memcpy(&v, run->mmio.data, 8);
	check("exit MMIO write at 0x10000000",
	      run->exit_reason == KVM_EXIT_MMIO && run->mmio.phys_addr == MMIO_GPA &&
		  run->mmio.is_write && run->mmio.len == 8,
	      run->exit_reason, KVM_EXIT_MMIO);
	check("unknown SMCCC call answered NOT_SUPPORTED (-1)", v == ~0ull, v, ~0ull);
	run->immediate_exit = 1;
	expect("KVM_RUN with immediate_exit", ioctl(vcpu, KVM_RUN, 0), EINTR);
	check("immediate_exit leaves the exit as it was",
	      run->exit_reason == KVM_EXIT_MMIO && run->mmio.phys_addr == MMIO_GPA,
	      run->exit_reason, KVM_EXIT_MMIO);
	run->immediate_exit = 0;
	expect("KVM_RUN to the MMIO read", ioctl(vcpu, KVM_RUN, 0), 0);
	check("exit MMIO read at 0x10000000",
	      run->exit_reason == KVM_EXIT_MMIO && !run->mmio.is_write && run->mmio.len == 8,
	      run->exit_reason, KVM_EXIT_MMIO);
	v = 0x1122334455667788ull;
	memcpy(run->mmio.data, &v, 8);
	expect("KVM_RUN with the read's answer", ioctl(vcpu, KVM_RUN, 0), 0);
	memcpy(&v, run->mmio.data, 8);
	check("the guest stores the answer at 0x10000008",
	      run->exit_reason == KVM_EXIT_MMIO && run->mmio.phys_addr == MMIO_GPA + 8 &&
		  v == 0x1122334455667788ull,
	      v, 0x1122334455667788ull);
	*(volatile uint64_t *)(mem + DATA_OFF) = 0x1111;
	expect("KVM_RUN over WFI to the data page's first read", ioctl(vcpu, KVM_RUN, 0), 0);
	memcpy(&v, run->mmio.data, 8);
	check("the guest reads the VMM's data page",
	      run->exit_reason == KVM_EXIT_MMIO && run->mmio.phys_addr == MMIO_GPA + 16 &&
		  v == 0x1111,
	      v, 0x1111);
	// The VMM drops its page and writes a new one: the VM must see the new
	// page (KVM_CAP_SYNC_MMU), not the frame it had.
	expect("madvise(MADV_DONTNEED) of the data page",
	       madvise(mem + DATA_OFF, PAGE, MADV_DONTNEED), 0);
	*(volatile uint64_t *)(mem + DATA_OFF) = 0x2222;
	expect("KVM_RUN to the data page's second read", ioctl(vcpu, KVM_RUN, 0), 0);
	memcpy(&v, run->mmio.data, 8);
	check("the guest sees the VMM's new page",
	      run->exit_reason == KVM_EXIT_MMIO && run->mmio.phys_addr == MMIO_GPA + 24 &&
		  v == 0x2222,
	      v, 0x2222);
	expect("KVM_RUN to SYSTEM_OFF", ioctl(vcpu, KVM_RUN, 0), 0);
	if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
		say("internal error: suberror %u, data 0x%llx 0x%llx 0x%llx",
		    run->internal.suberror, (unsigned long long)run->internal.data[0],
		    (unsigned long long)run->internal.data[1],
		    (unsigned long long)run->internal.data[2]);
	check("PSCI SYSTEM_OFF is KVM_EXIT_SYSTEM_EVENT shutdown",
	      run->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  run->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN,
	      run->exit_reason, KVM_EXIT_SYSTEM_EVENT);
}

// ---- PSCI: two vCPUs, CPU_ON / CPU_OFF / AFFINITY_INFO / SYSTEM_SUSPEND ----------
// vCPU 0 makes the calls and stores each answer in the results page; vCPU 1
// starts powered off, so its thread waits in KVM_RUN until vCPU 0's CPU_ON,
// stores the context id it gets in x0, waits for vCPU 0's go and turns itself
// off; vCPU 0 then sees it off, asks for SYSTEM_SUSPEND (the VMM's exit) and
// SYSTEM_OFF.

#define RES_GPA	  0x4000u
#define FLAG1_OFF 0x100u // vCPU 1's x0 on entry
#define GO_OFF	  0x108u // vCPU 0 lets vCPU 1 turn off
#define BAD1_OFF  0x110u // vCPU 1 got past CPU_OFF (must stay 0)
#define ENTRY1	  0x1000u
#define CTX1	  0x5a5a1234ull
#define NRES	  13

#define FN_VERSION	   0x84000000u
#define FN_CPU_OFF	   0x84000002u
#define FN64_CPU_ON	   0xc4000003u
#define FN64_AFFINITY	   0xc4000004u
#define FN_MIGRATE_INFO	   0x84000006u
#define FN_SYSTEM_OFF	   0x84000008u
#define FN_FEATURES	   0x8400000au
#define FN64_SYSTEM_SUSP   0xc400000eu
#define FN_SMCCC_VERSION   0x80000000u
#define PSCI_INVALID	   ((uint64_t)-2)
#define PSCI_DENIED	   ((uint64_t)-3)
#define PSCI_ALREADY_ON	   ((uint64_t)-4)
#define PSCI_NOT_SUPPORTED ((uint64_t)-1)

struct code {
	uint32_t *p;
	unsigned n;
};

static void emit(struct code *c, uint32_t insn)
{
	c->p[c->n++] = insn;
}

static void mov64(struct code *c, unsigned rd, uint64_t v)
{
	emit(c, movz(rd, v & 0xffff, 0));
	for (unsigned hw = 1; hw < 4; hw++)
		emit(c, movk(rd, (v >> (16 * hw)) & 0xffff, hw));
}

#define MOV_X(rd, rm)  (0xAA0003E0u | (rm) << 16 | (rd)) // ORR rd, xzr, rm
#define CMP_X(rn, imm) (0xF100001Fu | (imm) << 10 | (rn) << 5)
static uint32_t cbz_back(const struct code *c, unsigned rt, unsigned to)
{
	return 0xB4000000u | ((uint32_t)((int)to - (int)c->n) & 0x7ffff) << 5 | rt;
}
static uint32_t bne_back(const struct code *c, unsigned to)
{
	return 0x54000001u | ((uint32_t)((int)to - (int)c->n) & 0x7ffff) << 5;
}

// x0 = fn, x1..x3 = args (x1 = x20, the target's MPIDR, when a1 is ~0), HVC.
static void call(struct code *c, uint32_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	mov64(c, 0, fn);
	if (a1 == ~0ull)
		emit(c, MOV_X(1, 20));
	else
		mov64(c, 1, a1);
	mov64(c, 2, a2);
	mov64(c, 3, a3);
	emit(c, HVC0);
}

static void store_res(struct code *c, unsigned i)
{
	emit(c, STR_X(0, 19, 8 * i));
}

static void write_psci_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	mov64(&c, 19, RES_GPA);
	call(&c, FN_VERSION, 0, 0, 0);
	store_res(&c, 0);
	call(&c, FN64_CPU_ON, 0xff00ff, ENTRY1, CTX1); // no such vCPU
	store_res(&c, 1);
	call(&c, FN64_CPU_ON, ~0ull, ENTRY1, CTX1);
	store_res(&c, 2);
	call(&c, FN64_CPU_ON, ~0ull, ENTRY1, CTX1); // again
	store_res(&c, 3);
	call(&c, FN64_AFFINITY, ~0ull, 0, 0);
	store_res(&c, 4);
	call(&c, FN64_AFFINITY, ~0ull, 4, 0); // no level 4
	store_res(&c, 5);
	call(&c, FN_FEATURES, FN64_SYSTEM_SUSP, 0, 0);
	store_res(&c, 6);
	call(&c, FN64_SYSTEM_SUSP, 0, 0, 0); // vCPU 1 is on: DENIED
	store_res(&c, 7);
	unsigned wait = c.n; // until vCPU 1 has run
	emit(&c, LDR_X(9, 19, FLAG1_OFF));
	emit(&c, cbz_back(&c, 9, wait));
	emit(&c, movz(9, 1, 0));
	emit(&c, STR_X(9, 19, GO_OFF));
	unsigned poll = c.n; // until AFFINITY_INFO says OFF (1)
	call(&c, FN64_AFFINITY, ~0ull, 0, 0);
	emit(&c, CMP_X(0, 1));
	emit(&c, bne_back(&c, poll));
	call(&c, FN_MIGRATE_INFO, 0, 0, 0);
	store_res(&c, 8);
	call(&c, FN_SMCCC_VERSION, 0, 0, 0);
	store_res(&c, 9);
	call(&c, FN64_CPU_ON, 1ull << 40, ENTRY1, CTX1); // a bit outside MPIDR's affinity
	store_res(&c, 10);
	call(&c, 0xc4000050u, 0, 0, 0); // a PSCI number nobody defined
	store_res(&c, 11);
	call(&c, FN64_SYSTEM_SUSP, ENTRY1, CTX1, 0); // the VMM's exit
	store_res(&c, 12);			     // x0 as the call left it
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	mov64(&c1, 9, RES_GPA);
	emit(&c1, STR_X(0, 9, FLAG1_OFF));
	unsigned go = c1.n;
	emit(&c1, LDR_X(10, 9, GO_OFF));
	emit(&c1, cbz_back(&c1, 10, go));
	call(&c1, FN_CPU_OFF, 0, 0, 0);
	emit(&c1, movz(10, 0xbad, 0));
	emit(&c1, STR_X(10, 9, BAD1_OFF));
	emit(&c1, 0x14000000u); // b .
}

struct vcpu1_run {
	int fd;
	long ret;
	int err;
	struct kvm_run *run;
};

static void *vcpu1_thread(void *arg)
{
	struct vcpu1_run *r = arg;

	r->ret = ioctl(r->fd, KVM_RUN, 0);
	r->err = errno;
	return NULL;
}

static void no_op(int sig)
{
	(void)sig;
}

static int mp_state(int vcpu)
{
	struct kvm_mp_state mp = {.mp_state = 0xff};

	return ioctl(vcpu, KVM_GET_MP_STATE, &mp) ? -1 : (int)mp.mp_state;
}

static int psci_vcpu(int vm, int id, uint32_t features, struct kvm_run **run, long sz)
{
	struct kvm_vcpu_init init;
	int fd = ioctl(vm, KVM_CREATE_VCPU, id);

	if (fd < 0 || ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init))
		return -1;
	init.features[0] = features;
	if (ioctl(fd, KVM_ARM_VCPU_INIT, &init))
		return -1;
	*run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return *run == MAP_FAILED ? -1 : fd;
}

static void check_psci_setup(int vm, int v0, int v1)
{
	struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_SUSPENDED};
	struct kvm_enable_cap cap = {.cap = KVM_CAP_ARM_SYSTEM_SUSPEND, .flags = 1};

	check("vCPU 0 (PSCI) runnable", mp_state(v0) == KVM_MP_STATE_RUNNABLE, mp_state(v0),
	      KVM_MP_STATE_RUNNABLE);
	check("vCPU 1 (PSCI, POWER_OFF) stopped", mp_state(v1) == KVM_MP_STATE_STOPPED,
	      mp_state(v1), KVM_MP_STATE_STOPPED);
	expect("KVM_SET_MP_STATE SUSPENDED (not offered)", ioctl(v0, KVM_SET_MP_STATE, &mp),
	       EINVAL);
	mp.mp_state = 77;
	expect("KVM_SET_MP_STATE 77", ioctl(v0, KVM_SET_MP_STATE, &mp), EINVAL);
	mp.mp_state = KVM_MP_STATE_STOPPED;
	expect("KVM_SET_MP_STATE STOPPED", ioctl(v0, KVM_SET_MP_STATE, &mp), 0);
	check("... reads back", mp_state(v0) == KVM_MP_STATE_STOPPED, mp_state(v0),
	      KVM_MP_STATE_STOPPED);
	mp.mp_state = KVM_MP_STATE_RUNNABLE;
	expect("KVM_SET_MP_STATE RUNNABLE", ioctl(v0, KVM_SET_MP_STATE, &mp), 0);
	expect("KVM_ENABLE_CAP SYSTEM_SUSPEND with flags", ioctl(vm, KVM_ENABLE_CAP, &cap), EINVAL);
	cap.flags = 0;
	cap.cap = KVM_CAP_ARM_PMU_V3;
	expect("KVM_ENABLE_CAP of a capability Slat lacks", ioctl(vm, KVM_ENABLE_CAP, &cap),
	       EINVAL);
	cap.cap = KVM_CAP_ARM_SYSTEM_SUSPEND;
	expect("KVM_ENABLE_CAP SYSTEM_SUSPEND", ioctl(vm, KVM_ENABLE_CAP, &cap), 0);
}

static void check_psci_results(const uint64_t *res, uint8_t *mem)
{
	static const struct {
		const char *what;
		uint64_t want;
	} want[NRES] = {
	    {"PSCI_VERSION 1.0", 0x10000},
	    {"CPU_ON of an MPIDR no vCPU has: INVALID_PARAMETERS", PSCI_INVALID},
	    {"CPU_ON of vCPU 1: SUCCESS", 0},
	    {"CPU_ON of vCPU 1 again: ALREADY_ON", PSCI_ALREADY_ON},
	    {"AFFINITY_INFO of vCPU 1: ON", 0},
	    {"AFFINITY_INFO at level 4: INVALID_PARAMETERS", PSCI_INVALID},
	    {"PSCI_FEATURES(SYSTEM_SUSPEND) once enabled: 0", 0},
	    {"SYSTEM_SUSPEND while vCPU 1 is on: DENIED", PSCI_DENIED},
	    {"MIGRATE_INFO_TYPE: no Trusted OS to migrate (2)", 2},
	    {"SMCCC_VERSION 1.1", 0x10001},
	    {"CPU_ON of a target with bits outside the affinity: INVALID_PARAMETERS", PSCI_INVALID},
	    {"an undefined PSCI function: NOT_SUPPORTED", PSCI_NOT_SUPPORTED},
	    {"x0 after the VMM resumed SYSTEM_SUSPEND: the call's own", FN64_SYSTEM_SUSP},
	};
	uint64_t v;

	for (unsigned i = 0; i < NRES; i++)
		check(want[i].what, res[i] == want[i].want, res[i], want[i].want);
	memcpy(&v, mem + RES_GPA + FLAG1_OFF, 8);
	check("vCPU 1 started at CPU_ON's entry with its context id in x0", v == CTX1, v, CTX1);
	memcpy(&v, mem + RES_GPA + BAD1_OFF, 8);
	check("vCPU 1 never ran past its CPU_OFF", v == 0, v, 0);
}

static void check_psci(int kvm)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	struct sigaction sa = {.sa_handler = no_op}; // no SA_RESTART: KVM_RUN returns EINTR
	struct kvm_run *run0, *run1;
	struct vcpu1_run r1 = {0};
	uint64_t v = 0, res[NRES];
	pthread_t t1;

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem =
	    mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || mem == MAP_FAILED) {
		check("PSCI VM set up", false, errno, 0);
		return;
	}
	write_psci_guest(mem);
	region(vm, 0, 0, 0, SLOT_SZ, mem);
	int v0 = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run0, sz);
	int v1 =
	    psci_vcpu(vm, 1, 1u << KVM_ARM_VCPU_PSCI_0_2 | 1u << KVM_ARM_VCPU_POWER_OFF, &run1, sz);
	if (v0 < 0 || v1 < 0) {
		check("PSCI vCPUs made with KVM_ARM_VCPU_PSCI_0_2", false, errno, 0);
		return;
	}
	check_psci_setup(vm, v0, v1);
	one_reg(v1, ARM64_SYS_REG(3, 0, 0, 0, 5), &v, false);
	v &= 0xff00ffffffull;
	one_reg(v0, CORE(regs.regs[20]), &v, true);
	r1.fd = v1;
	r1.run = run1;
	pthread_create(&t1, NULL, vcpu1_thread, &r1);
	alarm(120); // a guest stuck in its waits: KVM_RUN ends with EINTR, the checks fail
	expect("KVM_RUN of vCPU 0 to SYSTEM_SUSPEND", ioctl(v0, KVM_RUN, 0), 0);
	check("SYSTEM_SUSPEND is KVM_EXIT_SYSTEM_EVENT suspend",
	      run0->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  run0->system_event.type == KVM_SYSTEM_EVENT_SUSPEND,
	      run0->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	one_reg(v0, CORE(regs.regs[1]), &v, false);
	check("the VMM reads SYSTEM_SUSPEND's entry point in x1", v == ENTRY1, v, ENTRY1);
	// vCPU 1's thread waits in KVM_RUN, holding the vCPU (its other ioctls
	// wait, as in KVM): a signal ends that RUN.
	pthread_kill(t1, SIGUSR1);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	int joined = pthread_timedjoin_np(t1, NULL, &ts);
	check("a signal ends the off vCPU's KVM_RUN with EINTR, KVM_EXIT_INTR",
	      joined == 0 && r1.ret == -1 && r1.err == EINTR && run1->exit_reason == KVM_EXIT_INTR,
	      joined ? 0xdead : (unsigned long long)r1.err, EINTR);
	if (joined == 0)
		check("vCPU 1 off after its CPU_OFF", mp_state(v1) == KVM_MP_STATE_STOPPED,
		      mp_state(v1), KVM_MP_STATE_STOPPED);
	expect("KVM_RUN of vCPU 0 to SYSTEM_OFF", ioctl(v0, KVM_RUN, 0), 0);
	alarm(0);
	check("SYSTEM_OFF is KVM_EXIT_SYSTEM_EVENT shutdown",
	      run0->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  run0->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN,
	      run0->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	check("every vCPU off after SYSTEM_OFF", mp_state(v0) == KVM_MP_STATE_STOPPED, mp_state(v0),
	      KVM_MP_STATE_STOPPED);
	memcpy(res, mem + RES_GPA, sizeof(res));
	check_psci_results(res, mem);
	if (joined == 0) {
		close(v1);
		close(v0);
		close(vm);
	} // else vCPU 1's thread still holds its fd: leave the VM to exit()
	munmap(mem, SLOT_SZ);
}

// ---- a read-only region (KVM_MEM_READONLY) -----------------------------------------
// The guest reads the region (its value reaches the VMM through an MMIO
// write), writes it (an MMIO write exit at the region's address: KVM's way),
// reads it again (unchanged) and powers off.

#define RO_GPA	0x100000u
#define RO_WORD 0xabcd1234ull

static void write_ro_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	mov64(&c, 1, RO_GPA);
	mov64(&c, 3, MMIO_GPA);
	mov64(&c, 4, 0x5555);
	emit(&c, LDR_X(2, 1, 0));
	emit(&c, STR_X(2, 3, 0)); // the value read
	emit(&c, STR_X(4, 1, 0)); // the write to the read-only page
	emit(&c, LDR_X(2, 1, 0));
	emit(&c, STR_X(2, 3, 8)); // read again
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
}

static bool mmio_write_exit(const struct kvm_run *run, uint64_t gpa, uint64_t *val)
{
	memcpy(val, run->mmio.data, 8);
	return run->exit_reason == KVM_EXIT_MMIO && run->mmio.is_write &&
	       run->mmio.phys_addr == gpa && run->mmio.len == 8;
}

static void check_readonly(int kvm)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	struct kvm_run *run;
	uint64_t v = 0;
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem =
	    mmap(NULL, 2 * SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (vm < 0 || mem == MAP_FAILED) {
		check("read-only VM set up", false, errno, 0);
		return;
	}
	write_ro_guest(mem);
	*(volatile uint64_t *)(mem + SLOT_SZ) = RO_WORD;
	region(vm, 0, 0, 0, SLOT_SZ, mem);
	expect("region KVM_MEM_READONLY",
	       region(vm, 1, KVM_MEM_READONLY, RO_GPA, SLOT_SZ, mem + SLOT_SZ), 0);
	int vcpu = psci_vcpu(vm, 0, 0, &run, sz);
	if (vcpu < 0) {
		check("read-only VM's vCPU", false, errno, 0);
		return;
	}
	expect("KVM_RUN to the guest's report of its read", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the guest reads the read-only region's word",
	      mmio_write_exit(run, MMIO_GPA, &v) && v == RO_WORD, v, RO_WORD);
	expect("KVM_RUN to the guest's write", ioctl(vcpu, KVM_RUN, 0), 0);
	check("its write is an MMIO write exit at the region's address",
	      mmio_write_exit(run, RO_GPA, &v) && v == 0x5555, run->exit_reason, KVM_EXIT_MMIO);
	expect("KVM_RUN to the guest's second read", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the word is unchanged for the guest",
	      mmio_write_exit(run, MMIO_GPA + 8, &v) && v == RO_WORD, v, RO_WORD);
	memcpy(&v, mem + SLOT_SZ, 8);
	check("... and for the VMM", v == RO_WORD, v, RO_WORD);
	expect("KVM_RUN to SYSTEM_OFF", ioctl(vcpu, KVM_RUN, 0), 0);
	check("read-only VM powers off", run->exit_reason == KVM_EXIT_SYSTEM_EVENT,
	      run->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	close(vcpu);
	close(vm);
	munmap(mem, 2 * SLOT_SZ);
}

int main(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (kvm < 0) {
		say("cannot open /dev/kvm: %s", strerror(errno));
		return 2;
	}
	check_system(kvm);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		say("KVM_CREATE_VM: %s", strerror(errno));
		return 2;
	}
	uint8_t *mem =
	    mmap(NULL, 2 * SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 2;
	write_guest(mem);
	expect("region slot 0 (the guest's code)", region(vm, 0, 0, CODE_GPA, SLOT_SZ, mem), 0);
	check_regions(vm, mem);
	long max = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	expect("KVM_CREATE_VCPU id = KVM_CAP_MAX_VCPUS", ioctl(vm, KVM_CREATE_VCPU, max), EINVAL);
	int vcpu = expect("KVM_CREATE_VCPU 0", ioctl(vm, KVM_CREATE_VCPU, 0), 0);
	expect("KVM_CREATE_VCPU 0 again", ioctl(vm, KVM_CREATE_VCPU, 0), EEXIST);
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	expect("mmap of kvm_run, twice the size",
	       mmap(NULL, 2 * sz, PROT_READ, MAP_SHARED, vcpu, 0) == MAP_FAILED ? -1 : 0, EINVAL);
	struct kvm_run *run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED) {
		say("mmap of kvm_run: %s", strerror(errno));
		return 2;
	}
	check_vcpu_state(vm, vcpu);
	check_run(vcpu, run, mem);
	close(vcpu);
	close(vm);
	check_psci(kvm);
	check_readonly(kvm);
	close(kvm);
	return verdict();
}
