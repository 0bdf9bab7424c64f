// SPDX-License-Identifier: Apache-2.0
//
// The exit path of arm64's primary: arm64_handle_exit() (called by the EL2
// vectors for every exception from the primary's EL1/EL0; a secondary's
// return from arm64_hv_enter to hv_switch.c) decodes ESR_EL2 into core's exit
// reason, counts it once and handles it; arm64_el2_fault() reports an exception in
// Slat itself. Stage-2 faults are never fatal: the
// primary gets a synchronous external abort, exactly as if the memory had
// answered with an error.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/exit_reason.h"
#include "arch/arm64/hyp.h"
#include "core/hv.h"
#include "core/log.h"

// Vector offsets of VBAR_EL1 (Arm ARM D1.10.2) for a synchronous exception.
#define VEC_CUR_SP0   0x000
#define VEC_CUR_SPX   0x200
#define VEC_LOWER_A64 0x400
#define VEC_LOWER_A32 0x600

// Makes the primary take a synchronous exception with syndrome `esr1` at EL1,
// as the hardware would have: the interrupted state goes to ELR/SPSR_EL1 and
// execution continues at the right VBAR_EL1 vector with DAIF masked.
static void inject_sync(struct arm64_frame *f, uint64_t esr1, uint64_t far, bool set_far)
{
	uint64_t mode = f->spsr & PSR_MODE_MASK;
	uint64_t off = (f->spsr & PSR_RW32)    ? VEC_LOWER_A32
		       : mode == PSR_MODE_EL0T ? VEC_LOWER_A64
		       : mode == PSR_MODE_EL1T ? VEC_CUR_SP0
					       : VEC_CUR_SPX;
	uint64_t spsr = PSR_DAIF | PSR_MODE_EL1H;

	if (arm64_cpu.has_pan) {
		// PSTATE.PAN is kept, and set on entry when SCTLR_EL1.SPAN is 0.
		spsr |= f->spsr & PSR_PAN;
		if (!(read_sysreg("sctlr_el1") & SCTLR_SPAN))
			spsr |= PSR_PAN;
	}
	write_sysreg("esr_el1", esr1);
	if (set_far)
		write_sysreg("far_el1", far);
	write_sysreg("elr_el1", f->elr);
	write_sysreg("spsr_el1", f->spsr);
	f->elr = read_sysreg("vbar_el1") + off;
	f->spsr = spsr;
}

static bool from_el0(const struct arm64_frame *f)
{
	return (f->spsr & PSR_RW32) || (f->spsr & PSR_MODE_MASK) == PSR_MODE_EL0T;
}

void arm64_inject_undef(struct arm64_frame *f)
{
	inject_sync(f, ((uint64_t)EC_UNKNOWN << ESR_EC_SHIFT) | ESR_IL, 0, false);
}

static void inject_external_abort(struct arm64_frame *f, uint64_t esr2, bool insn)
{
	unsigned ec = insn ? (from_el0(f) ? EC_IABT_LOW : EC_IABT_CUR)
			   : (from_el0(f) ? EC_DABT_LOW : EC_DABT_CUR);
	uint64_t iss = FSC_SEA | (insn ? 0 : (esr2 & ISS_DABT_WNR));

	inject_sync(f, ((uint64_t)ec << ESR_EC_SHIFT) | ESR_IL | iss, read_sysreg("far_el2"), true);
}

static void handle_stage2_fault(struct vcpu *v, struct arm64_frame *f, uint64_t esr, bool insn)
{
	uint64_t far = read_sysreg("far_el2");
	uint64_t ipa = ((read_sysreg("hpfar_el2") >> 4) << 12) | (far & 0xfff);

	if (hv_primary_fault_retry(v, ipa))
		return; // another CPU is changing this entry (break-before-make): retry
	if (vm_fault_first_report(ipa >> 12)) {
		bool ours = region_overlaps(&v->vm->hidden, ipa, 1);
		log_warn("slat: stage-2 fault on %s at IPA 0x%llx (VA 0x%llx, %s %s at EL%u, ESR "
			 "0x%llx): injecting an external abort\n",
			 ours ? "Slat memory" : "an unmapped address", (unsigned long long)ipa,
			 (unsigned long long)far, insn ? "fetch" : "access",
			 insn			? ""
			 : (esr & ISS_DABT_WNR) ? "write"
						: "read",
			 from_el0(f) ? 0u : 1u, (unsigned long long)esr);
	}
	inject_external_abort(f, esr, insn);
}

