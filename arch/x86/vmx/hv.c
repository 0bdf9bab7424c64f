// SPDX-License-Identifier: Apache-2.0
//
// The VT-x back end of secondary vCPUs (arch/x86/hv.h), the second
// implementation of struct x86_hv_ops next to svm/hv.c: a vCPU's life, the
// world switch of a RUN, its NMIs and interrupts. A vCPU has a VMCS and a
// state page (its guest state between RUNs: hv_state.c) in deposited pages;
// its operations are the primary's table, vmx_vcpu_ops (vcpu.c). A RUN
// makes the VMCS current only while it runs:
//
//   begin: (the extended state: arch_hv_run's, both vendors) VMPTRLD the
//          vCPU's VMCS (VMCLEARed at the end of the last RUN, on whatever CPU:
//          so it may move between CPUs) and write controls, host state (the
//          primary VMCS's, read before) and the guest state from the page;
//   enter: EPTP, flushes, one VMLAUNCH / VMRESUME (vmx_enter_guest, the
//          primary's entry too);
//   end:   guest state back to the page, VMCLEAR, VMPTRLD the primary's VMCS.
//
// Secondaries use VPID 2 (the primary 1). Intercepts: external interrupts
// and NMIs (pin-based), HLT, unconditional I/O, every MSR (an all-ones
// bitmap), CR0/CR4 bits the CPU fixes (CR access: HC_EXIT_INTERNAL).
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/hv.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"
#include "core/mem.h"

#define VMX_HV_VPID    2
#define PROC_UNCOND_IO (1u << 24)

struct vmx_hv_config vmx_hv;

// After an exit caused by an NMI (Slat's kick or the primary's NMI; the
// guest's own NMIs come by injection). The exit left NMIs blocked in root
// operation until an IRET. Without virtual NMIs the guest's "blocking by NMI"
// bit is the CPU's real NMI blocking while the guest runs, which no guest
// IRET lifts under NMI exiting, so every later kick would be held (Bochs
// records the exit's blocking there): it is cleared. With virtual NMIs the
// bit is the guest's own blocking (its NMI handler runs): it stays.
static void nmi_exit_unblock(void)
{
	x86_nmi_unblock();
	if (!vmx_hv.vnmi)
		vmwrite(VMCS_GUEST_INTERRUPTIBILITY,
			vmread(VMCS_GUEST_INTERRUPTIBILITY) & ~(uint64_t)INTERRUPTIBILITY_NMI);
}

static const uint64_t host_fields[] = {
    VMCS_HOST_ES_SEL,	 VMCS_HOST_CS_SEL,	VMCS_HOST_SS_SEL,	VMCS_HOST_DS_SEL,
    VMCS_HOST_FS_SEL,	 VMCS_HOST_GS_SEL,	VMCS_HOST_TR_SEL,	VMCS_HOST_PAT,
    VMCS_HOST_EFER,	 VMCS_HOST_SYSENTER_CS, VMCS_HOST_CR0,		VMCS_HOST_CR3,
    VMCS_HOST_CR4,	 VMCS_HOST_FS_BASE,	VMCS_HOST_GS_BASE,	VMCS_HOST_TR_BASE,
    VMCS_HOST_GDTR_BASE, VMCS_HOST_IDTR_BASE,	VMCS_HOST_SYSENTER_ESP, VMCS_HOST_SYSENTER_EIP,
};
#define N_HOST_FIELDS (sizeof(host_fields) / sizeof(host_fields[0]))

static bool controls(void)
{
	const struct vmx_config *c = &vmx_cfg;
	bool ok = true;

	W(VMCS_PIN_CTLS, vmx_hv.pin);
	W(VMCS_PROC_CTLS, vmx_hv.proc);
	W(VMCS_PROC_CTLS2, vmx_hv.proc2);
	W(VMCS_EXIT_CTLS, c->exit);
	W(VMCS_EXCEPTION_BITMAP, 0);
	W(VMCS_CR3_TARGET_COUNT, 0);
	W(VMCS_EXIT_MSR_STORE_N, 0);
	W(VMCS_EXIT_MSR_LOAD_N, 0);
	W(VMCS_ENTRY_MSR_LOAD_N, 0);
	W(VMCS_ENTRY_INTR_INFO, 0);
	W(VMCS_MSR_BITMAP, vmx_hv.msr_bitmap);
	W(VMCS_CR0_MASK, vmx_hv.cr0_mask);
	W(VMCS_CR4_MASK, vmx_hv.cr4_mask);
	if (vmx_hv.proc2 & PROC2_VPID)
		W(VMCS_VPID, VMX_HV_VPID);
	return ok;
}

