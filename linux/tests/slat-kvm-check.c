// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check: the KVM API on /dev/kvm as slat.ko answers it (arm64),
// argument by argument: every bad ioctl argument gets the error KVM gives
// (docs/kvm-api.md), a capability Slat lacks answers 0, and a small guest
// shows the exits (MMIO write and read with the VMM's answer, an unknown
// SMCCC call answered NOT_SUPPORTED in the kernel, WFI, PSCI SYSTEM_OFF as a
// system event) and immediate_exit leaving the last exit as it was; then
// PSCI with two vCPUs (CPU_ON into a vCPU whose thread waits in KVM_RUN,
// CPU_OFF, AFFINITY_INFO, SYSTEM_SUSPEND to the VMM, every refusal); a
// read-only region; the in-kernel GICv3 (its device attributes, then guests
// that bring it up and take an SGI, an SPI from KVM_IRQ_LINE, their virtual
// timer's PPI and another vCPU's SGI). Prints one "SLAT-GUEST: kvmcheck: ..."
// line per check and a PASS/FAIL verdict. --reference: the run on Linux's own
// KVM (tests/boot/t_arm64_kvm_reference.sh), which leaves out the checks of
// Slat's own choices and of the refusals KVM does not make.
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
	if (on_slat()) // KVM: 32767
		check("KVM_CAP_NR_MEMSLOTS", n == 32764, n, 32764);
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
	if (on_slat()) // KVM has a PMU
		check("KVM_CAP_ARM_PMU_V3 (not implemented)", n == 0, n, 0);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, 999999);
	check("KVM_CHECK_EXTENSION 999999", n == 0, n, 0);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_VM_IPA_SIZE);
	check("KVM_CAP_ARM_VM_IPA_SIZE >= 40", n >= 40, n, 40);
	check("KVM_GET_VCPU_MMAP_SIZE",
	      ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0) >= (long)sizeof(struct kvm_run),
	      ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0), sizeof(struct kvm_run));
	if (on_slat()) // arm64 KVM: EINVAL
		expect("unknown /dev/kvm ioctl", ioctl(kvm, _IO(KVMIO, 0xfe), 0), ENOTTY);
	expect("KVM_CREATE_VM IPA 60 bits", ioctl(kvm, KVM_CREATE_VM, 60), EINVAL);
	expect("KVM_CREATE_VM IPA 20 bits", ioctl(kvm, KVM_CREATE_VM, 20), EINVAL);
	expect("KVM_CREATE_VM unknown type bits", ioctl(kvm, KVM_CREATE_VM, 0x1000), EINVAL);
}

