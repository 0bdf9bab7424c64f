// SPDX-License-Identifier: Apache-2.0
//
// VMCB contents of the SVM back end: intercepts and control fields, the
// guest state copied from the running CPU, and the state a STARTUP IPI
// gives. Offsets: AMD APM vol. 2, appendix B. The layout mirrors vmx/vmcs.c.
#include "arch/x86/cpu.h"
#include "arch/x86/host_env.h"
#include "arch/x86/svm/nested.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"
#include "core/mem.h"

void svm_vmsave(uint64_t pa)
{
	__asm__ volatile("vmsave %%rax" : : "a"(pa) : "memory");
}

void svm_vmcb_set_seg(void *vmcb, unsigned off, uint16_t sel, uint16_t attr, uint32_t limit,
		      uint64_t base)
{
	*vmcb16(vmcb, off) = sel;
	*vmcb16(vmcb, off + 2) = attr;
	*vmcb32(vmcb, off + 4) = limit;
	*vmcb64(vmcb, off + 8) = base;
}

// A code/data segment of the live CPU, from its GDT descriptor.
static void seg_from_gdt(void *vmcb, unsigned off, uint16_t sel, uint64_t gdt, uint16_t gdt_limit)
{
	uint64_t d = 0;

	if ((sel & ~7u) && (sel | 7u) <= gdt_limit && !(sel & 4))
		memcpy(&d, (const void *)(uintptr_t)(gdt + (sel & ~7u)), 8);
	uint16_t attr = (uint16_t)(((d >> 40) & 0xff) | (((d >> 52) & 0xf) << 8));
	uint32_t limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
	if (d & (1ull << 55))
		limit = (limit << 12) | 0xfff;
	uint64_t base = ((d >> 16) & 0xffffff) | (((d >> 56) & 0xff) << 24);
	svm_vmcb_set_seg(vmcb, off, sel, attr, limit, base);
}

void svm_vmcb_control(struct svm_cpu *c, void *vmcb)
{
	// CR0 writes: checked by cr_check.c (QEMU's CPU takes NW without CD or
	// bits 63:32 in guest mode, and the next VMRUN then fails).
	*vmcb32(vmcb, VMCB_INTERCEPT_CR) = INT0_WRITE_CR0;
	// SMIs: taken in host mode after their #VMEXIT (exit.c, svm_take_host_smi).
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) =
	    INT3_NMI | INT3_SMI | INT3_CPUID | INT3_INVLPGA | INT3_IOIO | INT3_MSR | INT3_SHUTDOWN;
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC2) = INT4_VMRUN | INT4_VMMCALL | INT4_VMLOAD |
					      INT4_VMSAVE | INT4_STGI | INT4_CLGI | INT4_SKINIT |
					      INT4_MWAIT | INT4_MWAIT_COND | INT4_XSETBV;
	*vmcb64(vmcb, VMCB_IOPM_PA) = svm_host.iopm_pa;
	*vmcb64(vmcb, VMCB_MSRPM_PA) = svm_host.msrpm_pa;
	*vmcb32(vmcb, VMCB_ASID) = SVM_ASID;
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
	*vmcb64(vmcb, VMCB_NP_ENABLE) = 1;
	*vmcb64(vmcb, VMCB_N_CR3) = svm_host.npt_root;
}

// The guest state of the calling CPU (all but RIP, RSP, RFLAGS, RAX, which
// svm_launch sets).
void svm_vmcb_guest_from_live(struct svm_cpu *c, void *vmcb)
{
	uint16_t gl, il;
	uint64_t gb, ib;

	read_gdtr(&gb, &gl);
	read_idtr(&ib, &il);
	svm_vmsave(c->vmcb_pa); // FS, GS, TR, LDTR, KernelGSBase, STAR/LSTAR/CSTAR/SFMASK, SYSENTER
	seg_from_gdt(vmcb, VMCB_CS, read_cs(), gb, gl);
	seg_from_gdt(vmcb, VMCB_SS, read_ss(), gb, gl);
	seg_from_gdt(vmcb, VMCB_DS, read_ds(), gb, gl);
	seg_from_gdt(vmcb, VMCB_ES, read_es(), gb, gl);
	if (!*vmcb16(vmcb, VMCB_TR + 2)) // a null TR: give it a busy 64-bit TSS type
		*vmcb16(vmcb, VMCB_TR + 2) = 0x8b;
	svm_vmcb_set_seg(vmcb, VMCB_GDTR, 0, 0, gl, gb);
	svm_vmcb_set_seg(vmcb, VMCB_IDTR, 0, 0, il, ib);
	*vmcb64(vmcb, VMCB_CR0) = read_cr0();
	*vmcb64(vmcb, VMCB_CR2) = read_cr2();
	*vmcb64(vmcb, VMCB_CR3) = read_cr3();
	*vmcb64(vmcb, VMCB_CR4) = read_cr4();
	*vmcb64(vmcb, VMCB_EFER) = rdmsr(MSR_EFER); // SVME already set
	*vmcb64(vmcb, VMCB_DR6) = read_dr6();
	*vmcb64(vmcb, VMCB_DR7) = read_dr7();
	*vmcb64(vmcb, VMCB_G_PAT) = rdmsr(MSR_IA32_PAT);
	*vmcb8(vmcb, VMCB_CPL) = 0;
}