// ---- vCPU life ------------------------------------------------------------------------
static int op_create(struct vcpu *v)
{
	uint64_t pages[3];
	unsigned n;

	for (n = 0; n < 3; n++) {
		pages[n] = hv_page_alloc(v->vm);
		if (!pages[n]) {
			while (n--)
				hv_page_free(v->vm, pages[n]);
			return HC_E_NOMEM;
		}
	}
	v->arch.hv.vmcb_pa = pages[0];
	v->arch.hv.state_pa = pages[1];
	v->arch.hv.fpu_pa = pages[2];
	*(uint32_t *)(uintptr_t)pages[0] = (uint32_t)(vmx_cfg.basic & 0x7fffffff); // revision
	x86_hv_fpu_init(pages[2]);
	vmx_clear(pages[0]); // launch state "clear" (never current anywhere yet)
	vmx_hv_reset_state(v);
	return HC_OK;
}

static void op_destroy(struct vcpu *v)
{
	uint64_t *pages[3] = {&v->arch.hv.vmcb_pa, &v->arch.hv.state_pa, &v->arch.hv.fpu_pa};

	for (unsigned i = 0; i < 3; i++) {
		if (*pages[i])
			hv_page_free(v->vm, *pages[i]);
		*pages[i] = 0;
	}
}

// ---- the world switch ---------------------------------------------------------------
// The vCPU's cached translations: EPT (its EPTP, or all) and VPID 2.
static void invalidate(uint64_t eptp)
{
	if (vmx_cfg.invept_single)
		vmx_invept(INVEPT_SINGLE, eptp);
	else
		vmx_invept(INVEPT_ALL, 0);
	if (vmx_hv.proc2 & PROC2_VPID) {
		if (vmx_cfg.invvpid_single)
			vmx_invvpid(INVVPID_SINGLE, VMX_HV_VPID, 0);
		else
			vmx_invvpid(INVVPID_ALL, 0, 0);
	}
}

static void op_begin(struct vcpu *caller, struct vcpu *v)
{
	uint64_t host[N_HOST_FIELDS];

	for (unsigned i = 0; i < N_HOST_FIELDS; i++)
		host[i] = vmread(host_fields[i]);
	vmx_hv_swap_live(caller, v, true);
	v->arch.hv.launched = false;
	v->arch.hv.fresh = true;
	// Never write into the primary's VMCS: without the vCPU's current, no entry.
	v->arch.hv.cb_bad = !vmx_ptrld(vmx_vmcs_of(v));
	if (v->arch.hv.cb_bad) {
		log_err("vmx: VMPTRLD of a secondary VMCS failed\n");
		return;
	}
	bool ok = controls();
	for (unsigned i = 0; i < N_HOST_FIELDS; i++)
		ok = vmwrite(host_fields[i], host[i]) && ok;
	ok = vmx_hv_state_to_vmcs(v) && ok;
	ok = vmwrite(VMCS_TSC_OFFSET, v->arch.hv.tsc_offset) && ok;
	if (!ok)
		log_err("vmx: secondary VMCS: VMWRITE failed (error %llu)\n",
			(unsigned long long)vmread(VMCS_INSN_ERROR));
}

static void op_end(struct vcpu *caller, struct vcpu *v)
{
	if (!v->arch.hv.cb_bad) {
		vmx_hv_state_from_vmcs(v);
		vmx_clear(vmx_vmcs_of(v));
	}
	vmx_hv_swap_live(caller, v, false);
	vmx_ptrld(vmx_vmcs_of(caller)); // the caller's exit handling goes on with it
}

// ---- the guest's NMIs (ABI 1.8) ------------------------------------------------------
// With virtual NMIs the CPU keeps the guest's NMI blocking itself (the
// interruptibility state's bit 3, set at an NMI's delivery and cleared by its
// handler's IRET): the shared state (arch/x86/nmi.c) takes it from there at
// each entry. A held NMI goes in through the entry's event slot when it is
// free and nothing blocks it (NMI, STI or MOV SS blocking: the SDM's entry
// checks); otherwise NMI-window exiting makes the CPU exit as soon as it
// could be delivered (X86_EXIT_NMI_WINDOW, the entry loop re-enters).
static bool op_nmi_ok(void)
{
	return vmx_hv.vnmi;
}

// Secondaries take the guest's NMIs only with virtual NMIs (op_nmi_ok);
// the plan is the primary's (vmx_nmi_apply).
static void nmi_apply(struct vcpu *v)
{
	if (vmx_hv.vnmi && !v->arch.hv.cb_bad)
		vmx_nmi_apply(&v->arch.nmi, true);
}

