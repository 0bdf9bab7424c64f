// SPDX-License-Identifier: Apache-2.0
//
// The SVM back end of secondary vCPUs (arch/x86/hv.h): one VMCB per vCPU
// in a deposited page, entered from inside the primary's exit handler on the
// host stack through the CPU's one VMRUN sequence (svm_vmrun, svm_entry.S;
// run_secondary points the CPU's run fields at the secondary). Policy is
// arch/x86/hv_exit.c's; the vCPU's state in its VMCB is hv_state.c's, its
// vCPU operations are every SVM vCPU's (vcpu_ops.c). This file creates the
// VMCB, injects interrupts, runs one entry and switches worlds:
//
//   begin: VMSAVE the primary's hidden state (FS, GS, TR, LDTR, the SYSCALL
//          and SYSENTER MSRs) into its VMCB (arch_hv_run has switched the
//          extended state, both vendors alike);
//   enter: VMLOAD / VMRUN (svm_vmrun) / VMSAVE on the secondary's VMCB;
//   end:   the reverse of begin; the primary's loop VMLOADs its state again
//          (svm_cpu.vmload) before its next VMRUN.
//
// All secondaries share one ASID (SVM_HV_ASID), different from the
// primary's: a RUN flushes it at its first entry (another VM may have used
// it on this CPU) and whenever core asks (hv_entry.flush).
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/hv.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"
#include "core/mem.h"

#define SVM_HV_ASID 2

#define INT3_INVD	 (1u << 22)
#define INT3_TASK_SWITCH (1u << 29)
#define INT4_MONITOR	 (1u << 10)
#define VINTR_MASKING	 (1ull << 24)

// Set once at boot (resident copy).
static struct {
	uint64_t iopm_pa, msrpm_pa; // all ones: every port and MSR exits
} svm_hv;

// ---- the VMCB's control area, creation -------------------------------------------------
static void control(void *vmcb)
{
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) =
	    INT3_INTR | INT3_NMI | INT3_SMI | INT3_INIT | INT3_CPUID | INT3_HLT | INT3_INVLPGA |
	    INT3_IOIO | INT3_MSR | INT3_SHUTDOWN | INT3_INVD | INT3_TASK_SWITCH;
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC2) =
	    INT4_VMRUN | INT4_VMMCALL | INT4_VMLOAD | INT4_VMSAVE | INT4_STGI | INT4_CLGI |
	    INT4_SKINIT | INT4_MONITOR | INT4_MWAIT | INT4_MWAIT_COND | INT4_XSETBV;
	*vmcb64(vmcb, VMCB_IOPM_PA) = svm_hv.iopm_pa;
	*vmcb64(vmcb, VMCB_MSRPM_PA) = svm_hv.msrpm_pa;
	*vmcb32(vmcb, VMCB_ASID) = SVM_HV_ASID;
	// Physical interrupts are gated by the host's IF (set around VMRUN)
	// and exit, whatever the guest's IF.
	*vmcb64(vmcb, VMCB_VINTR) = VINTR_MASKING;
	*vmcb64(vmcb, VMCB_NP_ENABLE) = 1;
}

static int op_create(struct vcpu *v)
{
	uint64_t vmcb = hv_page_alloc(v->vm), fpu = hv_page_alloc(v->vm);

	if (!vmcb || !fpu) {
		if (vmcb)
			hv_page_free(v->vm, vmcb);
		if (fpu)
			hv_page_free(v->vm, fpu);
		return HC_E_NOMEM;
	}
	v->arch.hv.vmcb_pa = vmcb;
	v->arch.hv.fpu_pa = fpu;
	x86_hv_fpu_init(fpu);
	control(svm_vcpu_vmcb(v));
	// After INIT: CS F000 with base FFFF0000, IP FFF0 (the page is zeroed).
	svm_vmcb_init_state(svm_vcpu_vmcb(v), v, 0xf000, 0xffff0000ull, 0xfff0);
	return HC_OK;
}

