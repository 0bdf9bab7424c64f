// SPDX-License-Identifier: Apache-2.0
//
// SET_REGS of a secondary vCPU: the state must be one VMRUN / VM entry
// accepts (AMD APM vol. 2 15.5.1 "VMRUN consistency checks"; Intel SDM vol. 3
// 27.3 "checks on the guest state"), else HC_E_INVAL and the vCPU keeps its
// old state. The control-register rules are cr_check.c's, applied to the new
// values as a whole (no transition: the state is loaded, not reached by
// instructions). EFER.SVME is the back end's business: the VMM may not set it.
#include "arch/x86/cpu.h"
#include "arch/x86/cr_check.h"
#include "arch/x86/hv.h"

#define CR4_PCIDE  (1ull << 17)
// CR4 bits of features every x86-64 CPU has (VME, PVI, TSD, DE, PSE, PAE,
// MCE, PGE, OSFXSR): a loaded state may have them whatever the vCPU's CPUID
// says, as KVM's SET_SREGS allows them (its CR4 reserved bits follow CPUID
// only for later features). QEMU's TCG offers no VME in its CPUID and takes
// them at VMRUN all the same.
#define CR4_BASE_BITS 0x2ffull
#define EFER_HV_OK (EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE)
// RFLAGS: bits 63:22, 15, 5 and 3 are reserved (must be zero).
#define RFLAGS_RSVD (~0x3fffffull | (1ull << 15) | (1ull << 5) | (1ull << 3))

// The vCPU's CPUID for the state being loaded (its CR4, not the current one:
// outside a RUN the back end's live registers are not the vCPU's).
struct hv_leaf_ctx {
	struct vcpu *v;
	uint64_t cr4;
};

static void hv_leaf(void *ctx, uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	const struct hv_leaf_ctx *c = ctx;

	x86_hv_cpuid_cr4(c->v, c->cr4, leaf, sub, out);
}

static bool seg_ok(const struct hc_x86_seg *s)
{
	return s->attr <= 0xfff;
}

static bool segs_ok(const struct hc_regs_x86 *r, bool lma)
{
	const struct hc_x86_seg *all[] = {&r->es, &r->cs, &r->ss,   &r->ds,
					  &r->fs, &r->gs, &r->ldtr, &r->tr};

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!seg_ok(all[i]))
			return false;
	// 64-bit code segment: L and D together are reserved.
	if (lma && (r->cs.attr & X86_SEG_ATTR_L) && (r->cs.attr & X86_SEG_ATTR_D))
		return false;
	return r->gdt_limit <= 0xffff && r->idt_limit <= 0xffff;
}

// ABI 1.11's event fields (hc_regs_x86.flags .. pad_events): one event of a
// type VMRUN / VM entry injects with a vector that type allows (an NMI is
// vector 2, an exception 0..31 but 2; no error code on an interrupt or an
// NMI), KVM's two shadow bits, the NMI state's two bits, and zeros elsewhere.
// `nmi_ok`: the back end delivers NMIs (an NMI held is refused otherwise).
bool x86_hv_events_ok(const struct hc_regs_x86 *r, bool nmi_ok)
{
	const uint32_t known = HC_EVENT_VALID | HC_EVENT_TYPE_MASK | HC_EVENT_ERR | 0xffu;
	uint32_t type = r->event & HC_EVENT_TYPE_MASK, vector = r->event & 0xffu;
	bool err = r->event & HC_EVENT_ERR;

	for (unsigned i = 0; i < sizeof(r->pad_events); i++)
		if (r->pad_events[i])
			return false;
	if ((r->event & ~known) || (r->shadow & ~(HC_SHADOW_MOV_SS | HC_SHADOW_STI)) ||
	    (r->nmi & ~(HC_NMI_HELD | HC_NMI_BLOCKED)))
		return false;
	if ((r->nmi & HC_NMI_HELD) && !nmi_ok)
		return false;
	if (!err && r->event_error)
		return false;
	if (!(r->event & HC_EVENT_VALID))
		return r->event == 0;
	switch (type) {
	case HC_EVENT_EXTINT:
		return !err;
	case HC_EVENT_NMI:
		return vector == 2 && !err;
	case HC_EVENT_EXC:
		return vector < 32 && vector != 2;
	default:
		return false;
	}
}

bool x86_hv_regs_ok(struct vcpu *v, const struct hc_regs_x86 *r)
{
	struct hv_leaf_ctx ctx = {v, r->cr4};
	struct x86_cr_caps caps = x86_cr_caps_from(hv_leaf, &ctx);
	caps.cr4_ok |= CR4_BASE_BITS;
	bool lme_pg = (r->efer & EFER_LME) && (r->cr0 & CR0_PG);
	struct x86_cr_state st = {
	    .cr0 = r->cr0,
	    .cr3 = r->cr3,
	    .cr4 = r->cr4,
	    .efer = r->efer,
	    .cs_long = (r->efer & EFER_LMA) && (r->cs.attr & X86_SEG_ATTR_L),
	};

	if (r->rflags & RFLAGS_RSVD)
		return false;
	if (r->efer & ~(EFER_HV_OK & (caps.efer_ok | EFER_LMA)))
		return false;
	if (!!(r->efer & EFER_LMA) != lme_pg)
		return false; // LMA is LME && PG, as the CPU keeps it
	if (lme_pg && !(r->cr4 & CR4_PAE))
		return false;
	if ((r->cr4 & CR4_PCIDE) && !(r->efer & EFER_LMA))
		return false;
	return x86_cr0_ok(&st, &caps, r->cr0) && x86_cr3_ok(&st, &caps, r->cr3) &&
	       x86_cr4_ok(&st, &caps, r->cr4) && segs_ok(r, r->efer & EFER_LMA);
}
