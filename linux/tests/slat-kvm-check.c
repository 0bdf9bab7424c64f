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
//
// This file has main() and the first sections (system fd, regions, one vCPU's
// state and run); the others are one file each: kvmcheck_psci.c,
// kvmcheck_readonly.c, kvmcheck_vgic.c and kvmcheck_vgic2.c (with
// kvmcheck_vgic.h). They share kvmcheck_arm64.h / kvmcheck_arm64.c (the
// guests' layout, the AArch64 encoder, vCPU helpers) and kvmcheck.h /
// kvmcheck.c (the checks and the verdict, with the x86 program).
#include "kvmcheck_arm64.h"

#define DATA_OFF 0x8000u // a page of slot 0 the guest reads and the VMM replaces

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

static int dirty_log(int vm, uint32_t slot, uint64_t *bits)
{
	struct kvm_dirty_log log = {.slot = slot, .dirty_bitmap = bits};

	return ioctl(vm, KVM_GET_DIRTY_LOG, &log);
}

// Dirty logging as KVM 6.1 answers it (Slat: ABI 1.9): the flag at add and
// on a live region, with READONLY too; a region that does not log, or does
// not exist, has no log (ENOENT); a slot id beyond the limit EINVAL.
static void check_dirty_log_regions(int vm, uint8_t *mem)
{
	uint64_t bits = ~0ull;

	expect("region flags READONLY | LOG_DIRTY_PAGES",
	       region(vm, 1, KVM_MEM_READONLY | KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem), 0);
	expect("... deleted", region(vm, 1, 0, 0x100000, 0, mem), 0);
	expect("region flags LOG_DIRTY_PAGES",
	       region(vm, 1, KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem), 0);
	expect("KVM_GET_DIRTY_LOG of a region never run", dirty_log(vm, 1, &bits), 0);
	check("... nothing dirty", bits == 0, bits, 0);
	expect("... logging turned off", region(vm, 1, 0, 0x100000, PAGE, mem), 0);
	expect("KVM_GET_DIRTY_LOG of a region that does not log", dirty_log(vm, 1, &bits), ENOENT);
	expect("... logging turned on again",
	       region(vm, 1, KVM_MEM_LOG_DIRTY_PAGES, 0x100000, PAGE, mem), 0);
	expect("... deleted", region(vm, 1, 0, 0x100000, 0, mem), 0);
	expect("KVM_GET_DIRTY_LOG of a slot that does not exist", dirty_log(vm, 1, &bits), ENOENT);
	expect("KVM_GET_DIRTY_LOG of slot 32767", dirty_log(vm, 32767, &bits), EINVAL);
}