static void op_destroy(struct vcpu *v)
{
	if (v->arch.hv.vmcb_pa)
		hv_page_free(v->vm, v->arch.hv.vmcb_pa);
	if (v->arch.hv.fpu_pa)
		hv_page_free(v->vm, v->arch.hv.fpu_pa);
	v->arch.hv.vmcb_pa = v->arch.hv.fpu_pa = 0;
}

// ---- the world switch ---------------------------------------------------------------
static void op_begin(struct vcpu *caller, struct vcpu *v)
{
	svm_vmcb_save_state(caller->arch.backend);
	// Physical interrupts exit the secondary only when the primary can take
	// them: a caller with interrupts disabled is not preempted by them (it
	// could not take them, and every RUN would answer PREEMPTED at once).
	v->arch.hv.caller_if = caller->arch.ops->read_rflags(caller) & (1u << 9);
	// Another VM may have used the shared ASID on this CPU.
	svm_mm_flush_here(svm_vcpu_vmcb(v));
}

static void op_end(struct vcpu *caller, struct vcpu *v)
{
	struct svm_cpu *c = caller->arch.backend;

	c->vmload = 1; // the primary's FS, GS, TR, ... were saved by op_begin
}

// ---- re-delivery of an interrupted external interrupt -----------------------------------
static void op_irq_inject(struct vcpu *v, uint8_t vector);
static bool op_irq_taken(struct vcpu *v);

// An external interrupt whose delivery an exit interrupted. QEMU's TCG
// records a virtual interrupt's interrupted delivery as an exception (type 3)
// with its vector; no exception has a vector above 31.
static bool intinfo_is_irq(uint64_t ii)
{
	uint64_t type = ii & (7u << 8);

	return (ii & EVENTINJ_VALID) &&
	       (type == EVENTINJ_TYPE_INTR || (type == EVENTINJ_TYPE_EXC && (ii & 0xff) >= 32));
}

// Before an entry: an interrupted external interrupt goes in again as a
// virtual interrupt (as op_irq_inject, and for the same reason). The state
// is the one before its delivery (IF still set). Returns its vector, or -1.
static int redeliver_begin(struct vcpu *v)
{
	uint64_t ii = v->arch.hv.intinfo;

	if (!intinfo_is_irq(ii) || (*vmcb64(svm_vcpu_vmcb(v), VMCB_EVENTINJ) & EVENTINJ_VALID))
		return -1;
	op_irq_inject(v, (uint8_t)ii);
	return (int)(ii & 0xff);
}

// After the exit: not taken yet (a host interrupt came first), it stays to
// be delivered at the next entry, unless the exit reported another event.
static void redeliver_end(struct vcpu *v, int vector)
{
	if (vector >= 0 && !op_irq_taken(v) && !(v->arch.hv.intinfo & EVENTINJ_VALID))
		v->arch.hv.intinfo = EVENTINJ_VALID | EVENTINJ_TYPE_INTR | (uint8_t)vector;
}

// An IRET intercepted while the guest's NMIs are blocked: Slat's (the entry
// loop re-enters, X86_EXIT_NMI_WINDOW), after the NMI state saw it.
static void hv_nmi_iret(struct vcpu *v, struct x86_exit *e)
{
	if (e->kind == X86_EXIT_IRET) {
		x86_nmi_at_iret(&v->arch.nmi, v->arch.rip);
		e->kind = X86_EXIT_NMI_WINDOW;
	}
}

static bool op_nmi_ok(void)
{
	return true; // NMIs are injected with EVENTINJ, the blocking kept in nmi.c
}

