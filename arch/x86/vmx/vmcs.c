// SPDX-License-Identifier: Apache-2.0
//
// Filling a VMCS: controls (caps.c), Slat's host state (host.c) and a guest
// state that is a copy of the running CPU, so that VMLAUNCH continues the
// firmware exactly where it called Slat (rip/rsp given by the caller).
// Segment attributes come from the descriptors in the live GDT (SDM vol. 3,
// 24.4.1: access rights = descriptor bits 47:40 and 55:52 at bits 7:0 and
// 15:12; bit 16 = unusable).
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

struct seg {
	uint16_t sel;
	uint64_t base;
	uint32_t limit, ar;
};

static struct seg seg_from_gdt(uint64_t gdt, uint16_t gdt_limit, uint16_t sel, bool system)
{
	struct seg s = {.sel = sel, .ar = VMX_AR_UNUSABLE};

	if ((sel & ~3u) == 0 || (sel & 4) || (sel | 7u) > gdt_limit)
		return s; // null, or in an LDT (never used by UEFI firmware)
	const uint8_t *p = (const uint8_t *)(uintptr_t)(gdt + (sel & ~7u));
	uint64_t d = 0;
	for (int i = 0; i < 8; i++)
		d |= (uint64_t)p[i] << (8 * i);
	s.base = ((d >> 16) & 0xffffff) | (((d >> 56) & 0xff) << 24);
	if (system) {
		uint32_t hi = 0;
		for (int i = 0; i < 4; i++)
			hi |= (uint32_t)p[8 + i] << (8 * i);
		s.base |= (uint64_t)hi << 32;
	}
	s.limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
	if (d & (1ull << 55))
		s.limit = (s.limit << 12) | 0xfff;
	s.ar = (uint32_t)((d >> 40) & 0xf0ff);
	if (!system)
		s.ar |= 1; // accessed: VM entry requires it of usable code/data segments
	if (!(s.ar & 0x80))
		s.ar = VMX_AR_UNUSABLE;
	return s;
}

static bool put_seg(enum vmx_seg i, struct seg s)
{
	bool ok = true;

	W(VMCS_GUEST_ES_SEL + 2 * i, s.sel);
	W(VMCS_GUEST_ES_BASE + 2 * i, s.base);
	W(VMCS_GUEST_ES_LIMIT + 2 * i, s.limit);
	W(VMCS_GUEST_ES_AR + 2 * i, s.ar);
	return ok;
}

static bool guest_from_cpu(const struct vmx_pcpu *pc, uint64_t rip, uint64_t rsp)
{
	const struct vmx_config *c = &vmx_cfg;
	uint64_t gdt, idt;
	uint16_t gdt_limit, idt_limit;
	bool ok = true;

	read_gdtr(&gdt, &gdt_limit);
	read_idtr(&idt, &idt_limit);
	uint16_t sels[VMX_NSEG] = {read_es(), read_cs(), read_ss(),   read_ds(),
				   read_fs(), read_gs(), read_ldtr(), read_tr()};
	for (unsigned i = 0; i < VMX_NSEG; i++) {
		bool sys = i == VMX_LDTR || i == VMX_TR;
		struct seg s = seg_from_gdt(gdt, gdt_limit, sels[i], sys);
		if (i == VMX_FS)
			s.base = rdmsr(MSR_FS_BASE);
		if (i == VMX_GS)
			s.base = rdmsr(MSR_GS_BASE);
		if (i == VMX_TR && (s.ar & VMX_AR_UNUSABLE)) {
			// UEFI firmware runs without a TSS; VM entry needs a usable
			// busy 64-bit TSS in IA-32e mode.
			s = (struct seg){.sel = 0, .base = 0, .limit = 0xffff, .ar = 0x8b};
		}
		if (i == VMX_TR)
			s.ar |= 2; // busy
		ok = put_seg((enum vmx_seg)i, s) && ok;
	}
	uint64_t efer = rdmsr(MSR_EFER);
	uint64_t cr0 = read_cr0(), cr4 = read_cr4();

	W(VMCS_GUEST_GDTR_BASE, gdt);
	W(VMCS_GUEST_GDTR_LIMIT, gdt_limit);
	W(VMCS_GUEST_IDTR_BASE, idt);
	W(VMCS_GUEST_IDTR_LIMIT, idt_limit);
	W(VMCS_GUEST_CR0, cr0);
	W(VMCS_GUEST_CR3, read_cr3());
	W(VMCS_GUEST_CR4, cr4);
	// The guest sees its CR0 as it was and CR4 without VMXE.
	W(VMCS_CR0_SHADOW, pc->cr0_shadow);
	W(VMCS_CR4_SHADOW, cr4 & ~CR4_VMXE);
	W(VMCS_GUEST_DR7, read_dr7());
	W(VMCS_GUEST_RSP, rsp);
	W(VMCS_GUEST_RIP, rip);
	W(VMCS_GUEST_RFLAGS, 0x2);
	W(VMCS_GUEST_EFER, efer);
	W(VMCS_GUEST_PAT, rdmsr(MSR_IA32_PAT));
	W(VMCS_GUEST_DEBUGCTL, rdmsr(MSR_DEBUGCTL));
	W(VMCS_GUEST_SYSENTER_CS, rdmsr(MSR_SYSENTER_CS));
	W(VMCS_GUEST_SYSENTER_ESP, rdmsr(MSR_SYSENTER_ESP));
	W(VMCS_GUEST_SYSENTER_EIP, rdmsr(MSR_SYSENTER_EIP));
	W(VMCS_LINK_POINTER, ~0ull);
	W(VMCS_GUEST_INTERRUPTIBILITY, 0);
	W(VMCS_GUEST_ACTIVITY, 0);
	W(VMCS_GUEST_PENDING_DBG, 0);
	uint32_t entry = c->entry | (efer & EFER_LMA ? ENTRY_IA32E_GUEST : 0);
	W(VMCS_ENTRY_CTLS, entry);
	return ok;
}

