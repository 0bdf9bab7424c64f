// SPDX-License-Identifier: Apache-2.0
//
// VCPU_RUN on arm64 (arch_hv_run, core/hv.h): the world switch between the
// primary (whose HVC handler we are in) and a secondary vCPU, the entry loop
// and the exits. See arch/arm64/hv.c for the overall shape and
// docs/secondary-vms-arm64.md for the trap policy.
#include "arch/arm64/el2_policy.h"
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/exit_reason.h"
#include "arch/arm64/hv_vcpu.h"
#include "arch/arm64/hyp.h"
#include "core/hv.h"
#include "core/log.h"

#define PSCI_SYSTEM_OFF	  0x84000008u
#define PSCI_SYSTEM_RESET 0x84000009u

#define FSC_TRANS_L0 0x04 // stage-2 translation fault, levels 0-3: 0x04-0x07
#define FSC_PERM_L3  0x0f // access flag 0x08-0x0b, permission 0x0c-0x0f

// The EL2 controls that differ between the primary and a secondary.
struct hv_el2_ctl {
	uint64_t hcr, vtcr, vttbr, vmpidr, cptr, mdcr, cnthctl, cntvoff;
	uint64_t ich_hcr, icc_sre; // GICv3 system-register interface only
};

// What the loop tells arch_hv_run after an exit.
enum hv_next { HV_REENTER, HV_TO_VMM, HV_NOMEM };

static void el2_ctl_save(struct hv_el2_ctl *c)
{
	c->hcr = read_sysreg("hcr_el2");
	c->vtcr = read_sysreg("vtcr_el2");
	c->vttbr = read_sysreg("vttbr_el2");
	c->vmpidr = read_sysreg("vmpidr_el2");
	c->cptr = read_sysreg("cptr_el2");
	c->mdcr = read_sysreg("mdcr_el2");
	c->cnthctl = read_sysreg("cnthctl_el2");
	c->cntvoff = read_sysreg("cntvoff_el2");
	if (arm64_cpu.gic_sysregs) {
		c->icc_sre = read_sysreg(SYSREG_ICC_SRE_EL2);
		// ICH_* exist for EL2 only with the system-register interface on.
		if (c->icc_sre & ICC_SRE_SRE)
			c->ich_hcr = read_sysreg(SYSREG_ICH_HCR_EL2);
	}
}

static void el2_ctl_load(const struct hv_el2_ctl *c)
{
	write_sysreg("vtcr_el2", c->vtcr);
	write_sysreg("vttbr_el2", c->vttbr);
	write_sysreg("vmpidr_el2", c->vmpidr);
	write_sysreg("cptr_el2", c->cptr);
	write_sysreg("mdcr_el2", c->mdcr);
	write_sysreg("cnthctl_el2", c->cnthctl);
	write_sysreg("cntvoff_el2", c->cntvoff);
	if (arm64_cpu.gic_sysregs) {
		if (c->icc_sre & ICC_SRE_SRE)
			write_sysreg(SYSREG_ICH_HCR_EL2, c->ich_hcr);
		write_sysreg(SYSREG_ICC_SRE_EL2, c->icc_sre);
	}
	write_sysreg("hcr_el2", c->hcr);
	isb();
}

// A secondary's controls, derived from the primary's: everything that would
// reach the primary's devices, timers, PMU, debug state or GIC traps.
static void el2_ctl_secondary(const struct hv_el2_ctl *prim, const struct arm64_hv_vcpu *s,
			      const struct arm64_vgic_run *g, struct hv_el2_ctl *c)
{
	*c = (struct hv_el2_ctl){
	    .hcr = arm64_hv_hcr_for(&arm64_cpu),
	    .vtcr = arm64_hv_vtcr(),
	    .vttbr = ARM64_HV_VMID << 48, // the root comes with each entry
	    .vmpidr = s->vmpidr,
	    // FP/SIMD stays enabled (its registers are swapped); SVE, SME and
	    // trace trap (TZ/TSM are RES1 where not implemented).
	    .cptr = prim->cptr | CPTR_TZ | CPTR_TSM | CPTR_TTA,
	    .mdcr = arm64_hv_mdcr_for((unsigned)(prim->mdcr & 0x1f)),
	    .cnthctl = CNTHCTL_EL1PCTEN, // the counter reads; CNTP_* trap
	    .cntvoff = s->cntvoff,	 // the VMM's (1.12), 0 by default
	    // Without the VMM's virtual GIC every ICV_* access traps (UNDEF);
	    // with it the interface runs. ICC_SRE_EL1 traps (Enable clear) and
	    // reads as the system-register interface (exit_sysreg).
	    .ich_hcr = (g->flags & HC_VGIC_ON)
			   ? arm64_vgic_hcr(g)
			   : ICH_HCR_TC | ICH_HCR_TALL0 | ICH_HCR_TALL1 | ICH_HCR_TDIR,
	    .icc_sre = prim->icc_sre & ~ICC_SRE_ENABLE,
	};
}