static void check_regions(int vm, uint8_t *mem)
{
	uint8_t *none = mmap(NULL, SLOT_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	expect("region flags bit 2", region(vm, 1, 1u << 2, 0x100000, PAGE, mem), EINVAL);
	check_dirty_log_regions(vm, mem);
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

// vCPU device attributes without an in-kernel irqchip, as KVM answers them
// for a vCPU made without a PMU: the virtual timer's PPI, the PMU's refusals.
static void check_vcpu_attrs(int vcpu)
{
	int irq = 0;

	expect("HAS_DEVICE_ATTR TIMER_CTRL VTIMER",
	       vcpu_attr(vcpu, KVM_HAS_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, NULL),
	       0);
	expect("GET_DEVICE_ATTR TIMER_CTRL VTIMER",
	       vcpu_attr(vcpu, KVM_GET_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, &irq),
	       0);
	check("the virtual timer's PPI is 27", irq == 27, irq, 27);
	expect("SET_DEVICE_ATTR TIMER_CTRL VTIMER without an irqchip",
	       vcpu_attr(vcpu, KVM_SET_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, &irq),
	       EINVAL);
	expect("HAS_DEVICE_ATTR PMU_V3_CTRL IRQ (no PMU)",
	       vcpu_attr(vcpu, KVM_HAS_DEVICE_ATTR, KVM_ARM_VCPU_PMU_V3_CTRL,
			 KVM_ARM_VCPU_PMU_V3_IRQ, NULL),
	       ENXIO);
	expect("SET_DEVICE_ATTR PMU_V3_CTRL INIT (no PMU)",
	       vcpu_attr(vcpu, KVM_SET_DEVICE_ATTR, KVM_ARM_VCPU_PMU_V3_CTRL,
			 KVM_ARM_VCPU_PMU_V3_INIT, NULL),
	       ENODEV);
	expect("GET_DEVICE_ATTR PMU_V3_CTRL IRQ without an irqchip",
	       vcpu_attr(vcpu, KVM_GET_DEVICE_ATTR, KVM_ARM_VCPU_PMU_V3_CTRL,
			 KVM_ARM_VCPU_PMU_V3_IRQ, &irq),
	       EINVAL);
	expect("HAS_DEVICE_ATTR of an unknown group",
	       vcpu_attr(vcpu, KVM_HAS_DEVICE_ATTR, 0x7f, 0, NULL), ENXIO);
	if (on_slat()) { // KVM has both (Slat: no EL1 physical timer, no stolen time)
		expect("HAS_DEVICE_ATTR TIMER_CTRL PTIMER",
		       vcpu_attr(vcpu, KVM_HAS_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
				 KVM_ARM_VCPU_TIMER_IRQ_PTIMER, NULL),
		       ENXIO);
		expect("HAS_DEVICE_ATTR PVTIME_CTRL IPA",
		       vcpu_attr(vcpu, KVM_HAS_DEVICE_ATTR, KVM_ARM_VCPU_PVTIME_CTRL,
				 KVM_ARM_VCPU_PVTIME_IPA, NULL),
		       ENXIO);
	}
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
	// V0 (128 bits) round trip: KVM keeps the FP/SIMD registers, Slat too from ABI 1.9.
	uint64_t q[2] = {0x1122334455667788ull, 0x99aabbccddeeff00ull}, qb[2] = {0, 0};
	uint64_t v0 = KVM_REG_ARM64 | KVM_REG_SIZE_U128 | KVM_REG_ARM_CORE |
		      (offsetof(struct kvm_regs, fp_regs.vregs[0]) / 4);
	struct kvm_one_reg rq = {.id = v0, .addr = (uint64_t)(uintptr_t)q};
	expect("SET V0", ioctl(vcpu, KVM_SET_ONE_REG, &rq), 0);
	rq.addr = (uint64_t)(uintptr_t)qb;
	expect("GET V0", ioctl(vcpu, KVM_GET_ONE_REG, &rq), 0);
	check("V0 reads back", qb[0] == q[0] && qb[1] == q[1], qb[1], q[1]);
	rq.id = (v0 & ~KVM_REG_SIZE_MASK) | KVM_REG_SIZE_U64;
	expect("GET V0 with a 64-bit size", ioctl(vcpu, KVM_GET_ONE_REG, &rq), EINVAL);
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
	check_reg_list(vcpu);
	v = 0x4000;
	expect("SET sp_el1", one_reg(vcpu, CORE(sp_el1), &v, true), 0);
	v = 0;
	one_reg(vcpu, CORE(sp_el1), &v, false);
	check("sp_el1 reads back", v == 0x4000, v, 0x4000);
	if (on_slat()) // arm64 KVM: EINVAL
		expect("unknown vCPU ioctl", ioctl(vcpu, _IO(KVMIO, 0xfe), 0), ENOTTY);
	check_vcpu_attrs(vcpu);
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

// check_run's exits as KVM_GET_STATS_FD counts them (Slat's figures,
// slat_kvm_stats.c): exactly the six KVM_RUNs that returned with an exit,
// five of them Slat's MMIO exits, and every exit of VCPU_RUN but the
// preemptions either answered in the kernel or passed to the VMM; the VM
// fd's count of vCPUs. Not on Linux's KVM (its figures have other names;
// kvm_binary_stats_test checks the format on both).
enum { ST_TO_VMM, ST_IN_KERNEL, ST_MMIO, ST_PREEMPTED, ST_EXIT0 };
static const char *const run_stats[] = {
    "slat_exits_to_vmm",   "slat_exits_in_kernel", "slat_exit_mmio",
    "slat_exit_preempted", "slat_exit_other",	   "slat_exit_mmio",
    "slat_exit_io",	   "slat_exit_hypercall",  "slat_exit_halt",
    "slat_exit_shutdown",  "slat_exit_preempted",  "slat_exit_fail_entry",
    "slat_exit_internal",  "slat_exit_memfault",   "slat_exit_irq_window",
    "slat_exit_msr",	   "slat_exit_sysreg",	   NULL};
#define RUN_STATS (sizeof(run_stats) / sizeof(run_stats[0]) - 1)

static void check_run_counted(int vm, int vcpu, struct kvm_run *run, uint8_t *mem)
{
	static const char *const vm_stats[] = {"slat_vcpus", NULL};
	uint64_t a[RUN_STATS], b[RUN_STATS], d[RUN_STATS], exits = 0, nv = 0;
	char c;

	if (reference) {
		check_run(vcpu, run, mem);
		return;
	}
	stat_values(vcpu, run_stats, a);
	check_run(vcpu, run, mem);
	stat_values(vcpu, run_stats, b);
	for (unsigned i = 0; i < RUN_STATS; i++)
		d[i] = b[i] - a[i];
	for (unsigned i = ST_EXIT0; i < RUN_STATS; i++)
		exits += d[i];
	check("stats: KVM_RUN returned to the VMM with 6 exits", d[ST_TO_VMM] == 6, d[ST_TO_VMM],
	      6);
	check("stats: 5 of them Slat's MMIO exits", d[ST_MMIO] == 5, d[ST_MMIO], 5);
	check("stats: VCPU_RUN's exits = answered in the kernel + to the VMM + preempted",
	      exits == d[ST_IN_KERNEL] + d[ST_TO_VMM] + d[ST_PREEMPTED], exits,
	      d[ST_IN_KERNEL] + d[ST_TO_VMM] + d[ST_PREEMPTED]);
	stat_values(vm, vm_stats, &nv);
	check("stats: the VM fd's slat_vcpus is 1", nv == 1, nv, 1);
	int sfd = expect("KVM_GET_STATS_FD of the vCPU", ioctl(vcpu, KVM_GET_STATS_FD, 0), 0);
	expect("the stats fd is read-only", write(sfd, &c, 1), EBADF);
	close(sfd);
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
	check_no_dirty_ring(kvm, vm); // KVM 6.1 on arm64 has no ring either
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
	check_run_counted(vm, vcpu, run, mem);
	alarm(0);
	close(vcpu);
	close(vm);
	// KVM answers PSCI 1.1 and leaves SYSTEM_SUSPEND's DENIED (another vCPU
	// on) to the VMM: this section's sequence is Slat's.
	if (on_slat())
		check_psci(kvm);
	alarm(60);
	check_readonly(kvm);
	check_thp(kvm);
	alarm(0);
	check_vgic(kvm);
	close(kvm);
	return verdict();
}
