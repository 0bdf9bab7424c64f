// SPDX-License-Identifier: Apache-2.0
//
// A secondary vCPU's architectural state in its VMCB (the SVM back end of
// arch/x86/hv.h, with svm/hv.c; a new vCPU starts in svm_vmcb_init_state's):
// SET_REGS and GET_REGS (VMCB <-> struct hc_regs_x86; the values checked by
// hv_regs.c), and the MSRs the VMCB holds. v->arch.gpr[] and rip hold the
// GPRs and RIP between RUNs; the VMCB's EFER always has SVME, which the VMM
// never sees.
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/svm/svm.h"
#include "core/mem.h"

#define MSR_STAR   0xc0000081u
#define MSR_LSTAR  0xc0000082u
#define MSR_CSTAR  0xc0000083u
#define MSR_SFMASK 0xc0000084u

static const unsigned seg_off[8] = {VMCB_ES, VMCB_CS, VMCB_SS,	 VMCB_DS,
				    VMCB_FS, VMCB_GS, VMCB_LDTR, VMCB_TR};

void svm_hv_set_state(struct vcpu *v, const struct hc_regs_x86 *r)
{
	void *vmcb = svm_vcpu_vmcb(v);
	const struct hc_x86_seg *segs[8] = {&r->es, &r->cs, &r->ss,   &r->ds,
					    &r->fs, &r->gs, &r->ldtr, &r->tr};

	for (unsigned i = 0; i < 8; i++)
		svm_vmcb_set_seg(vmcb, seg_off[i], segs[i]->sel, segs[i]->attr, segs[i]->limit,
				 segs[i]->base);
	svm_vmcb_set_seg(vmcb, VMCB_GDTR, 0, 0, r->gdt_limit, r->gdt_base);
	svm_vmcb_set_seg(vmcb, VMCB_IDTR, 0, 0, r->idt_limit, r->idt_base);
	*vmcb64(vmcb, VMCB_CR0) = r->cr0;
	*vmcb64(vmcb, VMCB_CR2) = r->cr2;
	*vmcb64(vmcb, VMCB_CR3) = r->cr3;
	*vmcb64(vmcb, VMCB_CR4) = r->cr4;
	*vmcb64(vmcb, VMCB_EFER) = r->efer | EFER_SVME; // checked: the VMM's has no SVME
	*vmcb64(vmcb, VMCB_RFLAGS) = r->rflags | 2;
	// The CPL is SS.DPL in protected mode (3 in virtual-8086 mode), 0 in real mode.
	unsigned cpl = !(r->cr0 & CR0_PE)	  ? 0
		       : (r->rflags & (1u << 17)) ? 3
						  : (r->ss.attr >> 5) & 3;
	*vmcb8(vmcb, VMCB_CPL) = (uint8_t)cpl;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	*vmcb64(vmcb, VMCB_INT_SHADOW) = 0;
	memcpy(v->arch.gpr, r->gpr, sizeof(v->arch.gpr));
	v->arch.rip = r->rip;
}

void svm_hv_get_state(struct vcpu *v, struct hc_regs_x86 *r)
{
	void *vmcb = svm_vcpu_vmcb(v);
	struct hc_x86_seg *segs[8] = {&r->es, &r->cs, &r->ss,	&r->ds,
				      &r->fs, &r->gs, &r->ldtr, &r->tr};

	for (unsigned i = 0; i < 8; i++) {
		segs[i]->sel = *vmcb16(vmcb, seg_off[i]);
		segs[i]->attr = *vmcb16(vmcb, seg_off[i] + 2);
		segs[i]->limit = *vmcb32(vmcb, seg_off[i] + 4);
		segs[i]->base = *vmcb64(vmcb, seg_off[i] + 8);
	}
	r->gdt_limit = *vmcb32(vmcb, VMCB_GDTR + 4);
	r->gdt_base = *vmcb64(vmcb, VMCB_GDTR + 8);
	r->idt_limit = *vmcb32(vmcb, VMCB_IDTR + 4);
	r->idt_base = *vmcb64(vmcb, VMCB_IDTR + 8);
	r->cr0 = *vmcb64(vmcb, VMCB_CR0);
	r->cr2 = *vmcb64(vmcb, VMCB_CR2);
	r->cr3 = *vmcb64(vmcb, VMCB_CR3);
	r->cr4 = *vmcb64(vmcb, VMCB_CR4);
	r->efer = *vmcb64(vmcb, VMCB_EFER) & ~EFER_SVME;
	r->rflags = *vmcb64(vmcb, VMCB_RFLAGS);
	memcpy(r->gpr, v->arch.gpr, sizeof(r->gpr));
	r->rip = v->arch.rip;
}