static void check_regions(int vm, uint8_t *mem)
{
	uint8_t *none = mmap(NULL, SLOT_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (on_slat()) // KVM logs dirty pages
		expect(
		    "region flags READONLY | LOG_DIRTY_PAGES",
		    region(vm, 1, KVM_MEM_READONLY | KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem),
		    EINVAL);
	expect("region flags bit 2", region(vm, 1, 1u << 2, 0x100000, PAGE, mem), EINVAL);
	if (on_slat())
		expect("region flags LOG_DIRTY_PAGES",
		       region(vm, 1, KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem), EINVAL);
	if (on_slat()) // KVM: 32767 slots
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
	if (on_slat()) // arm64 KVM: EINVAL
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
#define NOP		   0xD503201Fu
#define WFI		   0xD503207Fu
#define STR_X(rt, rn, off) (0xF9000000u | ((off) / 8) << 10 | (rn) << 5 | (rt))
#define LDR_X(rt, rn, off) (0xF9400000u | ((off) / 8) << 10 | (rn) << 5 | (rt))

static void write_guest(uint8_t *mem)
{
	// WFI: Slat completes it without an exit; KVM sleeps until an interrupt
	// (there is none), so a NOP in reference mode.
	const uint32_t code[] = {
	    movz(0, 0x2345, 0),
	    movk(0, 0x1, 1),
	    HVC0,		   // an SMCCC function nobody has
	    movz(2, 0x1000, 1),	   // x2 = MMIO_GPA
	    STR_X(0, 2, 0),	   // MMIO write of the HVC's x0
	    LDR_X(3, 2, 0),	   // MMIO read: the VMM answers
	    STR_X(3, 2, 8),	   // ... and sees it back
	    on_slat() ? WFI : NOP, // completes without an exit
	    movz(4, DATA_OFF, 0),  // the data page, read twice: the VMM replaces it in between
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
	if (on_slat()) // KVM has a PMU (and then keeps the vCPU's features)
		expect("KVM_ARM_VCPU_INIT with a PMU (not offered)",
		       ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), EINVAL);
	init.features[0] = 0;
	init.features[1] = 1;
	if (on_slat()) // KVM: ENOENT
		expect("KVM_ARM_VCPU_INIT with a feature bit of word 1",
		       ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), EINVAL);
	init.features[1] = 0;
	init.features[0] = 1u << KVM_ARM_VCPU_PSCI_0_2; // without: KVM's PSCI 0.1, no SYSTEM_OFF
	expect("KVM_ARM_VCPU_INIT", ioctl(vcpu, KVM_ARM_VCPU_INIT, &init), 0);
	one_reg(vcpu, CORE(regs.pstate), &v, false);
	check("reset pstate EL1h, DAIF masked", v == 0x3c5, v, 0x3c5);
	v = 0x3c9; // EL2h
	expect("SET pstate EL2h", one_reg(vcpu, CORE(regs.pstate), &v, true), EINVAL);
	one_reg(vcpu, CORE(regs.pstate), &v, false);
	check("pstate unchanged by the refusal", v == 0x3c5, v, 0x3c5);
	if (on_slat()) // KVM keeps the FP/SIMD registers
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
	if (on_slat()) // KVM lets the VMM choose it
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
	if (on_slat()) // arm64 KVM: EINVAL
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
	int vcpu = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
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

// ---- the in-kernel GICv3 (KVM_DEV_TYPE_ARM_VGIC_V3) ------------------------------
// The device's attributes and refusals; then a 1-vCPU guest that brings the
// GIC up itself (distributor, its redistributor, the CPU interface) and takes
// SGI 3 (its own ICC_SGI1R_EL1), SPI 40 (the VMM's KVM_IRQ_LINE while it waits
// in WFI) and PPI 27 (its virtual timer), each exactly once and in that
// order, and reports GICD_TYPER, GICD_PIDR2 and GICR_TYPER; then SGI 5 from
// vCPU 0 to vCPU 1 waiting in WFI. The guest's IRQ handler acknowledges
// (ICC_IAR1_EL1), records the INTID, masks the timer when it is 27, ends the
// interrupt (ICC_EOIR1_EL1) and returns with IRQs masked, so a line still
// high is not taken twice: the guest's wait loop unmasks them only around
// its WFI. Every guest wait is bounded by a count, every KVM_RUN by alarm().

#define GICD_GPA     0x08000000ull
#define GICR_GPA     0x080a0000ull
#define GICR_STRIDE  0x20000ull // RD_base + SGI_base frames of one vCPU
#define GIC_NR_IRQS  96u
#define VEC_GPA	     0x2000u // VBAR_EL1 (2 KiB aligned)
#define GRES_GPA     0x4000u // vCPU 0's results; vCPU 1's at +0x800
#define GRES1_OFF    0x800u
#define GR_COUNT     0x00u // INTIDs taken
#define GR_SPURIOUS  0x08u // ICC_IAR1_EL1 answers of 1023
#define GR_INTIDS    0x10u // the first 16 INTIDs, in order
#define GR_SRE	     0x100u
#define GR_TYPER     0x108u
#define GR_PIDR2     0x110u
#define GR_RTYPER    0x118u
#define GR_WAKER_TO  0x120u // 1: GICR_WAKER.ChildrenAsleep never cleared
#define GR_WAIT_TO   0x128u // a bit per wait that gave up
#define GR_BAD	     0x180u // an unexpected exception: ESR_EL1, ELR_EL1
#define SPI_INTID    40u
#define SGI_SELF     3u
#define SGI_OTHER    5u
#define VTIMER_INTID 27u
#define MMIO_BAD     (MMIO_GPA + 0x100) // the vector offset of an unexpected exception
#define GICC_GPA     0x08010000ull	// GICv2: the CPU interface (QEMU virt's place)
#define GICC_IAR     0x0cu
#define GICC_EOIR    0x10u

// System registers (op0 3): op1, CRn, CRm, op2.
#define SR(op1, crn, crm, op2) ((op1) << 16 | (crn) << 12 | (crm) << 8 | (op2) << 5)
#define ICC_IAR1_EL1	       SR(0, 12, 12, 0)
#define ICC_EOIR1_EL1	       SR(0, 12, 12, 1)
#define ICC_SRE_EL1	       SR(0, 12, 12, 5)
#define ICC_IGRPEN1_EL1	       SR(0, 12, 12, 7)
#define ICC_PMR_EL1	       SR(0, 4, 6, 0)
#define ICC_SGI1R_EL1	       SR(0, 12, 11, 5)
#define VBAR_EL1	       SR(0, 12, 0, 0)
#define SPSR_EL1	       SR(0, 4, 0, 0)
#define ELR_EL1		       SR(0, 4, 0, 1)
#define ESR_EL1		       SR(0, 5, 2, 0)
#define CNTVCT_EL0	       SR(3, 14, 0, 2)
#define CNTV_CTL_EL0	       SR(3, 14, 3, 1)
#define CNTV_CVAL_EL0	       SR(3, 14, 3, 2)
#define MSR(sr, rt)	       (0xD5180000u | (sr) | (rt))
#define MRS(rt, sr)	       (0xD5380000u | (sr) | (rt))
#define ISB		       0xD5033FDFu
#define DSB_SY		       0xD5033F9Fu
#define ERET		       0xD69F03E0u
#define DAIFSET_I	       0xD50342DFu // msr daifset, #2
#define DAIFCLR_I	       0xD50342FFu // msr daifclr, #2
#define STR_W(rt, rn, off)     (0xB9000000u | ((off) / 4) << 10 | (rn) << 5 | (rt))
#define LDR_W(rt, rn, off)     (0xB9400000u | ((off) / 4) << 10 | (rn) << 5 | (rt))
#define ADD_XI(rd, rn, imm)    (0x91000000u | (imm) << 10 | (rn) << 5 | (rd))
#define SUBS_XI(rd, rn, imm)   (0xF1000000u | (imm) << 10 | (rn) << 5 | (rd))
#define ADD_XR(rd, rn, rm, sh) (0x8B000000u | (rm) << 16 | (sh) << 10 | (rn) << 5 | (rd))
#define ORR_XR(rd, rn, rm)     (0xAA000000u | (rm) << 16 | (rn) << 5 | (rd))
#define COND_EQ		       0u
#define COND_NE		       1u
#define COND_HS		       2u

// A forward branch: emit a placeholder, patch it at the target.
static unsigned fwd(struct code *c)
{
	emit(c, 0);
	return c->n - 1;
}
static void land_bcond(struct code *c, unsigned at, unsigned cond)
{
	c->p[at] = 0x54000000u | ((c->n - at) & 0x7ffff) << 5 | cond;
}
static void land_tbz(struct code *c, unsigned at, unsigned rt, unsigned bit)
{
	c->p[at] = 0x36000000u | (bit & 31) << 19 | ((c->n - at) & 0x3fff) << 5 | rt;
}
static uint32_t b_back(const struct code *c, unsigned to)
{
	return 0x14000000u | ((uint32_t)((int)to - (int)c->n) & 0x3ffffff);
}

// The code must end before what follows it in the guest's memory.
static void fits(const struct code *c, unsigned bytes)
{
	if (c->n * 4 > bytes) {
		say("vgic: guest code of %u bytes does not fit in %u", c->n * 4, bytes);
		abort();
	}
}

// *(u32 *)addr = val, through x1 and x2.
static void w32(struct code *c, uint64_t addr, uint64_t val)
{
	mov64(c, 1, addr);
	mov64(c, 2, val);
	emit(c, STR_W(2, 1, 0));
}

// The guest's result `off` (x19 + off) = x<rt>.
static void gres(struct code *c, unsigned rt, unsigned off)
{
	emit(c, STR_X(rt, 19, off));
}

// An MMIO write of `val` to `gpa`: the VMM's exit.
static void tell(struct code *c, uint64_t gpa, uint64_t val)
{
	mov64(c, 1, gpa);
	mov64(c, 2, val);
	emit(c, STR_X(2, 1, 0));
}

// Waits until the guest has taken `want` interrupts: IRQs masked, the count
// checked, WFI (woken by a pending interrupt even while masked), IRQs
// unmasked (the interrupt is taken), again; at most 1000 times, then the
// wait's bit in GR_WAIT_TO. Leaves IRQs masked.
static void wait_irqs(struct code *c, unsigned want, unsigned bit)
{
	mov64(c, 9, 1000);
	unsigned loop = c->n;
	emit(c, DAIFSET_I);
	emit(c, LDR_X(10, 19, GR_COUNT));
	emit(c, CMP_X(10, want));
	unsigned done = fwd(c);
	emit(c, SUBS_XI(9, 9, 1));
	unsigned gave_up = fwd(c);
	emit(c, WFI);
	emit(c, DAIFCLR_I);
	emit(c, ISB);
	emit(c, b_back(c, loop));
	land_bcond(c, gave_up, COND_EQ);
	emit(c, LDR_X(10, 19, GR_WAIT_TO));
	mov64(c, 11, 1u << bit);
	emit(c, ORR_XR(10, 10, 11));
	gres(c, 10, GR_WAIT_TO);
	land_bcond(c, done, COND_HS);
}

// IRQs unmasked for a while (a spin of 20000): an interrupt that should not
// be pending any more would be taken here and counted.
static void grace(struct code *c)
{
	mov64(c, 9, 20000);
	emit(c, DAIFCLR_I);
	emit(c, ISB);
	unsigned loop = c->n;
	emit(c, SUBS_XI(9, 9, 1));
	emit(c, bne_back(c, loop));
	emit(c, DAIFSET_I);
}

// The vector table at VEC_GPA: the IRQ entry of the current EL with SP_ELx
// (+0x280) is the handler; every other entry reports its offset (an MMIO
// write to MMIO_BAD) after storing ESR_EL1 and ELR_EL1. GICv3 acknowledges
// and ends through ICC_IAR1_EL1 / ICC_EOIR1_EL1; GICv2 (`v2`) through its
// CPU interface's GICC_IAR / GICC_EOIR, x23 its base. The INTIDs recorded
// are the acknowledge's whole value (GICv2: an SGI's source CPU in 12:10).
static void write_vectors_for(uint8_t *mem, bool v2)
{
	for (unsigned v = 0; v < 16; v++) {
		struct code c = {(uint32_t *)(mem + VEC_GPA + v * 0x80), 0};

		if (v == 5) { // 0x280
			emit(&c, v2 ? LDR_W(20, 23, GICC_IAR) : MRS(20, ICC_IAR1_EL1));
			emit(&c, CMP_X(20, 1023));
			unsigned real = fwd(&c);
			emit(&c, LDR_X(21, 19, GR_SPURIOUS)); // spurious: no EOI
			emit(&c, ADD_XI(21, 21, 1));
			emit(&c, STR_X(21, 19, GR_SPURIOUS));
			emit(&c, ERET);
			land_bcond(&c, real, COND_NE);
			emit(&c, CMP_X(20, VTIMER_INTID));
			unsigned not_timer = fwd(&c);
			emit(&c, movz(21, 3, 0)); // CNTV_CTL: ENABLE | IMASK
			emit(&c, MSR(CNTV_CTL_EL0, 21));
			emit(&c, ISB);
			land_bcond(&c, not_timer, COND_NE);
			emit(&c, LDR_X(21, 19, GR_COUNT));
			emit(&c, CMP_X(21, 16));
			unsigned full = fwd(&c);
			emit(&c, ADD_XR(22, 19, 21, 3));
			emit(&c, STR_X(20, 22, GR_INTIDS));
			land_bcond(&c, full, COND_HS);
			emit(&c, ADD_XI(21, 21, 1));
			emit(&c, STR_X(21, 19, GR_COUNT));
			emit(&c, v2 ? STR_W(20, 23, GICC_EOIR) : MSR(ICC_EOIR1_EL1, 20));
			emit(&c, MRS(21, SPSR_EL1)); // return with IRQs masked
			emit(&c, movz(22, 0x80, 0));
			emit(&c, ORR_XR(21, 21, 22));
			emit(&c, MSR(SPSR_EL1, 21));
			emit(&c, ERET);
			continue;
		}
		emit(&c, MRS(20, ESR_EL1));
		emit(&c, STR_X(20, 19, GR_BAD));
		emit(&c, MRS(20, ELR_EL1));
		emit(&c, STR_X(20, 19, GR_BAD + 8));
		mov64(&c, 21, MMIO_BAD);
		mov64(&c, 20, v * 0x80);
		emit(&c, STR_X(20, 21, 0));
		emit(&c, 0x14000000u); // b .
	}
}

static void write_vectors(uint8_t *mem)
{
	write_vectors_for(mem, false);
}

// One vCPU's side of the GIC: VBAR_EL1, GICD_CTLR = ARE | EnableGrp1, its
// redistributor awake (GICR_WAKER.ProcessorSleep cleared, ChildrenAsleep
// polled at most 100000 times), group 1 for its SGIs and PPIs, `enable` in
// GICR_ISENABLER0, ICC_SRE_EL1 read (GR_SRE), ICC_PMR_EL1 0xff and
// ICC_IGRPEN1_EL1 1. x19 = its results.
static void gic_up(struct code *c, unsigned vcpu, uint64_t res, uint32_t enable)
{
	uint64_t rd = GICR_GPA + vcpu * GICR_STRIDE, sgi = rd + 0x10000;

	mov64(c, 19, res);
	mov64(c, 0, VEC_GPA);
	emit(c, MSR(VBAR_EL1, 0));
	emit(c, ISB);
	w32(c, GICD_GPA + 0x0, 0x12); // GICD_CTLR
	w32(c, rd + 0x14, 0);	      // GICR_WAKER
	mov64(c, 9, 100000);
	unsigned poll = c->n;
	emit(c, LDR_W(10, 1, 0));
	unsigned awake = fwd(c);
	emit(c, SUBS_XI(9, 9, 1));
	emit(c, bne_back(c, poll));
	emit(c, movz(10, 1, 0));
	gres(c, 10, GR_WAKER_TO);
	land_tbz(c, awake, 10, 2);
	w32(c, sgi + 0x80, 0xffffffff); // GICR_IGROUPR0
	w32(c, sgi + 0x100, enable);	// GICR_ISENABLER0
	emit(c, MRS(0, ICC_SRE_EL1));
	gres(c, 0, GR_SRE);
	emit(c, movz(0, 0xff, 0));
	emit(c, MSR(ICC_PMR_EL1, 0));
	emit(c, movz(0, 1, 0));
	emit(c, MSR(ICC_IGRPEN1_EL1, 0));
	emit(c, ISB);
}

static void sgi1r(struct code *c, uint64_t val)
{
	mov64(c, 0, val);
	emit(c, MSR(ICC_SGI1R_EL1, 0));
	emit(c, ISB);
}

// After the guest's SGI 3 to itself, alike on both GICs: (a) it waits for
// it, (b) says "ready" (MMIO 1) for the VMM's SPI 40, waits for it, says
// "seen" (2), (c) arms its virtual timer and waits for PPI 27; then keeps
// GICD_TYPER.
static void guest_sgi_spi_timer(struct code *c)
{
	wait_irqs(c, 1, 0);
	tell(c, MMIO_GPA, 1);
	wait_irqs(c, 2, 1);
	tell(c, MMIO_GPA, 2);
	emit(c, MRS(0, CNTVCT_EL0));
	mov64(c, 1, 0x10000);
	emit(c, ADD_XR(0, 0, 1, 0));
	emit(c, MSR(CNTV_CVAL_EL0, 0));
	emit(c, movz(0, 1, 0)); // ENABLE
	emit(c, MSR(CNTV_CTL_EL0, 0));
	emit(c, ISB);
	wait_irqs(c, 3, 2);
	mov64(c, 1, GICD_GPA);
	emit(c, LDR_W(0, 1, 0x4)); // GICD_TYPER
	gres(c, 0, GR_TYPER);
}

// The 1-vCPU guest: (a) SGI 3 to itself, (b) SPI 40 from the VMM (MMIO
// "ready" 1 before its wait, "seen" 2 after), (c) its virtual timer, (d) the
// ID registers; a grace period with IRQs unmasked; PSCI SYSTEM_OFF.
static void write_gic_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors(mem);
	gic_up(&c, 0, GRES_GPA, 1u << VTIMER_INTID | 1u << SGI_SELF);
	w32(&c, GICD_GPA + 0x84, 0xffffffff);		   // GICD_IGROUPR1: SPIs 32..63 group 1
	mov64(&c, 1, GICD_GPA + 0x6000 + 8 * SPI_INTID);   // GICD_IROUTER40: Aff 0.0.0.0
	emit(&c, STR_X(31, 1, 0));			   // (xzr)
	w32(&c, GICD_GPA + 0x104, 1u << (SPI_INTID - 32)); // GICD_ISENABLER1
	// (a)
	sgi1r(&c, (uint64_t)SGI_SELF << 24 | 1); // TargetList bit 0, Aff3.2.1 = 0
	guest_sgi_spi_timer(&c);
	// (d)
	mov64(&c, 1, GICD_GPA + 0xffe8); // GICD_PIDR2
	emit(&c, LDR_W(0, 1, 0));
	gres(&c, 0, GR_PIDR2);
	mov64(&c, 1, GICR_GPA + 0x8); // GICR_TYPER (64 bits)
	emit(&c, LDR_X(0, 1, 0));
	gres(&c, 0, GR_RTYPER);
	grace(&c);
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
	emit(&c, 0x14000000u);
	fits(&c, VEC_GPA);
}

// The 2-vCPU guest: vCPU 1 (at ENTRY1) brings up its side with SGI 5
// enabled, says "ready" (MMIO_GPA + 0x10, 1), waits, says "got" (2); vCPU 0
// sends SGI 5 to Aff0 = 1 and says "sent" (MMIO_GPA, 5).
static void write_sgi_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors(mem);
	gic_up(&c, 0, GRES_GPA, 0);
	sgi1r(&c, (uint64_t)SGI_OTHER << 24 | 1u << 1); // TargetList bit 1: Aff0 1
	grace(&c);
	tell(&c, MMIO_GPA, SGI_OTHER);
	emit(&c, 0x14000000u);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	gic_up(&c1, 1, GRES_GPA + GRES1_OFF, 1u << SGI_OTHER);
	tell(&c1, MMIO_GPA + 0x10, 1);
	wait_irqs(&c1, 1, 0);
	grace(&c1);
	tell(&c1, MMIO_GPA + 0x10, 2);
	emit(&c1, 0x14000000u);
	fits(&c, ENTRY1);
	fits(&c1, VEC_GPA - ENTRY1);
}

