// SPDX-License-Identifier: Apache-2.0
//
// A secondary's virtual CPU interface (ABI 1.6, hc_run.vgic;
// docs/secondary-vms-arm64.md): GICv3's here, GICv2's registers in
// hv_vgic_v2.c. The distributor and redistributors a guest
// sees are the VMM's (slat.ko emulates them as KVM does); Slat owns only what
// needs EL2: the list registers, loaded from the run page at each entry and
// written back at each exit, the guest's ICH_VMCR_EL2 and active priorities
// (kept per vCPU), and the two physical interrupts the interface involves:
//
//  - the virtual timer's PPI 27. A list register may name it in the HW form;
//    Slat then holds the physical PPI 27 active for the run, so the expired
//    timer does not interrupt again until the guest deactivates the virtual
//    one (which deactivates the physical one). It does the same when the
//    guest's timer output is high at entry (enabled, unmasked, expired) but
//    the VMM has nothing to deliver for it (the guest's PPI disabled, its
//    priority masked...): else the physical PPI would end every entry before
//    the guest's first instruction, and the guest could never enable it. As
//    in KVM, such a timer reprogrammed later in the run interrupts only once
//    the run ends (the primary's tick at the latest). At the exit the
//    physical PPI 27 is made inactive again: it is the primary's timer
//    outside the run.
//  - the maintenance interrupt (the MADT's, PPI 25 on QEMU virt), enabled
//    for the run only, like the tick's PPI 26 (hv_tick.c). It fires when a
//    list register with its EOI bit is deactivated or, with HC_VGIC_NPIE,
//    when none is pending; the run then ends (PREEMPTED) so the VMM can
//    sample its level-triggered lines or refill the list registers.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hv_vcpu.h"
#include "arch/arm64/hyp.h"

#define LR_RES0	       (0xfull << 56 | 0x7ull << 45)
#define LR_EOI_RES0    (0x7ull << 42 | 0x1ffull << 32) // without HW: all of pINTID but EOI
#define LR_PINTID(lr)  ((unsigned)((lr) >> HC_VGIC_LR_PINTID_SHIFT) & 0x1fff)
#define LR_STATE(lr)   ((unsigned)((lr) >> HC_VGIC_LR_STATE_SHIFT))
#define INTID_SPECIAL  1020u // 1020..1023 are special; LPIs are not offered
#define PPI_VIRT_TIMER HC_VGIC_VTIMER_INTID

// ---- the registers by index (MSR/MRS take constant names) -------------------------

#define LR_NAME(crm, op2) "S3_4_C12_C" #crm "_" #op2
#define LR_CASES(X)                                                                                \
	X(0, 12, 0)                                                                                \
	X(1, 12, 1)                                                                                \
	X(2, 12, 2)                                                                                \
	X(3, 12, 3)                                                                                \
	X(4, 12, 4)                                                                                \
	X(5, 12, 5)                                                                                \
	X(6, 12, 6)                                                                                \
	X(7, 12, 7)                                                                                \
	X(8, 13, 0)                                                                                \
	X(9, 13, 1)                                                                                \
	X(10, 13, 2)                                                                               \
	X(11, 13, 3)                                                                               \
	X(12, 13, 4)                                                                               \
	X(13, 13, 5)                                                                               \
	X(14, 13, 6)                                                                               \
	X(15, 13, 7)

static uint64_t lr_read(unsigned i)
{
	switch (i) {
#define X(n, crm, op2)                                                                             \
	case n:                                                                                    \
		return read_sysreg(LR_NAME(crm, op2));
		LR_CASES(X)
#undef X
	default:
		return 0;
	}
}

static void lr_write(unsigned i, uint64_t v)
{
	switch (i) {
#define X(n, crm, op2)                                                                             \
	case n:                                                                                    \
		write_sysreg(LR_NAME(crm, op2), v);                                                \
		break;
		LR_CASES(X)
#undef X
	default:
		break;
	}
}

// ICH_AP0R<n>_EL2 (C12_C8) and ICH_AP1R<n>_EL2 (C12_C9), n < 4.
#define APR_CASES(X) X(0) X(1) X(2) X(3)