static bool host_state(const struct vmx_pcpu *pc)
{
	const struct vmx_host *h = &vmx_host;
	bool ok = true;

	W(VMCS_HOST_CR0, read_cr0());
	W(VMCS_HOST_CR3, h->env.cr3);
	uint64_t cr4 = read_cr4();
	if (cpuid(1, 0).ecx & (1u << 26))
		cr4 |= CR4_OSXSAVE; // so that root operation can run XSETBV for the guest
	W(VMCS_HOST_CR4, cr4);
	W(VMCS_HOST_CS_SEL, X86_HOST_CS);
	W(VMCS_HOST_SS_SEL, X86_HOST_DS);
	W(VMCS_HOST_DS_SEL, X86_HOST_DS);
	W(VMCS_HOST_ES_SEL, X86_HOST_DS);
	W(VMCS_HOST_FS_SEL, X86_HOST_DS);
	W(VMCS_HOST_GS_SEL, X86_HOST_DS);
	W(VMCS_HOST_TR_SEL, X86_HOST_TSS);
	W(VMCS_HOST_FS_BASE, 0);
	W(VMCS_HOST_GS_BASE, 0);
	W(VMCS_HOST_TR_BASE, h->env.tss);
	W(VMCS_HOST_GDTR_BASE, h->env.gdt);
	W(VMCS_HOST_IDTR_BASE, h->env.idt);
	W(VMCS_HOST_SYSENTER_CS, 0);
	W(VMCS_HOST_SYSENTER_ESP, 0);
	W(VMCS_HOST_SYSENTER_EIP, 0);
	W(VMCS_HOST_PAT, rdmsr(MSR_IA32_PAT));
	W(VMCS_HOST_EFER, rdmsr(MSR_EFER));
	// HOST_RSP and HOST_RIP: written at each entry (vmx_enter_guest).
	return ok;
}

static bool controls(const struct vmx_pcpu *pc)
{
	const struct vmx_config *c = &vmx_cfg;
	const struct vmx_host *h = &vmx_host;
	bool ok = true;

	W(VMCS_PIN_CTLS, c->pin);
	W(VMCS_PROC_CTLS, c->proc);
	W(VMCS_PROC_CTLS2, c->proc2);
	W(VMCS_EXIT_CTLS, c->exit);
	W(VMCS_EXCEPTION_BITMAP, 0);
	W(VMCS_CR3_TARGET_COUNT, 0);
	W(VMCS_EXIT_MSR_STORE_N, 0);
	W(VMCS_EXIT_MSR_LOAD_N, 0);
	W(VMCS_ENTRY_MSR_LOAD_N, 0);
	W(VMCS_ENTRY_INTR_INFO, 0);
	W(VMCS_MSR_BITMAP, h->msr_bitmap);
	W(VMCS_IO_BITMAP_A, h->io_bitmap_a);
	W(VMCS_IO_BITMAP_B, h->io_bitmap_b);
	W(VMCS_CR0_MASK, c->cr0_mask);
	W(VMCS_CR4_MASK, c->cr4_mask);
	W(VMCS_EPT_POINTER, h->eptp);
	if (c->vpid)
		W(VMCS_VPID, VMX_VPID);
	return ok;
}

bool vmx_vmcs_setup(struct vmx_pcpu *pc, uint64_t rip, uint64_t rsp)
{
	if (!controls(pc) || !host_state(pc) || !guest_from_cpu(pc, rip, rsp)) {
		log_err("vmx: cpu %u: VMWRITE failed (VM-instruction error %llu)\n", pc->index,
			(unsigned long long)vmread(VMCS_INSN_ERROR));
		return false;
	}
	return true;
}

const char *vmx_insn_error_name(uint64_t err)
{
	switch (err) {
	case 7:
		return "invalid control fields";
	case 8:
		return "invalid host-state fields";
	case 12:
		return "unsupported VMCS component";
	case 26:
		return "VM entry with events blocked by MOV SS";
	default:
		return "see SDM vol. 3, 31.4";
	}
}