static long vgic_attr(int dev, unsigned cmd, uint32_t group, uint64_t attr, void *val)
{
	struct kvm_device_attr a = {.group = group, .attr = attr, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(dev, cmd, &a);
}

static long gic_addr(int dev, uint64_t type, uint64_t gpa)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_ADDR, type, &gpa);
}

static long gic_nr_irqs(int dev, uint32_t n)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &n);
}

static long gic_init(int dev)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
			 KVM_DEV_ARM_VGIC_CTRL_INIT, NULL);
}

static int gic_create(int vm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};

	return ioctl(vm, KVM_CREATE_DEVICE, &cd) ? -1 : (int)cd.fd;
}

static int gic2_create(int vm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V2};

	return ioctl(vm, KVM_CREATE_DEVICE, &cd) ? -1 : (int)cd.fd;
}

static void check_vgic_device(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3,
				       .flags = KVM_CREATE_DEVICE_TEST};
	struct kvm_run *run;
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);

	if (vm < 0) {
		check("vGIC device VM", false, errno, 0);
		return;
	}
	expect("vgic: KVM_CREATE_DEVICE VGIC_V3 with KVM_CREATE_DEVICE_TEST",
	       ioctl(vm, KVM_CREATE_DEVICE, &cd), 0);
	int dev = gic_create(vm);
	expect("vgic: KVM_CREATE_DEVICE VGIC_V3", dev, 0);
	cd.flags = 0;
	expect("vgic: a second VGIC_V3 on the VM", ioctl(vm, KVM_CREATE_DEVICE, &cd), EEXIST);
	expect("vgic: KVM_HAS_DEVICE_ATTR of an unknown group (99)",
	       vgic_attr(dev, KVM_HAS_DEVICE_ATTR, 99, 0, NULL), ENXIO);
	expect("vgic: NR_IRQS 48", gic_nr_irqs(dev, 48), EINVAL);
	expect("vgic: NR_IRQS 1056", gic_nr_irqs(dev, 1056), EINVAL);
	expect("vgic: DIST address 0x08001000 (not 64 KiB aligned)",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA + 0x1000), EINVAL);
	expect("vgic: DIST address 0x08000000", gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA),
	       0);
	expect("vgic: DIST address set twice",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA + 0x10000), EEXIST);
	expect("vgic: NR_IRQS 96", gic_nr_irqs(dev, GIC_NR_IRQS), 0);
	int vcpu = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	expect("vgic: CTRL_INIT", gic_init(dev), 0);
	// Until a vCPU runs the addresses may still be set; no vCPU may be added.
	expect("vgic: REDIST address first set after CTRL_INIT",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICR_GPA), 0);
	expect("vgic: KVM_CREATE_VCPU after CTRL_INIT", ioctl(vm, KVM_CREATE_VCPU, 1), EBUSY);
	if (vcpu >= 0)
		close(vcpu);
	close(dev);
	close(vm);

	// KVM's bound on NR_IRQS is 1023: 992 is the largest multiple of 32.
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	dev = gic_create(vm);
	expect("vgic: NR_IRQS 1024", gic_nr_irqs(dev, 1024), EINVAL);
	expect("vgic: NR_IRQS 992", gic_nr_irqs(dev, 992), 0);
	close(dev);
	close(vm);
}