static void unexpected_lower(struct arm64_frame *f, uint64_t esr)
{
	static int seen[64];
	unsigned ec = esr_ec(esr);

	if (!__atomic_exchange_n(&seen[ec], 1, __ATOMIC_RELAXED))
		log_warn("slat: unhandled trap EC 0x%x (ESR 0x%llx) at 0x%llx: injecting undefined "
			 "instruction\n",
			 ec, (unsigned long long)esr, (unsigned long long)f->elr);
	arm64_inject_undef(f);
}

static const char *const trap_kinds[ARM64_TRAP_KINDS] = {
    "EL2t sync",      "EL2t IRQ",      "EL2t FIQ",	"EL2t SError",
    "EL2h sync",      "EL2h IRQ",      "EL2h FIQ",	"EL2h SError",
    "lower A64 sync", "lower A64 IRQ", "lower A64 FIQ", "lower A64 SError",
    "lower A32 sync", "lower A32 IRQ", "lower A32 FIQ", "lower A32 SError",
};

// Interrupts and SErrors are routed to EL1 (IMO/FMO/AMO clear) and AArch32 is
// not offered: none of these should reach EL2.
static void unexpected_kind(const struct vcpu *v, struct arm64_frame *f, uint64_t kind,
			    uint64_t esr)
{
	log_warn("slat: unexpected %s exception from vm %s (ESR 0x%llx)\n", trap_kinds[kind & 15],
		 v->vm->name, (unsigned long long)esr);
	if (kind == ARM64_TRAP_LOWER_A32_SYNC)
		arm64_inject_undef(f);
}

void arm64_handle_exit(struct vcpu *v, struct arm64_frame *f, uint64_t kind)
{
	uint64_t esr = read_sysreg("esr_el2");
	enum exit_reason reason = arm64_exit_reason(kind, esr);

	// Once its VM is shutting down a vCPU runs nothing more, and its exits are
	// not counted: the CPU shutting the VM down tears the stage-2 down, then
	// reads the exit counts, while another vCPU may still run (Linux's CPU
	// stop marks the CPU offline before it parks, and the power-off does not
	// wait for the rest) and take stage-2 faults that the teardown made, not
	// the guest. The state changes before the teardown starts: every such
	// fault sees it.
	if (vm_is_shutting_down(v->vm))
		arm64_park();
	vcpu_count_exit(v, reason);
	switch (reason) {
	case EXIT_FIRMWARE_CALL:
		f->elr += 4; // a trapped SMC returns to itself
		if (!arm64_hv_uid_query(f))
			arm64_psci_call(v, f);
		break;
	case EXIT_HYPERCALL: // from EL1: HVC is UNDEFINED at EL0
		arm64_hv_primary_call(v, f);
		break;
	case EXIT_SLAT_FAULT:
		handle_stage2_fault(v, f, esr, esr_ec(esr) == EC_IABT_LOW);
		break;
	case EXIT_WAIT:
		f->elr += 4;
		break;
	default:
		if (kind == ARM64_TRAP_LOWER_A64_SYNC)
			unexpected_lower(f, esr); // EXIT_SYSREG and unknown ECs
		else
			unexpected_kind(v, f, kind, esr);
		break;
	}
}

// An exception in Slat itself: report it and stop this CPU.
void arm64_el2_fault(uint64_t kind, struct arm64_frame *f)
{
	log_err("slat: %s exception at EL2: ESR 0x%llx ELR 0x%llx FAR 0x%llx\n",
		trap_kinds[kind & 15], (unsigned long long)read_sysreg("esr_el2"),
		(unsigned long long)f->elr, (unsigned long long)read_sysreg("far_el2"));
	log_flush();
	arm64_park();
}