static void op_enter(struct vcpu *v, const struct hv_entry *en, struct x86_exit *e)
{
	uint64_t eptp = ept_eptp(en->root_pa, 4, vmx_hv.ept_ad);

	if (v->arch.hv.cb_bad) {
		*e = (struct x86_exit){.kind = X86_EXIT_BAD_STATE, .vendor = "vmx", .code = ~0u};
		return;
	}

	vmwrite(VMCS_EPT_POINTER, eptp);
	if (en->flush || v->arch.hv.fresh)
		invalidate(eptp);
	v->arch.hv.fresh = false;
	// An event whose delivery the last exit interrupted is delivered again,
	// unless the policy queued an exception of its own.
	vmx_event_redeliver(v->arch.hv.intinfo, v->arch.hv.intinfo_len);
	v->arch.hv.intinfo = 0;
	nmi_apply(v); // after the redelivery: it may take the slot
	vmwrite(VMCS_GUEST_RSP, v->arch.gpr[X86_RSP]);
	vmwrite(VMCS_GUEST_RIP, v->arch.rip);

	int failed = vmx_enter_guest(v->arch.gpr, v->arch.hv.launched);
	v->arch.hv.launched = v->arch.hv.launched || !failed;

	const struct vmx_exit_fields f = {
	    .reason = failed ? (1u << 31) : (uint32_t)vmread(VMCS_EXIT_REASON),
	    .qual = failed ? vmread(VMCS_INSN_ERROR) : vmread(VMCS_EXIT_QUAL),
	    .gpa = vmread(VMCS_GUEST_PHYS_ADDR),
	    .intr_info = (uint32_t)vmread(VMCS_EXIT_INTR_INFO),
	};
	vmx_decode_exit(&f, e);
	if (e->kind == X86_EXIT_NMI)
		nmi_exit_unblock();
	// An MMIO marker of the engine (W without R) is an EPT misconfiguration:
	// a SLAT fault at the address like any other (the engine answers MMIO).
	if (!failed && (f.reason & 0xffff) == VMX_EXIT_EPT_MISCONFIG) {
		e->kind = X86_EXIT_SLAT_VIOLATION;
		e->gpa = f.gpa;
		e->write = e->fetch = false;
	}
	v->arch.gpr[X86_RSP] = vmread(VMCS_GUEST_RSP);
	v->arch.rip = vmread(VMCS_GUEST_RIP);
	v->arch.hv.next_rip = 0;
	if (!failed && e->kind == X86_EXIT_IO)
		e->next_rip = v->arch.rip + vmread(VMCS_EXIT_INSN_LEN);
	v->arch.hv.next_rip = e->next_rip;
	// The EXITINTINFO layout both back ends keep: the error code in 63:32.
	v->arch.hv.intinfo = failed ? 0 : vmx_exit_intinfo();
	v->arch.hv.intinfo_len = failed ? 0 : (uint8_t)vmread(VMCS_EXIT_INSN_LEN);
	if (vmx_hv.vnmi && !failed) // the CPU's blocking, for the VMM's nmi_state
		v->arch.nmi.blocked = vmread(VMCS_GUEST_INTERRUPTIBILITY) & INTERRUPTIBILITY_NMI;
	vmwrite(VMCS_ENTRY_INTR_INFO, 0);
	v->arch.insn_done = false;
}

// ---- interrupt injection (ABI 1.4) ---------------------------------------------------
// Only with the vCPU's VMCS current (op_begin): otherwise never open, and
// nothing is written (the current VMCS would be the primary's).
static bool op_irq_open(struct vcpu *v)
{
	if (v->arch.hv.cb_bad)
		return false;
	return (vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF) &&
	       !(vmread(VMCS_GUEST_INTERRUPTIBILITY) & INTERRUPTIBILITY_SHADOW) &&
	       !(vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_VALID) &&
	       !(v->arch.hv.intinfo & VMX_INTR_VALID);
}

static void op_irq_inject(struct vcpu *v, uint8_t vector)
{
	if (!v->arch.hv.cb_bad)
		vmwrite(VMCS_ENTRY_INTR_INFO, vector | VMX_INTR_EXT | VMX_INTR_VALID);
}

// VM entry delivers the injected vector as part of the entry; a delivery an
// exit interrupted is re-injected from the IDT-vectoring information.
static bool op_irq_taken(struct vcpu *v)
{
	(void)v;
	return true;
}