// A VM with the GIC as the brief's layout has it: 64 KiB of RAM at 0, the
// distributor at 0x08000000, the redistributors from 0x080a0000, 96 IRQs.
struct gic_vm {
	int vm, dev, vcpu[2];
	struct kvm_run *run[2];
	uint8_t *mem;
};

static bool gic_vm_make(int kvm, struct gic_vm *g, unsigned nvcpu, void (*write)(uint8_t *),
			bool v2)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);

	memset(g, 0xff, sizeof(*g));
	g->vm = ioctl(kvm, KVM_CREATE_VM, 0);
	g->mem = mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->vm < 0 || g->mem == MAP_FAILED)
		return false;
	write(g->mem);
	if (region(g->vm, 0, 0, 0, SLOT_SZ, g->mem))
		return false;
	g->dev = v2 ? gic2_create(g->vm) : gic_create(g->vm);
	if (g->dev < 0 ||
	    gic_addr(g->dev, v2 ? KVM_VGIC_V2_ADDR_TYPE_DIST : KVM_VGIC_V3_ADDR_TYPE_DIST,
		     GICD_GPA) ||
	    gic_addr(g->dev, v2 ? KVM_VGIC_V2_ADDR_TYPE_CPU : KVM_VGIC_V3_ADDR_TYPE_REDIST,
		     v2 ? GICC_GPA : GICR_GPA) ||
	    gic_nr_irqs(g->dev, GIC_NR_IRQS))
		return false;
	for (unsigned i = 0; i < nvcpu; i++) {
		g->vcpu[i] = psci_vcpu(g->vm, i, 1u << KVM_ARM_VCPU_PSCI_0_2, &g->run[i], sz);
		if (g->vcpu[i] < 0)
			return false;
	}
	return gic_init(g->dev) == 0;
}