// ---- completing the previous exit ---------------------------------------------------

static uint64_t mmio_extend(const struct arm64_hv_vcpu *s, uint64_t data)
{
	unsigned bits = 8u * s->mmio_len;

	if (bits < 64) {
		data &= (1ull << bits) - 1;
		if (s->mmio_sse && (data >> (bits - 1) & 1))
			data |= ~0ull << bits;
	}
	return s->mmio_sf ? data : (data & 0xffffffffull);
}

static void complete_pending(struct arm64_hv_vcpu *s, const struct hc_run *run)
{
	switch (s->pending) {
	case HV_PENDING_MMIO_READ:
		if (s->mmio_reg != 31) // XZR: the value is dropped
			s->frame.x[s->mmio_reg] = mmio_extend(s, run->u.mmio.data);
		s->frame.elr += s->insn_len;
		break;
	case HV_PENDING_MMIO_WRITE:
		s->frame.elr += s->insn_len;
		break;
	case HV_PENDING_SYSREG:
		s->frame.elr += 4;
		break;
	case HV_PENDING_HCALL:
		for (unsigned i = 0; i < 4; i++)
			s->frame.x[i] = run->u.hcall.ret[i];
		break;
	default:
		break;
	}
	s->pending = HV_PENDING_NONE;
}

// ---- exits -------------------------------------------------------------------------------

static enum hv_next exit_internal(struct hc_run *run, uint64_t hw, uint64_t i0, uint64_t i1)
{
	run->reason = HC_EXIT_INTERNAL;
	run->u.fail.hw_reason = hw;
	run->u.fail.info[0] = i0;
	run->u.fail.info[1] = i1;
	return HV_TO_VMM;
}

// The access in a data abort's syndrome (ISV: a single load or store of a
// general-purpose register) into the vCPU's mmio_* fields.
static void mmio_decode(struct arm64_hv_vcpu *s, uint64_t esr)
{
	s->mmio_len = (uint8_t)(1u << ((esr >> 22) & 3));
	s->mmio_reg = (uint8_t)((esr >> 16) & 0x1f);
	s->mmio_sse = (esr & ISS_DABT_SSE) != 0;
	s->mmio_sf = (esr & ISS_DABT_SF) != 0;
	s->insn_len = (esr & ESR_IL) ? 4 : 2;
}

// GICv2: the guest's access to its CPU interface, done by Slat on GICV
// (hv_vgic_v2.c) without leaving EL2.
static enum hv_next cpuif_access(struct arm64_hv_vcpu *s, uint64_t esr, uint64_t off)
{
	bool write = esr & ISS_DABT_WNR;

	mmio_decode(s, esr);
	uint64_t in = s->mmio_reg == 31 ? 0 : s->frame.x[s->mmio_reg];
	uint64_t out = arm64_vgic_v2_cpuif(off, s->mmio_len, write, in);

	if (!write && s->mmio_reg != 31)
		s->frame.x[s->mmio_reg] = mmio_extend(s, out);
	s->frame.elr += s->insn_len;
	return HV_REENTER;
}

// An access no slot backs: an MMIO exit when the syndrome describes it, or
// the GICv2 CPU interface's.
static enum hv_next exit_mmio(struct arm64_hv_vcpu *s, struct hc_run *run, uint64_t esr,
			      uint64_t ipa, bool insn, const struct arm64_vgic_run *g)
{
	if (insn || (esr & ISS_DABT_S1PTW) || !(esr & ISS_DABT_ISV))
		return exit_internal(run, esr, ipa, read_sysreg("far_el2"));
	if (g->v2 && ipa - g->cpuif_ipa < HC_VGIC_V2_CPUIF_SIZE)
		return cpuif_access(s, esr, ipa - g->cpuif_ipa);
	bool write = esr & ISS_DABT_WNR;
	unsigned reg = (unsigned)(esr >> 16) & 0x1f;

	mmio_decode(s, esr);
	s->pending = write ? HV_PENDING_MMIO_WRITE : HV_PENDING_MMIO_READ;
	run->reason = HC_EXIT_MMIO;
	run->u.mmio.gpa = ipa;
	run->u.mmio.len = s->mmio_len;
	run->u.mmio.is_write = write;
	run->u.mmio.data = 0;
	if (write) {
		uint64_t d = reg == 31 ? 0 : s->frame.x[reg];
		run->u.mmio.data = s->mmio_len < 8 ? d & ((1ull << (8u * s->mmio_len)) - 1) : d;
	}
	return HV_TO_VMM;
}