void svm_vmcb_save_state(struct svm_cpu *c)
{
	if (c->vmsaved)
		return;
	svm_vmsave(c->vmcb_pa);
	c->vmsaved = true;
}

// The state after INIT: real mode at cs_sel:rip (CS base cs_base), the
// GPRs zero but RDX (family/model/stepping, as after RESET/INIT).
void svm_vmcb_init_state(void *vmcb, struct vcpu *v, uint16_t cs_sel, uint64_t cs_base,
			 uint64_t rip)
{
	static const unsigned data_segs[] = {VMCB_DS, VMCB_ES, VMCB_SS, VMCB_FS, VMCB_GS};

	svm_vmcb_set_seg(vmcb, VMCB_CS, cs_sel, 0x9b, 0xffff, cs_base);
	for (unsigned i = 0; i < sizeof(data_segs) / sizeof(data_segs[0]); i++)
		svm_vmcb_set_seg(vmcb, data_segs[i], 0, 0x93, 0xffff, 0);
	svm_vmcb_set_seg(vmcb, VMCB_GDTR, 0, 0, 0xffff, 0);
	svm_vmcb_set_seg(vmcb, VMCB_IDTR, 0, 0, 0xffff, 0);
	svm_vmcb_set_seg(vmcb, VMCB_LDTR, 0, 0x82, 0xffff, 0);
	svm_vmcb_set_seg(vmcb, VMCB_TR, 0, 0x8b, 0xffff, 0);
	*vmcb64(vmcb, VMCB_CR0) = 0x60000010;
	*vmcb64(vmcb, VMCB_CR2) = 0;
	*vmcb64(vmcb, VMCB_CR3) = 0;
	*vmcb64(vmcb, VMCB_CR4) = 0;
	*vmcb64(vmcb, VMCB_EFER) = EFER_SVME;
	*vmcb64(vmcb, VMCB_DR6) = 0xffff0ff0;
	*vmcb64(vmcb, VMCB_DR7) = 0x400;
	*vmcb64(vmcb, VMCB_RFLAGS) = 2;
	*vmcb64(vmcb, VMCB_RIP) = 0; // v->arch.rip goes there at the next entry
	*vmcb64(vmcb, VMCB_RSP) = 0;
	*vmcb64(vmcb, VMCB_RAX) = 0;
	*vmcb64(vmcb, VMCB_G_PAT) = 0x0007040600070406ull;
	// STAR, LSTAR, CSTAR, SFMASK, KernelGSBase, SYSENTER_CS/ESP/EIP: 0x600-0x63f.
	memset(vmcb64(vmcb, VMCB_STAR), 0, VMCB_SYSENTER_EIP + 8 - VMCB_STAR);
	*vmcb8(vmcb, VMCB_CPL) = 0;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	*vmcb64(vmcb, VMCB_INT_SHADOW) = 0;
	memset(v->arch.gpr, 0, sizeof(v->arch.gpr));
	v->arch.gpr[X86_RDX] = cpuid(1, 0).eax;
	v->arch.rip = rip;
}

// The state a STARTUP IPI gives an AP (after INIT): real mode at vector << 12.
void svm_vmcb_sipi_reset(struct svm_cpu *c, uint8_t vector)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;

	svm_vmcb_init_state(vmcb, v, (uint16_t)(vector << 8), (uint64_t)vector << 12, 0);
	*vmcb32(vmcb, VMCB_INTERCEPT_EXC) &= ~(1u << 1); // no NMI step in flight
	x86_nmi_reset(&v->arch.nmi);
	svm_nested_reset(c); // EFER.SVME clear, GIF set (V_INTR_MASKING off)
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
	c->vmload = 1; // FS, GS, TR, LDTR and the MSRs init_state wrote
	log_debug("svm: vcpu%u starts at %04x:0000 (SIPI)\n", v->index, (unsigned)vector << 8);
}

bool svm_vmcb_holds_host_state(const void *vmcb)
{
	uint64_t rip = *vmcb64((void *)vmcb, VMCB_RIP);

	return region_overlaps(&x86_primary.hidden, rip, 1) &&
	       *vmcb16((void *)vmcb, VMCB_CS) == X86_HOST_CS &&
	       *vmcb64((void *)vmcb, VMCB_CR3) == read_cr3();
}