// One entry of v on this CPU (whose primary vCPU is in its hypercall exit):
// the CPU's VMRUN sequence on v's VMCB and GPRs, its hidden state loaded
// before and saved after (the primary's comes back at op_end); the CPU's run
// fields are the primary's again on return.
static void run_secondary(struct vcpu *v)
{
	struct svm_cpu *c = &svm_host.cpus[arch_hv_pcpu() % X86_MAX_CPUS];
	uint64_t *gprs = c->gprs, vmcb_pa = c->run_vmcb_pa, sti = c->run_sti;

	c->run_vmcb_pa = v->arch.hv.vmcb_pa;
	c->gprs = v->arch.gpr;
	c->run_sti = svm_run_if(v->arch.hv.caller_if, svm_vcpu_vmcb(v));
	c->vmload = 1;
	svm_vmrun(c);
	svm_check_guest_state(c, "secondary", v->index);
	svm_vmsave(v->arch.hv.vmcb_pa);
	c->run_vmcb_pa = vmcb_pa;
	c->gprs = gprs;
	c->run_sti = sti;
}

static void op_enter(struct vcpu *v, const struct hv_entry *en, struct x86_exit *e)
{
	void *vmcb = svm_vcpu_vmcb(v);
	int again = redeliver_begin(v);

	*vmcb64(vmcb, VMCB_N_CR3) = en->root_pa;
	*vmcb64(vmcb, VMCB_TSC_OFFSET) = v->arch.hv.tsc_offset; // no clean bits are used
	if (en->flush)
		svm_mm_flush_here(vmcb);
	// An event whose delivery the last exit interrupted is delivered again,
	// unless the policy queued an exception of its own (an external
	// interrupt went back in as a virtual interrupt: redeliver_begin).
	if (again < 0)
		svm_event_redeliver(vmcb, v->arch.hv.intinfo);
	v->arch.hv.intinfo = 0;
	svm_nmi_apply(&v->arch.nmi, vmcb); // after the redelivery: it may take the slot
	*vmcb64(vmcb, VMCB_RAX) = v->arch.gpr[X86_RAX];
	*vmcb64(vmcb, VMCB_RSP) = v->arch.gpr[X86_RSP];
	*vmcb64(vmcb, VMCB_RIP) = v->arch.rip;

	run_secondary(v);

	struct svm_exit_fields f;
	svm_exit_read(vmcb, &f, e);
	v->arch.hv.next_rip = e->next_rip;
	svm_exit_collect(v, vmcb, &f, e);
	hv_nmi_iret(v, e);
	v->arch.hv.intinfo = *vmcb64(vmcb, VMCB_EXITINTINFO);
	redeliver_end(v, again);
	v->arch.insn_done = false;
}

// ---- interrupt injection (ABI 1.4) ---------------------------------------------------
#define INT3_VINTR	(1u << 4)
#define VINTR_V_IRQ	(1ull << 8)
#define VINTR_V_PRIO	(0xfull << 16)
#define VINTR_V_IGN_TPR (1ull << 20)
#define VINTR_V_VECTOR	(0xffull << 32) // V_INTR_VECTOR, the next dword (0x64)

static bool op_irq_open(struct vcpu *v)
{
	void *vmcb = svm_vcpu_vmcb(v);

	return (*vmcb64(vmcb, VMCB_RFLAGS) & RFLAGS_IF) && !(*vmcb64(vmcb, VMCB_INT_SHADOW) & 1) &&
	       !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID) &&
	       !(v->arch.hv.intinfo & EVENTINJ_VALID);
}

// The vector goes in as a virtual interrupt (V_IRQ with V_INTR_VECTOR, top
// priority, TPR ignored, VINTR not intercepted), not through EVENTINJ: the
// guest takes it at the same boundary (it is open: IF set, no shadow), and
// the CPU clears V_IRQ when it does (op_irq_taken). Why not EVENTINJ: QEMU's
// TCG (7.2) delivers an injected external interrupt at VMRUN and also keeps
// it as its pending exception, so a cross-CPU kick right after VMRUN
// delivers it a second time (a Linux secondary took its timer vector again
// at the handler's first instruction, before SWAPGS, and died in its entry
// stack's guard page; KVM as the L1 shows the same). A virtual interrupt
// takes QEMU's ordinary interrupt path; hardware treats both alike.
static void op_irq_inject(struct vcpu *v, uint8_t vector)
{
	void *vmcb = svm_vcpu_vmcb(v);
	uint32_t *misc = vmcb32(vmcb, VMCB_INTERCEPT_MISC1);

	*vmcb64(vmcb, VMCB_VINTR) = (*vmcb64(vmcb, VMCB_VINTR) & ~VINTR_V_VECTOR) | VINTR_V_IRQ |
				    VINTR_V_PRIO | VINTR_V_IGN_TPR | (uint64_t)vector << 32;
	*misc &= ~INT3_VINTR;
}

