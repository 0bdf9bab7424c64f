// SPDX-License-Identifier: Apache-2.0
//
// VM exits of the SVM back end: the exit entry (svm_handle_exit: decode,
// the shared policy of arch/x86/handle_exit.c, apply to the VMCB) and the
// vCPU operations and hooks the shared layer calls (arch/x86/vcpu.h). The
// layout mirrors vmx/exit.c.
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"

// ---- vCPU operations ------------------------------------------------------------
static void *svm_vmcb_of(struct vcpu *v)
{
	return (void *)(uintptr_t)((struct svm_cpu *)v->arch.backend)->vmcb_pa;
}

static uint64_t op_read_cr(struct vcpu *v, unsigned n)
{
	void *vmcb = svm_vmcb_of(v);

	switch (n) {
	case 0:
		return *vmcb64(vmcb, VMCB_CR0);
	case 2:
		return *vmcb64(vmcb, VMCB_CR2);
	case 3:
		return *vmcb64(vmcb, VMCB_CR3);
	default:
		return *vmcb64(vmcb, VMCB_CR4);
	}
}

static uint64_t op_read_efer(struct vcpu *v)
{
	return *vmcb64(svm_vmcb_of(v), VMCB_EFER) & ~EFER_SVME;
}

static void op_write_efer(struct vcpu *v, uint64_t efer)
{
	void *vmcb = svm_vmcb_of(v);

	// SVME stays set (QEMU refuses VMRUN otherwise); LMA stays as the CPU has it.
	*vmcb64(vmcb, VMCB_EFER) =
	    (efer & ~EFER_LMA) | EFER_SVME | (*vmcb64(vmcb, VMCB_EFER) & EFER_LMA);
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
}

static uint64_t op_read_rflags(struct vcpu *v)
{
	return *vmcb64(svm_vmcb_of(v), VMCB_RFLAGS);
}

static void op_read_seg(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out)
{
	static const unsigned off[] = {VMCB_ES, VMCB_CS, VMCB_SS, VMCB_DS, VMCB_FS, VMCB_GS};
	void *vmcb = svm_vmcb_of(v);

	out->sel = *vmcb16(vmcb, off[s]);
	out->attr = *vmcb16(vmcb, off[s] + 2);
	out->limit = *vmcb32(vmcb, off[s] + 4);
	out->base = *vmcb64(vmcb, off[s] + 8);
}

static void op_inject(struct vcpu *v, unsigned vector, bool has_error, uint32_t error)
{
	uint64_t ev = vector | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;

	if (has_error)
		ev |= EVENTINJ_ERR_VALID | ((uint64_t)error << 32);
	*vmcb64(svm_vmcb_of(v), VMCB_EVENTINJ) = ev;
}

static bool exit_has_nrip(uint64_t code)
{
	return code == SVM_EXIT_CPUID || code == SVM_EXIT_MSR || code == SVM_EXIT_HLT ||
	       code == SVM_EXIT_MWAIT || code == SVM_EXIT_MWAIT_C || code == SVM_EXIT_VMMCALL ||
	       code == SVM_EXIT_XSETBV || code == SVM_EXIT_IOIO;
}

static unsigned op_insn_len(struct vcpu *v)
{
	struct svm_cpu *c = v->arch.backend;
	void *vmcb = svm_vmcb_of(v);
	uint64_t rip = *vmcb64(vmcb, VMCB_RIP);

	if (c->next_rip)
		return (unsigned)(c->next_rip - rip);
	if ((svm_host.features & SVM_FEAT_NRIPS) && exit_has_nrip(*vmcb64(vmcb, VMCB_EXITCODE)) &&
	    *vmcb64(vmcb, VMCB_NRIP) > rip)
		return (unsigned)(*vmcb64(vmcb, VMCB_NRIP) - rip);
	return 0;
}

// A parked CPU (HLT with interrupts off, MWAIT) waits here a little for its
// mailbox instead of bouncing straight back into the guest.
static void park_briefly(struct vcpu *v)
{
	for (unsigned i = 0; i < 20000 && !x86_mailbox_pending(v); i++)
		pause();
}