// ---- ABI 1.11: the event state the VMCB keeps ------------------------------------------
// The interrupt shadow is one bit (INT_SHADOW bit 0, STI and MOV SS alike:
// both of KVM's bits read back, as KVM's SVM reports it). An exception Slat
// queued in EVENTINJ (#UD, #GP) before a RUN ended without entering is the
// event when no interrupted delivery is kept.
void svm_hv_get_events(struct vcpu *v, struct hc_regs_x86 *r)
{
	void *vmcb = svm_vcpu_vmcb(v);
	uint64_t inj = *vmcb64(vmcb, VMCB_EVENTINJ);

	r->shadow = (*vmcb64(vmcb, VMCB_INT_SHADOW) & 1) ? HC_SHADOW_MOV_SS | HC_SHADOW_STI : 0;
	if (!(r->event & HC_EVENT_VALID) && (inj & EVENTINJ_VALID)) {
		r->event =
		    (uint32_t)inj & (HC_EVENT_VALID | HC_EVENT_TYPE_MASK | HC_EVENT_ERR | 0xffu);
		r->event_error = (r->event & HC_EVENT_ERR) ? (uint32_t)(inj >> 32) : 0;
	}
}

// set_state cleared EVENTINJ and the shadow; the NMI blocking is nmi.c's.
void svm_hv_set_events(struct vcpu *v, const struct hc_regs_x86 *r)
{
	*vmcb64(svm_vcpu_vmcb(v), VMCB_INT_SHADOW) = r->shadow ? 1 : 0;
}

// ---- MSRs the VMCB holds (x86_hv_ops.msr, msr_stopped) ---------------------------------
static int msr_offset(uint32_t msr)
{
	switch (msr) {
	case MSR_IA32_PAT:
		return VMCB_G_PAT;
	case MSR_SYSENTER_CS:
		return VMCB_SYSENTER_CS;
	case MSR_SYSENTER_ESP:
		return VMCB_SYSENTER_ESP;
	case MSR_SYSENTER_EIP:
		return VMCB_SYSENTER_EIP;
	case MSR_STAR:
		return VMCB_STAR;
	case MSR_LSTAR:
		return VMCB_LSTAR;
	case MSR_CSTAR:
		return VMCB_CSTAR;
	case MSR_SFMASK:
		return VMCB_SFMASK;
	case MSR_FS_BASE:
		return VMCB_FS + 8;
	case MSR_GS_BASE:
		return VMCB_GS + 8;
	case MSR_KERNEL_GS_BASE:
		return VMCB_KGSBASE;
	default:
		return -1;
	}
}

bool svm_hv_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val)
{
	void *vmcb = svm_vcpu_vmcb(v);

	if (msr == MSR_EFER) {
		uint64_t cur = *vmcb64(vmcb, VMCB_EFER);
		if (!write)
			*val = cur & ~EFER_SVME;
		else // checked by the policy; LMA stays the CPU's
			*vmcb64(vmcb, VMCB_EFER) =
			    (*val & ~EFER_LMA) | (cur & EFER_LMA) | EFER_SVME;
		return true;
	}
	int off = msr_offset(msr);
	if (off < 0)
		return false;
	if (!write) {
		*val = *vmcb64(vmcb, (unsigned)off);
		return true;
	}
	if (msr == MSR_IA32_PAT && !x86_pat_ok(*val))
		return false;
	if (msr != MSR_IA32_PAT && msr != MSR_STAR && msr != MSR_SFMASK && msr != MSR_SYSENTER_CS &&
	    !x86_canonical(*val))
		return false;
	*vmcb64(vmcb, (unsigned)off) = *val;
	return true;
}
