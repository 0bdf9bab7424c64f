// SPDX-License-Identifier: Apache-2.0
//
// core/vm_arch.h for arm64: a VM is a stage-2 plus the EL2 controls its vCPUs
// run under (`struct vm_arch`), a vCPU is where it first enters EL1
// (`struct vcpu_arch`), and running it is the drop to EL1 on the calling
// CPU. Only the primary exists: its stage-2 is the identity map of the
// resident plan minus Slat's region (s2.c).
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "core/log.h"
#include "core/vm_arch.h"

int vm_arch_init(struct vm *vm)
{
	struct slat_plan *plan = arm64_resident_plan();
	struct vm_arch *a = &vm->arch;

	if (vm->id != 0) {
		log_err("arm64: vm %s: only the primary VM is supported\n", vm->name);
		return -1;
	}
	if (!arm64_s2_build_primary(&plan->region, plan, &a->s2))
		return -1;
	a->hcr = arm64_hcr_el2_for(&arm64_cpu);
	a->cptr = read_sysreg("cptr_el2") & ~(CPTR_TFP | CPTR_TZ | CPTR_TSM);
	a->cnthctl = 3; // EL1PCTEN | EL1PCEN: EL1 owns its physical counter and timer
	a->cnt_hz = read_sysreg("cntfrq_el0");
	a->start_cnt = read_sysreg("cntpct_el0");
	return 0;
}

void vcpu_arch_init(struct vcpu *vcpu)
{
	vcpu->arch = (struct vcpu_arch){0};
}

// The GICv3 CPU interface mode EL1 gets: the firmware's (system registers,
// or the legacy memory-mapped interface where the GIC offers it), with EL1
// allowed to program ICC_SRE_EL1. GICv2 has no ICC_* registers: nothing to do,
// EL1 reaches the memory-mapped CPU interface through the stage-2.
static void load_gic_cpuif(void)
{
	uint64_t el2, el1;
	bool write_el1;

	if (!arm64_icc_sre_for(&arm64_cpu, &el2, &el1, &write_el1))
		return;
	write_sysreg(SYSREG_ICC_SRE_EL2, el2);
	isb();
	if (write_el1)
		write_sysreg(SYSREG_ICC_SRE_EL1, el1);
}

// Everything EL2 holds while this CPU runs a vCPU of `vm`.
static void load_el2_state(const struct vm *vm, struct arm64_pcpu *pc)
{
	const struct vm_arch *a = &vm->arch;

	write_sysreg("vbar_el2", pc->mmu->vbar);
	write_sysreg("tpidr_el2", (uint64_t)(uintptr_t)pc);
	write_sysreg("cptr_el2", a->cptr);
	isb();
	if (arm64_cpu.has_sve)
		write_sysreg(SYSREG_ZCR_EL2, 0xf); // the largest vector length the CPU has
	if (arm64_cpu.has_sme)
		write_sysreg(SYSREG_SMCR_EL2, arm64_smcr_el2_for(&arm64_cpu));
	write_sysreg("cnthctl_el2", a->cnthctl);
	write_sysreg("cntvoff_el2", 0);
	write_sysreg("mdcr_el2", (read_sysreg("pmcr_el0") >> 11) & 0x1f); // HPMN = PMCR_EL0.N
	write_sysreg("hstr_el2", 0);
	write_sysreg("vpidr_el2", read_sysreg(SYSREG_MIDR_EL1));
	write_sysreg("vmpidr_el2", read_sysreg(SYSREG_MPIDR_EL1));
	load_gic_cpuif();
	write_sysreg("vtcr_el2", a->s2.vtcr);
	write_sysreg("vttbr_el2", a->s2.vttbr);
	write_sysreg("hcr_el2", a->hcr);
	isb();
	__asm__ volatile("tlbi vmalls12e1" ::: "memory");
	dsb(nsh);
	isb();
}

// The drop to EL1: this CPU becomes `vcpu` for good (the primary's vCPUs are
// pinned), on a fresh EL2 stack; exits come back to arm64_handle_exit. A CPU
// that arrives after its VM began shutting down (CPU_ON racing SYSTEM_OFF)
// parks: the stage-2 may already be gone.
void vcpu_arch_run(struct vcpu *vcpu)
{
	if (vm_is_shutting_down(vcpu->vm))
		arm64_park();

	struct arm64_pcpu *pc = arm64_pcpu_bind(vcpu);

	load_el2_state(vcpu->vm, pc);
	vcpu_set_running(vcpu);
	arm64_eret_to_el1(vcpu->arch.entry_pc, vcpu->arch.entry_sp, vcpu->arch.entry_x0,
			  pc->stack_top);
}

void vm_arch_teardown(struct vm *vm, struct vm_teardown_counts *out)
{
	arm64_s2_teardown(&vm->arch.s2, &out->pages_freed, &out->invalidations);
}

// From the engine VM of the primary, the only VM with a stage-2.
void vm_arch_mm_counts(const struct vm *vm, struct slat_mm_counts *out)
{
	(void)vm;
	arm64_s2_mm_counts(out);
}

uint64_t vm_arch_uptime_us(const struct vm *vm)
{
	uint64_t now = read_sysreg("cntpct_el0");

	// (ticks * 10^6) stays below 2^64 for years at the usual counter rates.
	return vm->arch.cnt_hz ? (now - vm->arch.start_cnt) * 1000000 / vm->arch.cnt_hz : 0;
}