// ops->wait: HLT or MWAIT.
static enum x86_action op_wait(struct vcpu *v, const struct x86_exit *e)
{
	struct svm_cpu *c = v->arch.backend;
	void *vmcb = svm_vmcb_of(v);

	if (e->kind == X86_EXIT_HLT && (*vmcb64(vmcb, VMCB_RFLAGS) & (1u << 9))) {
		// An OS idle loop (interrupts on): let it halt natively from now on.
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) &= ~INT3_HLT;
		c->hlt_intercept = false;
		// `sti; hlt` must halt before any interrupt is taken: the HLT
		// sits in the STI shadow, so an interrupt that is already
		// pending wakes the halted CPU and is taken after the HLT. If
		// the HLT simply ran again, the interrupt would be taken before
		// it (QEMU before 9.1 drops the VMCB interrupt shadow on VMRUN),
		// its handler would return to the HLT and the CPU would sleep
		// through the wake-up it waited for. So with an interrupt (or a
		// held NMI) ready, the HLT completes here: the guest takes it
		// after the HLT, as hardware does. Otherwise the HLT runs again,
		// unintercepted, in the shadow (kept by hardware that honours
		// it; an interrupt that comes later finds the CPU halting).
		if (x86_apic_irq_ready() || v->arch.nmi.pending) {
			x86_skip_insn(v);
			return X86_CONTINUE;
		}
		*vmcb64(vmcb, VMCB_INT_SHADOW) |= 1;
		return X86_CONTINUE;
	}
	park_briefly(v);
	if (e->kind == X86_EXIT_HLT) {
		// `cli; hlt`: only an NMI, INIT or SMI ends it. The guest stays at
		// its HLT (the next entry exits again) until its NMI comes
		// (nmi_apply completes the HLT then) or an INIT (mailbox).
		c->halted = true;
		c->halted_rip = v->arch.rip;
		return X86_CONTINUE;
	}
	x86_skip_insn(v); // MWAIT: a wake-up; the caller re-checks its condition
	return X86_CONTINUE;
}

// ---- the guest's NMIs (arch/x86/nmi.c) -------------------------------------------
// An NMI Slat injects sets no blocking the CPU keeps for the guest: the
// shared state does, with the IRET intercept to see the handler end. Without
// NRIPS the IRET exit comes before the IRET runs, so a held NMI waits for
// the IRET to run alone under TF (#DB intercepted), as hardware delivers it
// after the IRET, before the next instruction.
static void nmi_step_begin(struct svm_cpu *c, void *vmcb)
{
	uint64_t rflags = *vmcb64(vmcb, VMCB_RFLAGS);

	c->nmi_stepping = true;
	c->step_guest_tf = rflags & RFLAGS_TF;
	c->step_dr6 = *vmcb64(vmcb, VMCB_DR6);
	*vmcb64(vmcb, VMCB_RFLAGS) = rflags | RFLAGS_TF | RFLAGS_RF;
	*vmcb32(vmcb, VMCB_INTERCEPT_EXC) |= 1u << 1;
}

// The #DB of that step (its exit): the IRET ran. The RFLAGS are now the ones
// the IRET loaded; DR6 gets back what the guest had unless the guest was
// single-stepping itself, which then gets its #DB.
static void nmi_step_end(struct svm_cpu *c, void *vmcb)
{
	struct vcpu *v = c->vcpu;

	c->nmi_stepping = false;
	*vmcb32(vmcb, VMCB_INTERCEPT_EXC) &= ~(1u << 1);
	if (v->arch.nmi.iret_seen && v->arch.rip == v->arch.nmi.iret_rip && !c->step_guest_tf)
		*vmcb64(vmcb, VMCB_RFLAGS) &= ~RFLAGS_TF; // the IRET did not complete
	if (c->step_guest_tf)
		*vmcb64(vmcb, VMCB_EVENTINJ) = 1 | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;
	else
		*vmcb64(vmcb, VMCB_DR6) = c->step_dr6;
}

