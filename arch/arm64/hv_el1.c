// SPDX-License-Identifier: Apache-2.0
//
// The EL1 system registers VCPU_RUN swaps (arch/arm64/hv_vcpu.h) and their
// mapping to the SET_REGS / GET_REGS page (struct hc_regs_arm64).
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hv_vcpu.h"

#define SAVE(field, reg) r->field = read_sysreg(reg)
#define LOAD(field, reg) write_sysreg(reg, r->field)

void arm64_el1_save(struct arm64_el1_regs *r)
{
	SAVE(sctlr, "sctlr_el1");
	SAVE(ttbr0, "ttbr0_el1");
	SAVE(ttbr1, "ttbr1_el1");
	SAVE(tcr, "tcr_el1");
	SAVE(mair, "mair_el1");
	SAVE(amair, "amair_el1");
	SAVE(vbar, "vbar_el1");
	SAVE(contextidr, "contextidr_el1");
	SAVE(tpidr_el0, "tpidr_el0");
	SAVE(tpidrro_el0, "tpidrro_el0");
	SAVE(tpidr_el1, "tpidr_el1");
	SAVE(sp_el0, "sp_el0");
	SAVE(sp_el1, "sp_el1");
	SAVE(elr, "elr_el1");
	SAVE(spsr, "spsr_el1");
	SAVE(esr, "esr_el1");
	SAVE(far, "far_el1");
	SAVE(afsr0, "afsr0_el1");
	SAVE(afsr1, "afsr1_el1");
	SAVE(par, "par_el1");
	SAVE(cpacr, "cpacr_el1");
	SAVE(cntkctl, "cntkctl_el1");
	SAVE(cntv_ctl, "cntv_ctl_el0");
	SAVE(cntv_cval, "cntv_cval_el0");
	SAVE(csselr, "csselr_el1");
	SAVE(mdscr, "mdscr_el1");
}

void arm64_el1_load(const struct arm64_el1_regs *r)
{
	LOAD(sctlr, "sctlr_el1");
	LOAD(ttbr0, "ttbr0_el1");
	LOAD(ttbr1, "ttbr1_el1");
	LOAD(tcr, "tcr_el1");
	LOAD(mair, "mair_el1");
	LOAD(amair, "amair_el1");
	LOAD(vbar, "vbar_el1");
	LOAD(contextidr, "contextidr_el1");
	LOAD(tpidr_el0, "tpidr_el0");
	LOAD(tpidrro_el0, "tpidrro_el0");
	LOAD(tpidr_el1, "tpidr_el1");
	LOAD(sp_el0, "sp_el0");
	LOAD(sp_el1, "sp_el1");
	LOAD(elr, "elr_el1");
	LOAD(spsr, "spsr_el1");
	LOAD(esr, "esr_el1");
	LOAD(far, "far_el1");
	LOAD(afsr0, "afsr0_el1");
	LOAD(afsr1, "afsr1_el1");
	LOAD(par, "par_el1");
	LOAD(cpacr, "cpacr_el1");
	LOAD(cntkctl, "cntkctl_el1");
	LOAD(cntv_ctl, "cntv_ctl_el0");
	LOAD(cntv_cval, "cntv_cval_el0");
	LOAD(csselr, "csselr_el1");
	LOAD(mdscr, "mdscr_el1");
	isb();
}

// csselr and mdscr (the guest's) travel with HC_REGS_ARM64_EL1X (arch/arm64/hv.c).
void arm64_hv_regs_to_el1(const struct hc_regs_arm64 *r, struct arm64_el1_regs *e)
{
	e->sp_el0 = r->sp_el0;
	e->sp_el1 = r->sp_el1;
	e->elr = r->elr_el1;
	e->spsr = r->spsr_el1;
	e->esr = r->esr_el1;
	e->far = r->far_el1;
	e->sctlr = r->sctlr_el1;
	e->tcr = r->tcr_el1;
	e->ttbr0 = r->ttbr0_el1;
	e->ttbr1 = r->ttbr1_el1;
	e->mair = r->mair_el1;
	e->vbar = r->vbar_el1;
	e->cpacr = r->cpacr_el1;
	e->contextidr = r->contextidr_el1;
	e->tpidr_el0 = r->tpidr_el0;
	e->tpidr_el1 = r->tpidr_el1;
	e->tpidrro_el0 = r->tpidrro_el0;
	e->amair = r->amair_el1;
	e->afsr0 = r->afsr0_el1;
	e->afsr1 = r->afsr1_el1;
	e->par = r->par_el1;
	e->cntkctl = r->cntkctl_el1;
	e->cntv_ctl = r->cntv_ctl_el0;
	e->cntv_cval = r->cntv_cval_el0;
}

void arm64_hv_el1_to_regs(const struct arm64_el1_regs *e, struct hc_regs_arm64 *r)
{
	r->sp_el0 = e->sp_el0;
	r->sp_el1 = e->sp_el1;
	r->elr_el1 = e->elr;
	r->spsr_el1 = e->spsr;
	r->esr_el1 = e->esr;
	r->far_el1 = e->far;
	r->sctlr_el1 = e->sctlr;
	r->tcr_el1 = e->tcr;
	r->ttbr0_el1 = e->ttbr0;
	r->ttbr1_el1 = e->ttbr1;
	r->mair_el1 = e->mair;
	r->vbar_el1 = e->vbar;
	r->cpacr_el1 = e->cpacr;
	r->contextidr_el1 = e->contextidr;
	r->tpidr_el0 = e->tpidr_el0;
	r->tpidr_el1 = e->tpidr_el1;
	r->tpidrro_el0 = e->tpidrro_el0;
	r->amair_el1 = e->amair;
	r->afsr0_el1 = e->afsr0;
	r->afsr1_el1 = e->afsr1;
	r->par_el1 = e->par;
	r->cntkctl_el1 = e->cntkctl;
	r->cntv_ctl_el0 = e->cntv_ctl;
	r->cntv_cval_el0 = e->cntv_cval;
}