static void gic_vm_free(struct gic_vm *g, unsigned nvcpu)
{
	for (unsigned i = 0; i < nvcpu; i++)
		close(g->vcpu[i]);
	close(g->dev);
	close(g->vm);
	munmap(g->mem, SLOT_SZ);
}

// KVM_RUN to an MMIO write of `val` at `gpa`; says what came instead.
static bool run_to_tell(int vcpu, struct kvm_run *run, uint8_t *mem, uint64_t res, uint64_t gpa,
			uint64_t val)
{
	uint64_t v = 0;
	long r = ioctl(vcpu, KVM_RUN, 0);

	if (r == 0 && mmio_write_exit(run, gpa, &v) && v == val)
		return true;
	if (r < 0)
		say("vgic: KVM_RUN: %s (exit %u)", strerror(errno), run->exit_reason);
	else if (mmio_write_exit(run, MMIO_BAD, &v)) {
		uint64_t esr, elr;
		memcpy(&esr, mem + res + GR_BAD, 8);
		memcpy(&elr, mem + res + GR_BAD + 8, 8);
		say("vgic: guest exception at vector +0x%llx, ESR_EL1 0x%llx, ELR_EL1 0x%llx",
		    (unsigned long long)v, (unsigned long long)esr, (unsigned long long)elr);
	} else
		say("vgic: exit %u (MMIO 0x%llx %s 0x%llx), want the MMIO write 0x%llx at 0x%llx",
		    run->exit_reason, (unsigned long long)run->mmio.phys_addr,
		    run->mmio.is_write ? "write" : "read", (unsigned long long)v,
		    (unsigned long long)val, (unsigned long long)gpa);
	return false;
}

static uint64_t gr(const struct gic_vm *g, unsigned off)
{
	uint64_t v;

	memcpy(&v, g->mem + GRES_GPA + off, 8);
	return v;
}

struct spi_raise {
	int vm;
	long ret;
	int err;
};

static void *raise_spi(void *arg)
{
	struct spi_raise *s = arg;
	struct kvm_irq_level l = {.irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT | SPI_INTID,
				  .level = 1};
	struct timespec ts = {0, 100 * 1000 * 1000}; // the guest is in its WFI by then

	nanosleep(&ts, NULL);
	s->ret = ioctl(s->vm, KVM_IRQ_LINE, &l);
	s->err = errno;
	return NULL;
}

// A check's name under `tag` ("vgic" or "vgic2"); one at a time.
static const char *named(const char *tag, const char *what)
{
	static char buf[200];

	snprintf(buf, sizeof(buf), "%s: %s", tag, what);
	return buf;
}