static enum hv_next exit_abort(struct vcpu *v, struct arm64_hv_vcpu *s, struct hc_run *run,
			       uint64_t esr, bool insn, const struct arm64_vgic_run *g)
{
	unsigned fsc = (unsigned)(esr & ISS_FSC_MASK);
	uint64_t far = read_sysreg("far_el2");
	uint64_t ipa = ((read_sysreg("hpfar_el2") >> 4) << 12) | (far & 0xfff);

	// Only stage-2 translation, access-flag and permission faults are about
	// slots; external aborts, TLB conflicts etc. are for the VMM to see.
	if (fsc < FSC_TRANS_L0 || fsc > FSC_PERM_L3)
		return exit_internal(run, esr, ipa, far);
	int r = hv_vcpu_fault(v, ipa, !insn && (esr & ISS_DABT_WNR), insn);

	switch (r) {
	case S2_FAULT_MAPPED:
	case S2_FAULT_RETRY:
		return HV_REENTER;
	case S2_FAULT_MMIO:
		return exit_mmio(s, run, esr, ipa, insn, g);
	case S2_FAULT_ABSENT: // the VMM fills the page; the access runs again
		return hv_vcpu_memfault(v, ipa, insn ? false : !!(esr & ISS_DABT_WNR), run)
			   ? HV_TO_VMM
			   : HV_REENTER;
	case HC_E_NOMEM:
		return HV_NOMEM;
	default:
		return exit_internal(run, esr, ipa, far);
	}
}

static enum hv_next exit_smc(struct arm64_hv_vcpu *s, struct hc_run *run)
{
	uint32_t fid = (uint32_t)s->frame.x[0];

	s->frame.elr += 4; // a trapped SMC returns to itself
	if (fid == PSCI_SYSTEM_OFF || fid == PSCI_SYSTEM_RESET) {
		run->reason = HC_EXIT_SHUTDOWN;
		run->u.fail.hw_reason = fid;
		return HV_TO_VMM;
	}
	s->frame.x[0] = (uint64_t)-1; // SMCCC: unknown function (no firmware for secondaries)
	return HV_REENTER;
}

// A trapped MSR / MRS (EC 0x18): what el2_policy.c decides for it. ISS:
// the register in the HC_SYSREG_ID form, Rt 9:5, direction 0 (1: MRS).
#define ISS_SYSREG_ID_MASK 0x3ffc1eu
#define ISS_SYSREG_READ	   1u

static enum hv_next exit_sysreg(struct arm64_hv_vcpu *s, struct hc_run *run, uint64_t esr,
				bool vgic)
{
	uint32_t id = (uint32_t)esr & ISS_SYSREG_ID_MASK;
	unsigned rt = (unsigned)(esr >> 5) & 0x1f;
	bool read = esr & ISS_SYSREG_READ;
	uint64_t in = rt == 31 ? 0 : s->frame.x[rt], out = 0;

	switch (arm64_hv_sysreg_action(id)) {
	case HV_SYSREG_RAZ_WI:
		break;
	case HV_SYSREG_MDSCR:
		if (!read)
			s->mdscr_guest = in;
		out = s->mdscr_guest;
		break;
	case HV_SYSREG_ICC_SRE: // SRE, IRQ and FIQ bypass disabled (as KVM shows it)
		out = ICC_SRE_SRE | ICC_SRE_DFB | ICC_SRE_DIB;
		break;
	case HV_SYSREG_SGI:
		if (vgic && !read) { // for the VMM's distributor
			run->reason = HC_EXIT_SYSREG;
			run->u.sysreg.id = id;
			run->u.sysreg.is_write = 1;
			run->u.sysreg.data = in;
			s->pending = HV_PENDING_SYSREG;
			return HV_TO_VMM;
		}
		arm64_inject_undef(&s->frame);
		return HV_REENTER;
	default: // the primary's timer, PAuth keys, trace...
		arm64_inject_undef(&s->frame);
		return HV_REENTER;
	}
	if (read && rt != 31)
		s->frame.x[rt] = out;
	s->frame.elr += 4;
	return HV_REENTER;
}