static void apr_save(uint32_t *ap0, uint32_t *ap1, unsigned n)
{
#define X(i)                                                                                       \
	if (i < n) {                                                                               \
		ap0[i] = (uint32_t)read_sysreg("S3_4_C12_C8_" #i);                                 \
		ap1[i] = (uint32_t)read_sysreg("S3_4_C12_C9_" #i);                                 \
	}
	APR_CASES(X)
#undef X
}

static void apr_load(const uint32_t *ap0, const uint32_t *ap1, unsigned n)
{
#define X(i)                                                                                       \
	if (i < n) {                                                                               \
		write_sysreg("S3_4_C12_C8_" #i, ap0[i]);                                           \
		write_sysreg("S3_4_C12_C9_" #i, ap1[i]);                                           \
	}
	APR_CASES(X)
#undef X
}

// ---- what this CPU has ---------------------------------------------------------------

// The GICv3 list registers this CPU implements (at most HC_VGIC_LR_MAX), or
// 0 when secondaries cannot have the interface here: no GICv3 system
// registers in use, or no redistributor found for this CPU (its PPIs are
// needed).
static unsigned v3_lr_count(void)
{
	if (!arm64_cpu.gic_sysregs || !(read_sysreg(SYSREG_ICC_SRE_EL2) & ICC_SRE_SRE) ||
	    !arm64_hv_gicv3_ppi_frame())
		return 0;
	unsigned n = ICH_VTR_LISTREGS(read_sysreg(SYSREG_ICH_VTR_EL2));

	return n > HC_VGIC_LR_MAX ? HC_VGIC_LR_MAX : n;
}

// ICH_VTR_EL2 (GET_REGS, 1.12: the VMM derives ICC_CTLR_EL1's fields from
// it), or 0 where the system-register interface is not in use.
uint64_t arm64_hv_ich_vtr(void)
{
	if (!arm64_cpu.gic_sysregs || !(read_sysreg(SYSREG_ICC_SRE_EL2) & ICC_SRE_SRE))
		return 0;
	return read_sysreg(SYSREG_ICH_VTR_EL2);
}

// The virtual CPU interface secondaries get on this CPU: 3, 2 or 0 (none).
unsigned arm64_vgic_kind(void)
{
	if (arm64_cpu.gic_sysregs)
		return v3_lr_count() ? 3 : 0;
	return arm64_vgic_v2_lr_count() ? 2 : 0;
}

unsigned arm64_vgic_lr_count(void)
{
	return arm64_cpu.gic_sysregs ? v3_lr_count() : arm64_vgic_v2_lr_count();
}

// Active-priority registers per group: 32 priorities each, 2^(PRIbits) in all.
static unsigned apr_count(void)
{
	unsigned bits = ICH_VTR_PRIBITS(read_sysreg(SYSREG_ICH_VTR_EL2));

	return bits <= 5 ? 1 : 1u << (bits - 5);
}

// ---- the run page ----------------------------------------------------------------------

// The vINTID of a GICv3 lr: group 1 only, below the special INTIDs.
static bool v3_vintid_ok(uint64_t lr)
{
	return (lr & HC_VGIC_LR_GROUP1) && (lr & HC_VGIC_LR_VINTID_MASK) < INTID_SPECIAL;
}

// GICv2 (ABI 1.7): group 0 allowed, 10 bits of INTID, and bits 12:10 only as
// an SGI's source, never with HW.
static bool v2_vintid_ok(uint64_t lr)
{
	uint64_t vintid = lr & HC_VGIC_LR_VINTID_MASK, src = vintid >> HC_VGIC_V2_SGI_SRC_SHIFT;
	unsigned id = (unsigned)vintid & 0x3ff;

	if (src > 7 || id >= INTID_SPECIAL)
		return false;
	return !src || (id < 16 && !(lr & HC_VGIC_LR_HW));
}

static bool lr_ok(uint64_t lr, bool v2)
{
	if ((lr & LR_RES0) || !(v2 ? v2_vintid_ok(lr) : v3_vintid_ok(lr)))
		return false;
	if (lr & HC_VGIC_LR_HW) // only the virtual timer is ever a physical one
		return LR_PINTID(lr) == PPI_VIRT_TIMER;
	return !(lr & LR_EOI_RES0);
}

// GICv2: where the guest's CPU interface is (a whole 8 KiB in the IPA space).
static bool cpuif_ok(uint64_t ipa)
{
	return !(ipa & 0xfff) && ipa + HC_VGIC_V2_CPUIF_SIZE > ipa &&
	       ipa + HC_VGIC_V2_CPUIF_SIZE <= 1ull << arm64_hv_ipa_bits();
}

// One read of the VMM's part of the run page: checked = used.
int arm64_vgic_take(const struct hc_run *run, struct arm64_vgic_run *g)
{
	uint32_t flags = __atomic_load_n(&run->vgic.flags, __ATOMIC_RELAXED);
	uint8_t nr = __atomic_load_n(&run->vgic.nr_lr, __ATOMIC_RELAXED);

	*g = (struct arm64_vgic_run){.flags = flags};
	if (flags & ~(HC_VGIC_ON | HC_VGIC_NPIE | HC_VGIC_V2))
		return HC_E_INVAL;
	if (!(flags & HC_VGIC_ON))
		return nr || flags ? HC_E_INVAL : HC_OK;
	g->v2 = flags & HC_VGIC_V2;
	if (arm64_vgic_kind() != (g->v2 ? 2u : 3u)) // the form must be this CPU's
		return HC_E_INVAL;
	g->lr_max = arm64_vgic_lr_count();
	if (nr > g->lr_max)
		return HC_E_INVAL;
	if (g->v2) {
		g->cpuif_ipa = __atomic_load_n(&run->vgic.cpuif_ipa, __ATOMIC_RELAXED);
		if (!cpuif_ok(g->cpuif_ipa))
			return HC_E_INVAL;
	}
	g->nr = nr;
	for (unsigned i = 0; i < nr; i++) {
		g->lr[i] = __atomic_load_n(&run->vgic.lr[i], __ATOMIC_RELAXED);
		if (!lr_ok(g->lr[i], g->v2))
			return HC_E_INVAL;
		if ((g->lr[i] & HC_VGIC_LR_HW) && LR_STATE(g->lr[i]))
			g->vtimer_hw = true;
	}
	return HC_OK;
}

// ICH_HCR_EL2 for the run: the interface on, nothing trapped (the guest's
// SGIs trap through HCR_EL2.IMO regardless: hv_switch.c exits them).
uint64_t arm64_vgic_hcr(const struct arm64_vgic_run *g)
{
	return ICH_HCR_EN | ((g->flags & HC_VGIC_NPIE) ? ICH_HCR_NPIE : 0);
}

// ---- entry and exit ----------------------------------------------------------------------

#define CNTV_CTL_FIRING 5u // ENABLE and ISTATUS, IMASK clear

static void v3_load(const struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g)
{
	for (unsigned i = 0; i < g->lr_max; i++)
		lr_write(i, i < g->nr ? g->lr[i] : 0);
	write_sysreg(SYSREG_ICH_VMCR_EL2, s->vgic_vmcr);
	apr_load(s->vgic_ap0r, s->vgic_ap1r, apr_count());
	isb();
}

// After the secondary's EL1 timer registers (and on GICv3 its ICH_HCR_EL2)
// are loaded.
void arm64_vgic_load(const struct arm64_hv_vcpu *s, struct arm64_vgic_run *g)
{
	if (g->v2)
		arm64_vgic_v2_load(s, g);
	else
		v3_load(s, g);
	g->vtimer_held = g->vtimer_hw || (read_sysreg("cntv_ctl_el0") & 7) == CNTV_CTL_FIRING;
	if (g->vtimer_held)
		arm64_hv_ppi_set_active(PPI_VIRT_TIMER, true);
	arm64_hv_ppi_enable(arm64_hv_maint_intid());
}

static void v3_save(struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g, struct hc_run *run)
{
	for (unsigned i = 0; i < g->lr_max; i++) {
		uint64_t lr = lr_read(i);

		if (i < g->nr)
			run->vgic.lr[i] = lr;
		lr_write(i, 0);
	}
	s->vgic_vmcr = read_sysreg(SYSREG_ICH_VMCR_EL2);
	apr_save(s->vgic_ap0r, s->vgic_ap1r, apr_count());
	write_sysreg(SYSREG_ICH_HCR_EL2, 0);
	isb();
}

// Before the primary's controls come back: the state the guest left, into
// the run page and the vCPU; the list registers emptied (the maintenance
// condition with them) and the physical PPIs given back.
void arm64_vgic_save(struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g, struct hc_run *run)
{
	if (g->v2)
		arm64_vgic_v2_save(s, g, run);
	else
		v3_save(s, g, run);
	arm64_hv_ppi_disable(arm64_hv_maint_intid());
	if (g->vtimer_held)
		arm64_hv_ppi_set_active(PPI_VIRT_TIMER, false);
}