// The 1-vCPU guest's run, alike on both GICs: its GIC up and SGI 3 to
// itself, SPI 40 raised while it waits in WFI, its timer's PPI 27, its
// power-off; and the checks of it both share.
static void run_gic_guest(struct gic_vm *g, const char *tag)
{
	struct spi_raise s = {.vm = g->vm};
	uint64_t pc = CODE_GPA;
	pthread_t t;

	one_reg(g->vcpu[0], CORE(regs.pc), &pc, true);
	alarm(60); // a guest that waits forever: KVM_RUN ends with EINTR
	check(named(tag, "the guest brings up its GIC, takes SGI 3 and waits for the SPI"),
	      run_to_tell(g->vcpu[0], g->run[0], g->mem, GRES_GPA, MMIO_GPA, 1), gr(g, GR_COUNT),
	      1);
	pthread_create(&t, NULL, raise_spi, &s);
	bool seen = run_to_tell(g->vcpu[0], g->run[0], g->mem, GRES_GPA, MMIO_GPA, 2);
	pthread_join(t, NULL);
	check(named(tag, "KVM_IRQ_LINE SPI 40 level 1 while the guest is in WFI"), s.ret == 0,
	      s.ret ? s.err : 0, 0);
	check(named(tag, "the guest woken from WFI by SPI 40"), seen, gr(g, GR_COUNT), 2);
	struct kvm_irq_level l = {.irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT | SPI_INTID,
				  .level = 0};
	expect(named(tag, "KVM_IRQ_LINE SPI 40 level 0"), ioctl(g->vm, KVM_IRQ_LINE, &l), 0);
	expect(named(tag, "KVM_RUN to the guest's SYSTEM_OFF"), ioctl(g->vcpu[0], KVM_RUN, 0), 0);
	alarm(0);
	check(named(tag, "the guest powers off after its timer interrupt"),
	      g->run[0]->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  g->run[0]->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN,
	      g->run[0]->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	check(named(tag, "no guest wait gave up (bit 0 SGI, 1 SPI, 2 timer)"),
	      gr(g, GR_WAIT_TO) == 0, gr(g, GR_WAIT_TO), 0);
	check(named(tag, "exactly 3 interrupts taken"), gr(g, GR_COUNT) == 3, gr(g, GR_COUNT), 3);
}

static void check_vgic_guest(int kvm)
{
	struct gic_vm g;

	if (!gic_vm_make(kvm, &g, 1, write_gic_guest, false)) {
		check("vgic: 1-vCPU VM with the GIC set up", false, errno, 0);
		return;
	}
	run_gic_guest(&g, "vgic");
	check("vgic: GICR_WAKER.ChildrenAsleep cleared", gr(&g, GR_WAKER_TO) == 0,
	      gr(&g, GR_WAKER_TO), 0);
	check("vgic: ICC_SRE_EL1 reads SRE | DFB | DIB", gr(&g, GR_SRE) == 7, gr(&g, GR_SRE), 7);
	check("vgic: first INTID: SGI 3 (ICC_SGI1R_EL1 to itself)", gr(&g, GR_INTIDS) == SGI_SELF,
	      gr(&g, GR_INTIDS), SGI_SELF);
	check("vgic: second INTID: SPI 40 (KVM_IRQ_LINE)", gr(&g, GR_INTIDS + 8) == SPI_INTID,
	      gr(&g, GR_INTIDS + 8), SPI_INTID);
	check("vgic: third INTID: PPI 27 (the virtual timer)",
	      gr(&g, GR_INTIDS + 16) == VTIMER_INTID, gr(&g, GR_INTIDS + 16), VTIMER_INTID);
	if (gr(&g, GR_SPURIOUS))
		say("vgic: (%llu spurious acknowledges, INTID 1023)",
		    (unsigned long long)gr(&g, GR_SPURIOUS));
	uint64_t v = gr(&g, GR_TYPER);
	check("vgic: GICD_TYPER.ITLinesNumber 2 (96 IRQs)", (v & 0x1f) == 2, v & 0x1f, 2);
	v = gr(&g, GR_PIDR2);
	check("vgic: GICD_PIDR2.ArchRev 3 (GICv3)", (v >> 4 & 0xf) == 3, v >> 4 & 0xf, 3);
	v = gr(&g, GR_RTYPER);
	check("vgic: GICR_TYPER.Last set (the only vCPU)", (v >> 4 & 1) == 1, v, 1u << 4);
	check("vgic: GICR_TYPER affinity 0.0.0.0, processor number 0",
	      (v >> 32) == 0 && (v >> 8 & 0xffff) == 0, v >> 8, 0);
	say("vgic: GICD_TYPER 0x%llx, GICD_PIDR2 0x%llx, GICR_TYPER 0x%llx",
	    (unsigned long long)gr(&g, GR_TYPER), (unsigned long long)gr(&g, GR_PIDR2),
	    (unsigned long long)gr(&g, GR_RTYPER));
	gic_vm_free(&g, 1);
}

struct sgi_waiter {
	int vcpu;
	struct kvm_run *run;
	uint8_t *mem;
	bool got;
	uint64_t res; // its results
};

static void *sgi_waiter_run(void *arg)
{
	struct sgi_waiter *w = arg;

	w->got = run_to_tell(w->vcpu, w->run, w->mem, w->res, MMIO_GPA + 0x10, 2);
	return NULL;
}

// Joins a waiter's thread within 30 s; one whose vCPU never woke gets
// SIGUSR1 (its KVM_RUN ends with EINTR) and 10 s more. 0: joined.
static int join_waiter(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	int joined = pthread_timedjoin_np(t, NULL, &ts);
	if (joined) {
		pthread_kill(t, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		joined = pthread_timedjoin_np(t, NULL, &ts);
	}
	return joined;
}

// The 2-vCPU VM of the SGI checks: vCPU 0 at CODE_GPA, vCPU 1 at ENTRY1.
static bool sgi_vm_make(int kvm, struct gic_vm *g, void (*write)(uint8_t *), bool v2,
			const char *tag)
{
	uint64_t pc = ENTRY1;

	if (!gic_vm_make(kvm, g, 2, write, v2)) {
		check(named(tag, "2-vCPU VM with the GIC set up"), false, errno, 0);
		return false;
	}
	one_reg(g->vcpu[1], CORE(regs.pc), &pc, true);
	pc = CODE_GPA;
	one_reg(g->vcpu[0], CORE(regs.pc), &pc, true);
	return true;
}

static void check_vgic_sgi(int kvm)
{
	struct gic_vm g;
	struct sgi_waiter w;
	pthread_t t;

	if (!sgi_vm_make(kvm, &g, write_sgi_guest, false, "vgic"))
		return;
	alarm(60);
	check("vgic: vCPU 1 brings up its redistributor",
	      run_to_tell(g.vcpu[1], g.run[1], g.mem, GRES_GPA + GRES1_OFF, MMIO_GPA + 0x10, 1),
	      g.run[1]->exit_reason, KVM_EXIT_MMIO);
	w = (struct sgi_waiter){g.vcpu[1], g.run[1], g.mem, false, GRES_GPA + GRES1_OFF};
	pthread_create(&t, NULL, sgi_waiter_run, &w);
	struct timespec ts = {0, 100 * 1000 * 1000}; // vCPU 1 is in its WFI by then
	nanosleep(&ts, NULL);
	check("vgic: vCPU 0 sends SGI 5 to vCPU 1 (ICC_SGI1R_EL1 Aff0 1)",
	      run_to_tell(g.vcpu[0], g.run[0], g.mem, GRES_GPA, MMIO_GPA, SGI_OTHER),
	      g.run[0]->exit_reason, KVM_EXIT_MMIO);
	int joined = join_waiter(t);
	alarm(0);
	uint64_t n1 = gr(&g, GRES1_OFF + GR_COUNT), id1 = gr(&g, GRES1_OFF + GR_INTIDS);
	check("vgic: vCPU 1 woken from WFI by the SGI", joined == 0 && w.got, n1, 1);
	check("vgic: vCPU 1 took exactly 1 interrupt", n1 == 1, n1, 1);
	check("vgic: ... SGI 5", id1 == SGI_OTHER, id1, SGI_OTHER);
	check("vgic: vCPU 0 took none", gr(&g, GR_COUNT) == 0, gr(&g, GR_COUNT), 0);
	check("vgic: no wait of vCPU 1 gave up", gr(&g, GRES1_OFF + GR_WAIT_TO) == 0,
	      gr(&g, GRES1_OFF + GR_WAIT_TO), 0);
	if (joined == 0)
		gic_vm_free(&g, 2);
	// else vCPU 1's thread still holds its fd: leave the VM to exit()
}

// ---- the in-kernel GICv2 (KVM_DEV_TYPE_ARM_VGIC_V2) -----------------------------
// On a GICv2 machine (no GICv3 to offer): the device's attributes and
// refusals, then the GICv3 section's guests in their GICv2 form: the
// distributor with banked SGI/PPI registers, GICD_ITARGETSR and GICD_SGIR,
// the memory-mapped CPU interface (on Slat served by Slat on GICV, ABI 1.7).
// The SGI between vCPUs goes from vCPU 1 to vCPU 0, so that its source (1)
// shows in vCPU 0's GICC_IAR.

static void check_vgic2_device(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};
	struct kvm_run *run;
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0), vcpu[9];

	expect("vgic2: KVM_CREATE_DEVICE VGIC_V3 on a GICv2 machine",
	       ioctl(vm, KVM_CREATE_DEVICE, &cd), ENODEV);
	int dev = gic2_create(vm);
	expect("vgic2: KVM_CREATE_DEVICE VGIC_V2", dev, 0);
	cd.type = KVM_DEV_TYPE_ARM_VGIC_V2;
	expect("vgic2: a second VGIC_V2 on the VM", ioctl(vm, KVM_CREATE_DEVICE, &cd), EEXIST);
	expect("vgic2: DIST address 0x08000800 (not 4 KiB aligned)",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA + 0x800), EINVAL);
	expect("vgic2: DIST address 0x08000000",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA), 0);
	expect("vgic2: DIST address set twice",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA + 0x1000), EEXIST);
	expect("vgic2: the GICv3 REDIST address type",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICR_GPA), ENXIO);
	expect("vgic2: CPU address 0x08010000", gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_CPU, GICC_GPA),
	       0);
	expect("vgic2: NR_IRQS 96", gic_nr_irqs(dev, GIC_NR_IRQS), 0);
	// GICv2 has 8 CPU interfaces: the ninth vCPU is refused.
	for (int i = 0; i < 8; i++)
		vcpu[i] = psci_vcpu(vm, i, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	check("vgic2: 8 vCPUs", vcpu[7] >= 0, vcpu[7], 0);
	expect("vgic2: a ninth vCPU", ioctl(vm, KVM_CREATE_VCPU, 8), EINVAL);
	expect("vgic2: CTRL_INIT", gic_init(dev), 0);
	for (int i = 0; i < 8; i++)
		if (vcpu[i] >= 0)
			close(vcpu[i]);
	close(dev);
	close(vm);
}