static enum hv_next exit_sync(struct vcpu *v, struct arm64_hv_vcpu *s, struct hc_run *run,
			      uint64_t esr, const struct arm64_vgic_run *g)
{
	switch (esr_ec(esr)) {
	case EC_DABT_LOW:
		return exit_abort(v, s, run, esr, false, g);
	case EC_IABT_LOW:
		return exit_abort(v, s, run, esr, true, g);
	case EC_HVC64: // ELR is already past the HVC
		run->reason = HC_EXIT_HYPERCALL;
		run->u.hcall.nr = s->frame.x[0];
		for (unsigned i = 0; i < 6; i++)
			run->u.hcall.args[i] = s->frame.x[1 + i];
		s->pending = HV_PENDING_HCALL;
		return HV_TO_VMM;
	case EC_SMC64:
		return exit_smc(s, run);
	case EC_SYSREG:
		return exit_sysreg(s, run, esr, g->flags & HC_VGIC_ON);
	case EC_WFX:
		s->frame.elr += (esr & ESR_IL) ? 4 : 2;
		if (esr & 1) // WFE (not trapped today): just go on
			return HV_REENTER;
		run->reason = HC_EXIT_HALT;
		return HV_TO_VMM;
	default:
		// SVE/SME, anything else: undefined for the guest.
		arm64_inject_undef(&s->frame);
		return HV_REENTER;
	}
}

static enum hv_next exit_handle(struct vcpu *v, struct arm64_hv_vcpu *s, struct hc_run *run,
				uint64_t kind, const struct arm64_vgic_run *g)
{
	uint64_t esr = read_sysreg("esr_el2");

	bool irq = (kind & 3) == 1 || (kind & 3) == 2;

	vcpu_count_exit(v, irq ? EXIT_INTERRUPT : arm64_exit_reason(kind, esr));
	switch (kind) {
	case ARM64_TRAP_LOWER_A64_SYNC:
	case ARM64_TRAP_LOWER_A32_SYNC:
		return exit_sync(v, s, run, esr, g);
	case ARM64_TRAP_LOWER_A64_SYNC + 1: // IRQ
	case ARM64_TRAP_LOWER_A64_SYNC + 2: // FIQ
	case ARM64_TRAP_LOWER_A32_SYNC + 1:
	case ARM64_TRAP_LOWER_A32_SYNC + 2:
		// The interrupt stays pending: the primary takes it once IMO is clear.
		run->reason = HC_EXIT_PREEMPTED;
		return HV_TO_VMM;
	default: // SError
		return exit_internal(run, esr, kind, 0);
	}
}

// ---- the run ------------------------------------------------------------------------------

static int run_loop(struct vcpu *v, struct arm64_hv_vcpu *s, struct hc_run *run,
		    const struct arm64_vgic_run *g)
{
	struct arm64_pcpu *pc = arm64_this_pcpu();

	for (;;) {
		struct hv_entry e;
		int r = hv_vcpu_enter(v, &e);

		if (r)
			return r;
		write_sysreg("vttbr_el2", e.root_pa | (ARM64_HV_VMID << 48));
		isb();
		if (e.flush) {
			__asm__ volatile("tlbi vmalls12e1" ::: "memory");
			dsb(nsh);
			isb();
		}
		uint64_t kind = arm64_hv_enter(pc, &s->frame);
		hv_vcpu_exited(v);
		switch (exit_handle(v, s, run, kind, g)) {
		case HV_REENTER:
			continue;
		case HV_NOMEM:
			return HC_E_NOMEM; // the access faults again on the next RUN
		default:
			return HC_OK;
		}
	}
}

int arch_hv_run(struct vcpu *caller, struct vcpu *v, struct hc_run *run)
{
	struct arm64_hv_vcpu *s = (struct arm64_hv_vcpu *)(uintptr_t)v->arch.hv_state;
	struct arm64_el1_regs prim_el1;
	struct hv_el2_ctl prim, sec;
	struct arm64_vgic_run g;
	int r;

	(void)caller;
	run->vgic.lr_max = (uint8_t)arm64_vgic_lr_count();
	run->vgic.gic = (uint8_t)arm64_vgic_kind();
	r = arm64_vgic_take(run, &g); // before anything changes
	if (r)
		return r;
	bool vgic = g.flags & HC_VGIC_ON;

	complete_pending(s, run);
	arm64_el1_save(&prim_el1);
	el2_ctl_save(&prim);
	el2_ctl_secondary(&prim, s, &g, &sec);
	// The primary's FP/SIMD registers are not kept: its kernel calls RUN
	// between kernel_neon_begin() and kernel_neon_end().
	arm64_fp_load(s->fp);
	arm64_el1_load(&s->el1);
	el2_ctl_load(&sec);
	if (vgic)
		arm64_vgic_load(s, &g);

	arm64_hv_tick_arm(&prim_el1);
	r = run_loop(v, s, run, &g);

	arm64_hv_tick_disarm();
	if (vgic)
		arm64_vgic_save(s, &g, run);
	arm64_el1_save(&s->el1);
	run->vgic.vtimer_ctl = s->el1.cntv_ctl;
	run->vgic.vtimer_cval = s->el1.cntv_cval;
	arm64_fp_save(s->fp);
	el2_ctl_load(&prim);
	arm64_el1_load(&prim_el1);
	return r;
}
