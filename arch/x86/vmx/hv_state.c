// SPDX-License-Identifier: Apache-2.0
//
// Where a secondary vCPU's state lives on VT-x (vmx/hv.c runs it): between
// RUNs in its state page (struct vmx_hv_state, a deposited page), during a
// RUN in its VMCS and, for CR2 and the MSRs VT-x does not switch, in the
// CPU itself. This file moves it between those places and answers SET_REGS,
// GET_REGS and the MSR accesses wherever the state is at the time. The
// caller keeps the invariant that the vCPU's VMCS is current when one of the
// *_vmcs functions or vmx_hv_msr runs (between x86_hv_ops.begin and end).
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/vmx/vmx.h"
#include "core/mem.h"

// The guest state of a vCPU between RUNs (its state page).
struct vmx_hv_state {
	struct hc_regs_x86 r;
	uint64_t pat, sysenter_cs, sysenter_esp, sysenter_eip, dr7;
	uint32_t interruptibility;
	uint64_t msrs[5]; // switched_msrs[]: VM entry and exit leave them alone
};

// MSRs VT-x does not switch and a guest can reach (SWAPGS, SYSCALL): the
// primary's are saved and the vCPU's loaded for a RUN, live while it runs.
static const uint32_t switched_msrs[5] = {MSR_KERNEL_GS_BASE, 0xc0000081u /* STAR */,
					  0xc0000082u /* LSTAR */, 0xc0000083u /* CSTAR */,
					  0xc0000084u /* SFMASK */};
_Static_assert(sizeof(struct vmx_hv_state) <= 4096, "one page");

static struct vmx_hv_state *state_of(struct vcpu *v)
{
	return (struct vmx_hv_state *)(uintptr_t)v->arch.hv.state_pa;
}

// ---- state page <-> VMCS ------------------------------------------------------------
static uint32_t ar_of(uint16_t attr)
{
	uint32_t ar = (attr & 0xff) | ((uint32_t)(attr >> 8) & 0xf) << 12;

	return (attr & 0x80) ? ar : VMX_AR_UNUSABLE;
}

static const struct hc_x86_seg *seg_in(const struct hc_regs_x86 *r, unsigned i)
{
	const struct hc_x86_seg *all[VMX_NSEG] = {&r->es, &r->cs, &r->ss,   &r->ds,
						  &r->fs, &r->gs, &r->ldtr, &r->tr};
	return all[i];
}