// One vCPU's side of the GICv2: VBAR_EL1, x19 its results, x23 the CPU
// interface, GICD_CTLR Enable, `enable` in its banked GICD_ISENABLER0,
// GICC_PMR 0xff, GICC_CTLR Enable (group 0, the only one a GICv2 guest
// without security has).
static void gic2_up(struct code *c, uint64_t res, uint32_t enable)
{
	mov64(c, 19, res);
	mov64(c, 23, GICC_GPA);
	mov64(c, 0, VEC_GPA);
	emit(c, MSR(VBAR_EL1, 0));
	emit(c, ISB);
	w32(c, GICD_GPA + 0x0, 1);	  // GICD_CTLR
	w32(c, GICD_GPA + 0x100, enable); // GICD_ISENABLER0 (this vCPU's)
	w32(c, GICC_GPA + 0x4, 0xff);	  // GICC_PMR
	w32(c, GICC_GPA + 0x0, 1);	  // GICC_CTLR
	emit(c, ISB);
}

// GICD_SGIR = val (TargetListFilter 25:24, CPUTargetList 23:16, INTID 3:0).
static void sgir(struct code *c, uint32_t val)
{
	w32(c, GICD_GPA + 0xf00, val);
	emit(c, DSB_SY);
}

// The GICv3 section's 1-vCPU guest in GICv2 form.
static void write_gic2_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors_for(mem, true);
	gic2_up(&c, GRES_GPA, 1u << VTIMER_INTID | 1u << SGI_SELF);
	w32(&c, GICD_GPA + 0x800 + SPI_INTID, 1);	   // GICD_ITARGETSR10: SPI 40 to CPU 0
	w32(&c, GICD_GPA + 0x104, 1u << (SPI_INTID - 32)); // GICD_ISENABLER1
	sgir(&c, 2u << 24 | SGI_SELF);			   // to itself (filter 2)
	guest_sgi_spi_timer(&c);
	mov64(&c, 1, GICD_GPA + 0x800); // GICD_ITARGETSR0: SGIs 0-3, this CPU's bit
	emit(&c, LDR_W(0, 1, 0));
	gres(&c, 0, GR_RTYPER);
	grace(&c);
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
	emit(&c, 0x14000000u);
	fits(&c, VEC_GPA);
}

// vCPU 0 (the waiter) enables SGI 5, says "ready" (MMIO_GPA + 0x10, 1),
// waits, says "got" (2); vCPU 1 (at ENTRY1) sends SGI 5 to CPU 0 through
// GICD_SGIR's target list and says "sent" (MMIO_GPA, 5).
static void write_sgi2_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors_for(mem, true);
	gic2_up(&c, GRES_GPA, 1u << SGI_OTHER);
	tell(&c, MMIO_GPA + 0x10, 1);
	wait_irqs(&c, 1, 0);
	grace(&c);
	tell(&c, MMIO_GPA + 0x10, 2);
	emit(&c, 0x14000000u);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	gic2_up(&c1, GRES_GPA + GRES1_OFF, 0);
	sgir(&c1, 1u << 16 | SGI_OTHER); // filter 0, CPU 0
	grace(&c1);
	tell(&c1, MMIO_GPA, SGI_OTHER);
	emit(&c1, 0x14000000u);
	fits(&c, ENTRY1);
	fits(&c1, VEC_GPA - ENTRY1);
}