static void op_irq_window(struct vcpu *v, bool on)
{
	if (v->arch.hv.cb_bad)
		return;
	uint64_t p = vmread(VMCS_PROC_CTLS);
	vmwrite(VMCS_PROC_CTLS, on ? p | PROC_INTR_WINDOW : p & ~PROC_INTR_WINDOW);
}

static struct x86_hv_ops vmx_hv_ops = {
    // .fmt: set by vmx_hv_init (EPT 1 GiB or not)
    .vcpu_ops = &vmx_vcpu_ops, // the primary's table: the VM record tells them apart
    .vcpu_create = op_create,
    .vcpu_destroy = op_destroy,
    .set_state = vmx_hv_set_state,
    .get_state = vmx_hv_get_state,
    .get_events = vmx_hv_get_events,
    .set_events = vmx_hv_set_events,
    .begin = op_begin,
    .end = op_end,
    .enter = op_enter,
    .msr = vmx_hv_msr,
    .msr_stopped = vmx_hv_msr_stopped,
    .kick = x86_hv_kick_primary,
    .irq_open = op_irq_open,
    .nmi_ok = op_nmi_ok,
    .irq_inject = op_irq_inject,
    .irq_window = op_irq_window,
    .irq_taken = op_irq_taken,
};

// ---- boot -----------------------------------------------------------------------------
bool vmx_hv_init(struct region *r, const struct slat_plan *plan)
{
	const struct vmx_config *c = &vmx_cfg;
	bool t = c->basic & (1ull << 55);

	vmx_hv_ops.fmt = c->ept_1g ? &s2_fmt_ept4 : &s2_fmt_ept4_2m; // as the primary's
	if (!x86_hv_fpu_setup(r, cpuid(1, 0).ecx & (1u << 26)))
		return false;
	uint64_t pin_cap = rdmsr(t ? MSR_VMX_TRUE_PINBASED : MSR_VMX_PINBASED);
	uint64_t proc_cap = rdmsr(t ? MSR_VMX_TRUE_PROCBASED : MSR_VMX_PROCBASED);
	uint32_t pin_want = PIN_EXT_INT_EXIT | PIN_NMI_EXIT;
	uint32_t proc_want = PROC_HLT_EXIT | PROC_UNCOND_IO | PROC_MSR_BITMAPS | PROC_SECONDARY |
			     PROC_MWAIT_EXIT | PROC_MONITOR_EXIT | PROC_TSC_OFFSET;
	vmx_hv.pin = (pin_want | (uint32_t)pin_cap) & (uint32_t)(pin_cap >> 32);
	vmx_hv.proc = (proc_want | (uint32_t)proc_cap) & (uint32_t)(proc_cap >> 32);
	vmx_hv.proc2 = c->proc2 & (PROC2_EPT | PROC2_UNRESTRICTED | PROC2_VPID);
	// Interrupt-window exiting is armed per entry (ABI 1.4's injection).
	if ((vmx_hv.pin & pin_want) != pin_want || (vmx_hv.proc & proc_want) != proc_want ||
	    !((proc_cap >> 32) & PROC_INTR_WINDOW)) {
		log_warn("vmx: controls for secondary VMs missing: none\n");
		return false;
	}
	vmx_hv.ept_ad = c->ept_vpid & (1ull << 21);
	// The guest's NMIs need virtual NMIs and NMI-window exiting (both or none).
	vmx_hv.vnmi = ((pin_cap >> 32) & PIN_VIRTUAL_NMI) && ((proc_cap >> 32) & PROC_NMI_WINDOW);
	if (vmx_hv.vnmi)
		vmx_hv.pin |= PIN_VIRTUAL_NMI;
	else
		log_info("vmx: no virtual NMIs: secondaries get no NMIs\n");
	// Owned bits: those the CPU fixes (PE and PG are free with unrestricted guest).
	vmx_hv.cr0_mask = ((c->cr0_fixed0 & ~(CR0_PE | CR0_PG)) | ~c->cr0_fixed1) & 0xffffffffull;
	vmx_hv.cr4_mask = (c->cr4_fixed0 | ~c->cr4_fixed1) & 0xffffffffull;
	vmx_hv.msr_bitmap = region_alloc(r, 1, 4096);
	if (!vmx_hv.msr_bitmap) {
		log_warn("vmx: no room in Slat's region for secondary VMs\n");
		return false;
	}
	memset((void *)(uintptr_t)vmx_hv.msr_bitmap, 0xff, 4096);
	return x86_hv_start(&vmx_hv_ops, plan);
}