// Before VMRUN: inject a held NMI the guest can take, intercept IRET while
// it is blocked, step over the IRET when one is held.
static void nmi_apply(struct svm_cpu *c, void *vmcb, bool was_halted)
{
	bool slot_free = !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID);
	struct x86_nmi_plan p = x86_nmi_plan(&c->vcpu->arch.nmi, slot_free);

	if (p.inject && was_halted && x86_skip_insn(c->vcpu)) {
		// The NMI wakes the CPU from its `cli; hlt`: taken after the HLT.
		*vmcb64(vmcb, VMCB_RIP) = c->vcpu->arch.rip;
		c->halted = false;
	}
	if (p.inject)
		*vmcb64(vmcb, VMCB_EVENTINJ) = 2 | EVENTINJ_TYPE_NMI | EVENTINJ_VALID;
	if (p.intercept_iret)
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) |= INT3_IRET;
	else
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) &= ~INT3_IRET;
	if (p.step_over_iret && !c->nmi_stepping)
		nmi_step_begin(c, vmcb);
}

// The exit entry: decode, the shared policy, apply.
void svm_handle_exit(struct svm_cpu *c)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;
	const struct svm_exit_fields f = {
	    .code = *vmcb64(vmcb, VMCB_EXITCODE),
	    .info1 = *vmcb64(vmcb, VMCB_EXITINFO1),
	    .info2 = *vmcb64(vmcb, VMCB_EXITINFO2),
	};
	uint64_t intinfo = *vmcb64(vmcb, VMCB_EXITINTINFO);
	struct x86_exit e;
	uint8_t vector;

	svm_decode_exit(&f, &e);
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_NONE; // the last VMRUN flushed
	v->arch.gpr[X86_RAX] = *vmcb64(vmcb, VMCB_RAX);
	v->arch.gpr[X86_RSP] = *vmcb64(vmcb, VMCB_RSP);
	v->arch.rip = *vmcb64(vmcb, VMCB_RIP);
	c->next_rip = e.next_rip;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	if (f.code == SVM_EXIT_EXC_DB && c->nmi_stepping) {
		nmi_step_end(c, vmcb);
		e.kind = X86_EXIT_NMI_WINDOW;
	}
	x86_nmi_progress(&v->arch.nmi, v->arch.rip);
	// Still asleep in its `cli; hlt` (op_wait sets it again on its HLT exit).
	bool was_halted = c->halted && v->arch.rip == c->halted_rip;
	c->halted = false;
	// An intercepted NMI stays pending (held by GIF = 0): take it in the
	// host, whose NMI vector just returns, before the policy decides what
	// it was.
	if (e.kind == X86_EXIT_NMI)
		__asm__ volatile("stgi; nop; nop; clgi" ::: "memory");

	x86_apply_action(v, x86_handle_exit(v, &e));

	// An event whose delivery the exit interrupted is delivered again, unless
	// the handler queued an exception of its own.
	if ((intinfo & EVENTINJ_VALID) && !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID))
		*vmcb64(vmcb, VMCB_EVENTINJ) = intinfo;
	*vmcb64(vmcb, VMCB_RIP) = v->arch.rip;
	*vmcb64(vmcb, VMCB_RAX) = v->arch.gpr[X86_RAX];
	*vmcb64(vmcb, VMCB_RSP) = v->arch.gpr[X86_RSP];
	if (x86_mailbox_poll(v, &vector))
		svm_vmcb_sipi_reset(c, vector);
	nmi_apply(c, vmcb, was_halted || c->halted);
}

const struct x86_vcpu_ops svm_vcpu_ops = {
    .read_cr = op_read_cr,
    .read_efer = op_read_efer,
    .write_efer = op_write_efer,
    .read_rflags = op_read_rflags,
    .read_seg = op_read_seg,
    .inject = op_inject,
    .insn_len = op_insn_len,
    .wait = op_wait,
};