bool vmx_hv_state_to_vmcs(struct vcpu *v)
{
	const struct vmx_hv_state *s = state_of(v);
	const struct hc_regs_x86 *r = &s->r;
	const struct vmx_config *c = &vmx_cfg;
	bool ok = true;

	for (unsigned i = 0; i < VMX_NSEG; i++) {
		const struct hc_x86_seg *g = seg_in(r, i);
		uint32_t ar = ar_of(g->attr);
		if ((i == VMX_CS || i == VMX_TR) && (ar & VMX_AR_UNUSABLE))
			ar &= ~VMX_AR_UNUSABLE; // must be usable: VM entry checks the rest
		W(VMCS_GUEST_ES_SEL + 2 * i, g->sel);
		W(VMCS_GUEST_ES_BASE + 2 * i, g->base);
		W(VMCS_GUEST_ES_LIMIT + 2 * i, g->limit);
		W(VMCS_GUEST_ES_AR + 2 * i, ar);
	}
	W(VMCS_GUEST_GDTR_BASE, r->gdt_base);
	W(VMCS_GUEST_GDTR_LIMIT, r->gdt_limit);
	W(VMCS_GUEST_IDTR_BASE, r->idt_base);
	W(VMCS_GUEST_IDTR_LIMIT, r->idt_limit);
	// The CPU's fixed bits go into the real registers; the guest reads its
	// own values through the shadows.
	uint64_t cr0 = (r->cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1;
	W(VMCS_GUEST_CR0, cr0);
	W(VMCS_CR0_SHADOW, r->cr0);
	W(VMCS_GUEST_CR3, r->cr3);
	W(VMCS_GUEST_CR4, (r->cr4 | c->cr4_fixed0) & c->cr4_fixed1);
	W(VMCS_CR4_SHADOW, r->cr4);
	W(VMCS_GUEST_DR7, s->dr7);
	W(VMCS_GUEST_RFLAGS, r->rflags | 2);
	W(VMCS_GUEST_EFER, r->efer);
	W(VMCS_GUEST_PAT, s->pat);
	W(VMCS_GUEST_DEBUGCTL, 0);
	W(VMCS_GUEST_SYSENTER_CS, s->sysenter_cs);
	W(VMCS_GUEST_SYSENTER_ESP, s->sysenter_esp);
	W(VMCS_GUEST_SYSENTER_EIP, s->sysenter_eip);
	W(VMCS_LINK_POINTER, ~0ull);
	W(VMCS_GUEST_INTERRUPTIBILITY, s->interruptibility);
	W(VMCS_GUEST_ACTIVITY, 0);
	W(VMCS_GUEST_PENDING_DBG, 0);
	W(VMCS_ENTRY_CTLS, c->entry | (r->efer & EFER_LMA ? ENTRY_IA32E_GUEST : 0));
	return ok;
}

void vmx_hv_state_from_vmcs(struct vcpu *v)
{
	struct vmx_hv_state *s = state_of(v);
	struct hc_regs_x86 *r = &s->r;

	for (unsigned i = 0; i < VMX_NSEG; i++) {
		struct hc_x86_seg *g = (struct hc_x86_seg *)seg_in(r, i);
		g->sel = (uint16_t)vmread(VMCS_GUEST_ES_SEL + 2 * i);
		g->base = vmread(VMCS_GUEST_ES_BASE + 2 * i);
		g->limit = (uint32_t)vmread(VMCS_GUEST_ES_LIMIT + 2 * i);
		g->attr = vmx_attr_of((uint32_t)vmread(VMCS_GUEST_ES_AR + 2 * i));
	}
	r->gdt_base = vmread(VMCS_GUEST_GDTR_BASE);
	r->gdt_limit = (uint32_t)vmread(VMCS_GUEST_GDTR_LIMIT);
	r->idt_base = vmread(VMCS_GUEST_IDTR_BASE);
	r->idt_limit = (uint32_t)vmread(VMCS_GUEST_IDTR_LIMIT);
	r->cr0 = vmx_vcpu_ops.read_cr(v, 0); // the guest's view (owned bits: shadow)
	r->cr3 = vmread(VMCS_GUEST_CR3);
	r->cr4 = vmx_vcpu_ops.read_cr(v, 4);
	r->rflags = vmread(VMCS_GUEST_RFLAGS);
	r->efer = vmread(VMCS_GUEST_EFER);
	s->pat = vmread(VMCS_GUEST_PAT);
	s->dr7 = vmread(VMCS_GUEST_DR7);
	s->sysenter_cs = vmread(VMCS_GUEST_SYSENTER_CS);
	s->sysenter_esp = vmread(VMCS_GUEST_SYSENTER_ESP);
	s->sysenter_eip = vmread(VMCS_GUEST_SYSENTER_EIP);
	s->interruptibility = (uint32_t)vmread(VMCS_GUEST_INTERRUPTIBILITY);
}

static void write_cr2(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr2" ::"r"(v) : "memory");
}

// The primary's CR2 and unswitched MSRs while a secondary runs (per CPU).
static struct {
	uint64_t cr2, msrs[5];
} saved[X86_MAX_CPUS];

void vmx_hv_swap_live(struct vcpu *caller, struct vcpu *v, bool in)
{
	struct vmx_hv_state *s = state_of(v);
	uint64_t *prim_cr2 = &saved[caller->index].cr2, *prim = saved[caller->index].msrs;
	// `in`: the primary's values go out, the vCPU's come in; else the reverse.
	uint64_t *cr2_out = in ? prim_cr2 : &s->r.cr2, cr2_in = in ? s->r.cr2 : *prim_cr2;
	uint64_t *out = in ? prim : s->msrs, *load = in ? s->msrs : prim;

	*cr2_out = read_cr2();
	write_cr2(cr2_in);
	for (unsigned i = 0; i < 5; i++) {
		out[i] = rdmsr(switched_msrs[i]);
		wrmsr(switched_msrs[i], load[i]);
	}
}

// ---- SET_REGS, GET_REGS, reset ------------------------------------------------------
void vmx_hv_reset_state(struct vcpu *v)
{
	struct vmx_hv_state *s = state_of(v);
	struct hc_regs_x86 *r = &s->r;
	const struct hc_x86_seg data = {.base = 0, .limit = 0xffff, .sel = 0, .attr = 0x93};

	memset(s, 0, sizeof(*s));
	r->cs = (struct hc_x86_seg){
	    .base = 0xffff0000ull, .limit = 0xffff, .sel = 0xf000, .attr = 0x9b};
	r->ds = r->es = r->ss = r->fs = r->gs = data;
	r->ldtr = (struct hc_x86_seg){.limit = 0xffff, .attr = 0x82};
	r->tr = (struct hc_x86_seg){.limit = 0xffff, .attr = 0x8b};
	r->gdt_limit = r->idt_limit = 0xffff;
	r->cr0 = 0x60000010;
	r->rflags = 2;
	r->rip = 0xfff0;
	r->gpr[X86_RDX] = cpuid(1, 0).eax;
	s->pat = 0x0007040600070406ull;
	s->dr7 = 0x400;
	memcpy(v->arch.gpr, r->gpr, sizeof(v->arch.gpr));
	v->arch.rip = r->rip;
}

void vmx_hv_set_state(struct vcpu *v, const struct hc_regs_x86 *r)
{
	struct vmx_hv_state *s = state_of(v);

	s->r = *r;
	s->r.rflags |= 2;
	s->interruptibility = 0;
	memcpy(v->arch.gpr, r->gpr, sizeof(v->arch.gpr));
	v->arch.rip = r->rip;
}

void vmx_hv_get_state(struct vcpu *v, struct hc_regs_x86 *r)
{
	*r = state_of(v)->r;
	memcpy(r->gpr, v->arch.gpr, sizeof(r->gpr));
	r->rip = v->arch.rip;
}

// ---- ABI 1.11: the event state the state page keeps -----------------------------------
// The interruptibility state between RUNs: STI and MOV SS blocking (KVM's
// two shadow bits), and with virtual NMIs the guest's NMI blocking (bit 3),
// which the shared state (v->arch.nmi) takes from it at each entry. STI
// blocking with RFLAGS.IF clear fails VM entry (SDM 27.3.1.5): dropped.
void vmx_hv_get_events(struct vcpu *v, struct hc_regs_x86 *r)
{
	uint32_t intr = state_of(v)->interruptibility;

	r->shadow = (intr & INTERRUPTIBILITY_STI ? HC_SHADOW_STI : 0) |
		    (intr & INTERRUPTIBILITY_MOV_SS ? HC_SHADOW_MOV_SS : 0);
}

void vmx_hv_set_events(struct vcpu *v, const struct hc_regs_x86 *r)
{
	struct vmx_hv_state *s = state_of(v);
	uint32_t intr = 0;

	if ((r->shadow & HC_SHADOW_STI) && (r->rflags & RFLAGS_IF))
		intr |= INTERRUPTIBILITY_STI;
	else if (r->shadow & HC_SHADOW_MOV_SS)
		intr |= INTERRUPTIBILITY_MOV_SS;
	if (vmx_hv.vnmi && (r->nmi & HC_NMI_BLOCKED))
		intr |= INTERRUPTIBILITY_NMI;
	s->interruptibility = intr;
}

// ---- MSRs the VMCS holds ---------------------------------------------------------------
// A write's value check, the same inside and outside a RUN.
static bool msr_value_ok(uint32_t msr, uint64_t val)
{
	switch (msr) {
	case MSR_IA32_PAT:
		return x86_pat_ok(val);
	case MSR_EFER:	      // checked by the policy
	case MSR_SYSENTER_CS: // a selector
	case 0xc0000081u:     // STAR: selectors and a 32-bit EIP
	case 0xc0000084u:     // SFMASK: a flags mask
		return true;
	default:
		return x86_canonical(val);
	}
}

static int switched_index(uint32_t msr)
{
	for (unsigned i = 0; i < 5; i++)
		if (msr == switched_msrs[i])
			return (int)i;
	return -1;
}

// Inside a RUN: the current VMCS's fields and the live switched MSRs.
bool vmx_hv_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val)
{
	uint64_t field;

	if (write && !msr_value_ok(msr, *val))
		return false;
	switch (msr) {
	case MSR_EFER:
		if (write) // LMA stays the CPU's
			*val = (*val & ~EFER_LMA) | (vmread(VMCS_GUEST_EFER) & EFER_LMA);
		field = VMCS_GUEST_EFER;
		break;
	case MSR_IA32_PAT:
		field = VMCS_GUEST_PAT;
		break;
	case MSR_SYSENTER_CS:
		field = VMCS_GUEST_SYSENTER_CS;
		break;
	case MSR_SYSENTER_ESP:
		field = VMCS_GUEST_SYSENTER_ESP;
		break;
	case MSR_SYSENTER_EIP:
		field = VMCS_GUEST_SYSENTER_EIP;
		break;
	case MSR_FS_BASE:
		field = VMCS_GUEST_ES_BASE + 2 * VMX_FS;
		break;
	case MSR_GS_BASE:
		field = VMCS_GUEST_ES_BASE + 2 * VMX_GS;
		break;
	default:
		if (switched_index(msr) < 0)
			return false;
		if (write) // live while the vCPU runs (vmx_hv_swap_live)
			wrmsr(msr, *val);
		else
			*val = rdmsr(msr);
		return true;
	}
	if (!write) {
		*val = vmread(field);
		return true;
	}
	return vmwrite(field, *val);
}

// Between RUNs: the state page the next RUN loads (never the current VMCS
// or the live MSRs, which are the primary's then). No EFER write.
static uint64_t *stopped_msr(struct vmx_hv_state *s, uint32_t msr)
{
	int i = switched_index(msr);

	switch (msr) {
	case MSR_EFER:
		return &s->r.efer;
	case MSR_IA32_PAT:
		return &s->pat;
	case MSR_SYSENTER_CS:
		return &s->sysenter_cs;
	case MSR_SYSENTER_ESP:
		return &s->sysenter_esp;
	case MSR_SYSENTER_EIP:
		return &s->sysenter_eip;
	case MSR_FS_BASE:
		return &s->r.fs.base;
	case MSR_GS_BASE:
		return &s->r.gs.base;
	default:
		return i < 0 ? NULL : &s->msrs[i];
	}
}

bool vmx_hv_msr_stopped(struct vcpu *v, uint32_t msr, bool write, uint64_t *val)
{
	uint64_t *p = stopped_msr(state_of(v), msr);

	if (!p || (write && (msr == MSR_EFER || !msr_value_ok(msr, *val))))
		return false;
	if (write)
		*p = *val;
	else
		*val = *p;
	return true;
}