static void check_vgic2_guest(int kvm)
{
	struct gic_vm g;

	if (!gic_vm_make(kvm, &g, 1, write_gic2_guest, true)) {
		check("vgic2: 1-vCPU VM with the GIC set up", false, errno, 0);
		return;
	}
	run_gic_guest(&g, "vgic2");
	check("vgic2: first GICC_IAR: SGI 3 from CPU 0 (GICD_SGIR to itself)",
	      gr(&g, GR_INTIDS) == SGI_SELF, gr(&g, GR_INTIDS), SGI_SELF);
	check("vgic2: second GICC_IAR: SPI 40 (KVM_IRQ_LINE)", gr(&g, GR_INTIDS + 8) == SPI_INTID,
	      gr(&g, GR_INTIDS + 8), SPI_INTID);
	check("vgic2: third GICC_IAR: PPI 27 (the virtual timer)",
	      gr(&g, GR_INTIDS + 16) == VTIMER_INTID, gr(&g, GR_INTIDS + 16), VTIMER_INTID);
	uint64_t v = gr(&g, GR_TYPER);
	check("vgic2: GICD_TYPER ITLinesNumber 2 (96 IRQs), CPUNumber 0 (1 vCPU)", (v & 0xff) == 2,
	      v & 0xff, 2);
	v = gr(&g, GR_RTYPER) & 0xffffffff;
	check("vgic2: GICD_ITARGETSR0 reads this CPU's bit for SGIs 0-3", v == 0x01010101, v,
	      0x01010101);
	gic_vm_free(&g, 1);
}

static void check_vgic2_sgi(int kvm)
{
	struct gic_vm g;
	struct sgi_waiter w;
	pthread_t t;

	if (!sgi_vm_make(kvm, &g, write_sgi2_guest, true, "vgic2"))
		return;
	alarm(60);
	check("vgic2: vCPU 0 enables SGI 5",
	      run_to_tell(g.vcpu[0], g.run[0], g.mem, GRES_GPA, MMIO_GPA + 0x10, 1),
	      g.run[0]->exit_reason, KVM_EXIT_MMIO);
	w = (struct sgi_waiter){g.vcpu[0], g.run[0], g.mem, false, GRES_GPA};
	pthread_create(&t, NULL, sgi_waiter_run, &w);
	struct timespec ts = {0, 100 * 1000 * 1000}; // vCPU 0 is in its WFI by then
	nanosleep(&ts, NULL);
	check("vgic2: vCPU 1 sends SGI 5 to CPU 0 (GICD_SGIR target list)",
	      run_to_tell(g.vcpu[1], g.run[1], g.mem, GRES_GPA + GRES1_OFF, MMIO_GPA, SGI_OTHER),
	      g.run[1]->exit_reason, KVM_EXIT_MMIO);
	int joined = join_waiter(t);
	alarm(0);
	uint64_t n0 = gr(&g, GR_COUNT), iar = gr(&g, GR_INTIDS);
	check("vgic2: vCPU 0 woken from WFI by the SGI", joined == 0 && w.got, n0, 1);
	check("vgic2: vCPU 0 took exactly 1 interrupt", n0 == 1, n0, 1);
	check("vgic2: ... GICC_IAR 0x405: SGI 5 from CPU 1", iar == (1u << 10 | SGI_OTHER), iar,
	      1u << 10 | SGI_OTHER);
	check("vgic2: vCPU 1 took none", gr(&g, GRES1_OFF + GR_COUNT) == 0,
	      gr(&g, GRES1_OFF + GR_COUNT), 0);
	if (joined == 0)
		gic_vm_free(&g, 2);
}

// The GIC this machine's KVM offers: GICv3, else GICv2.
static void check_vgic(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3,
				       .flags = KVM_CREATE_DEVICE_TEST};
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	bool v3 = ioctl(vm, KVM_CREATE_DEVICE, &cd) == 0;

	cd.type = KVM_DEV_TYPE_ARM_VGIC_V2;
	bool v2 = !v3 && ioctl(vm, KVM_CREATE_DEVICE, &cd) == 0;
	close(vm);
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (v3) {
		check("KVM_CAP_MAX_VCPUS >= 64", n >= 64, n, 64);
		check_vgic_device(kvm);
		check_vgic_guest(kvm);
		check_vgic_sgi(kvm);
	} else if (v2) {
		say("vgic: no GICv3 here: the GICv2 checks");
		check("vgic2: KVM_CAP_MAX_VCPUS 8 (a GICv2 host)", n == 8, n, 8);
		check_vgic2_device(kvm);
		check_vgic2_guest(kvm);
		check_vgic2_sgi(kvm);
	} else {
		check("vgic: an in-kernel GIC (VGIC_V3 or VGIC_V2)", false, errno, 0);
	}
}

int main(int argc, char **argv)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	struct sigaction sa = {.sa_handler = no_op}; // no SA_RESTART: KVM_RUN returns EINTR

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	reference = argc == 2 && !strcmp(argv[1], "--reference");
	if (reference)
		say("reference mode: Linux's KVM (checks of Slat's own choices left out)");
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
	if (on_slat()) // KVM maps it (and faults beyond its pages)
		expect("mmap of kvm_run, twice the size",
		       mmap(NULL, 2 * sz, PROT_READ, MAP_SHARED, vcpu, 0) == MAP_FAILED ? -1 : 0,
		       EINVAL);
	struct kvm_run *run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED) {
		say("mmap of kvm_run: %s", strerror(errno));
		return 2;
	}
	check_vcpu_state(vm, vcpu);
	alarm(60); // a guest that runs astray: KVM_RUN ends with EINTR
	check_run(vcpu, run, mem);
	alarm(0);
	close(vcpu);
	close(vm);
	// KVM answers PSCI 1.1 and leaves SYSTEM_SUSPEND's DENIED (another vCPU
	// on) to the VMM: this section's sequence is Slat's.
	if (on_slat())
		check_psci(kvm);
	alarm(60);
	check_readonly(kvm);
	alarm(0);
	check_vgic(kvm);
	close(kvm);
	return verdict();
}