// Taken when the CPU cleared V_IRQ, or when the exit reports the vector's
// delivery interrupted (EXITINTINFO, which op_enter delivers again): QEMU
// leaves V_IRQ set when an NPF stops the delivery, and counting it as not
// taken as well would deliver it twice. Either way the request is withdrawn.
static bool op_irq_taken(struct vcpu *v)
{
	void *vmcb = svm_vcpu_vmcb(v);
	uint64_t vintr = *vmcb64(vmcb, VMCB_VINTR);
	bool taken =
	    !(vintr & VINTR_V_IRQ) || (intinfo_is_irq(v->arch.hv.intinfo) &&
				       (uint8_t)v->arch.hv.intinfo == (uint8_t)(vintr >> 32));

	*vmcb64(vmcb, VMCB_VINTR) &=
	    ~(VINTR_V_IRQ | VINTR_V_PRIO | VINTR_V_IGN_TPR | VINTR_V_VECTOR);
	return taken;
}

// A virtual interrupt request (V_IRQ, top priority, TPR ignored) whose
// delivery is intercepted (VINTR): the exit comes when the guest could take it.
static void op_irq_window(struct vcpu *v, bool on)
{
	void *vmcb = svm_vcpu_vmcb(v);
	uint64_t bits = VINTR_V_IRQ | VINTR_V_PRIO | VINTR_V_IGN_TPR;
	uint32_t *misc = vmcb32(vmcb, VMCB_INTERCEPT_MISC1);

	*vmcb64(vmcb, VMCB_VINTR) =
	    on ? *vmcb64(vmcb, VMCB_VINTR) | bits : *vmcb64(vmcb, VMCB_VINTR) & ~bits;
	*misc = on ? *misc | INT3_VINTR : *misc & ~INT3_VINTR;
}

static struct x86_hv_ops svm_hv_ops = {
    // .fmt: the CPU's (svm_npt_fmt)
    .vcpu_ops = &svm_vcpu_ops, // the primary's table (vcpu_ops.c)
    .vcpu_create = op_create,
    .vcpu_destroy = op_destroy,
    .set_state = svm_hv_set_state,
    .get_state = svm_hv_get_state,
    .get_events = svm_hv_get_events,
    .set_events = svm_hv_set_events,
    .begin = op_begin,
    .end = op_end,
    .enter = op_enter,
    .msr = svm_hv_msr,
    .msr_stopped = svm_hv_msr, // the VMCB holds them between RUNs too
    .kick = x86_hv_kick_primary,
    .irq_open = op_irq_open,
    .nmi_ok = op_nmi_ok,
    .irq_inject = op_irq_inject,
    .irq_window = op_irq_window,
    .irq_taken = op_irq_taken,
};

// ---- boot -----------------------------------------------------------------------------
bool svm_hv_init(struct region *r, const struct slat_plan *plan)
{
	if (!x86_hv_fpu_setup(r, svm_host.xsave))
		return false;
	svm_hv.iopm_pa = region_alloc(r, 3, 4096);
	svm_hv.msrpm_pa = region_alloc(r, 2, 4096);
	if (!svm_hv.iopm_pa || !svm_hv.msrpm_pa) {
		log_warn("svm: no room in Slat's region for secondary VMs\n");
		return false;
	}
	memset((void *)(uintptr_t)svm_hv.iopm_pa, 0xff, 3 * 4096);
	memset((void *)(uintptr_t)svm_hv.msrpm_pa, 0xff, 2 * 4096);
	svm_hv_ops.fmt = svm_npt_fmt();
	return x86_hv_start(&svm_hv_ops, plan);
}
