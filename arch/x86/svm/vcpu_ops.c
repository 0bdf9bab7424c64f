// SPDX-License-Identifier: Apache-2.0
//
// The vCPU operations (arch/x86/vcpu.h) of every SVM vCPU: one table for the
// primary's (exits: svm/exit.c) and secondaries' (entries: svm/hv.c). The
// kinds differ in data, told apart by svm_primary_cpu() (svm.h): where the
// VMCB and the exit's next RIP are, and what only the primary has: nested
// SVM's EFER.SVME (a secondary is offered no SVM), FS/GS saved lazily by
// VMSAVE (a secondary's VMCB always holds them), memory read by identity (a
// secondary's through its SLAT). The hooks wait and cr_access are the
// primary's policy's (x86_handle_exit); a secondary's never calls them.
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/svm/nested.h"
#include "arch/x86/svm/svm.h"

static const unsigned seg_off[] = {VMCB_ES, VMCB_CS, VMCB_SS, VMCB_DS, VMCB_FS, VMCB_GS};

static uint64_t op_read_cr(struct vcpu *v, unsigned n)
{
	void *vmcb = svm_vcpu_vmcb(v);

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

// The VMCB's EFER always has SVME (VMRUN refuses a guest without it); the
// guest sees its own: the primary's is nested SVM's, a secondary's is clear.
static uint64_t op_read_efer(struct vcpu *v)
{
	struct svm_cpu *c = svm_primary_cpu(v);
	uint64_t efer = *vmcb64(svm_vcpu_vmcb(v), VMCB_EFER);

	return c ? svm_nested_efer_view(c, efer) : efer & ~EFER_SVME;
}

// SVME stays set (above); LMA stays as the CPU has it. The primary's write
// also reaches nested SVM and flushes its TLB.
static void op_write_efer(struct vcpu *v, uint64_t efer)
{
	struct svm_cpu *c = svm_primary_cpu(v);
	void *vmcb = svm_vcpu_vmcb(v);

	if (c)
		svm_nested_efer_write(c, efer);
	*vmcb64(vmcb, VMCB_EFER) =
	    (efer & ~EFER_LMA) | EFER_SVME | (*vmcb64(vmcb, VMCB_EFER) & EFER_LMA);
	if (c)
		*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
}

static uint64_t op_read_rflags(struct vcpu *v)
{
	return *vmcb64(svm_vcpu_vmcb(v), VMCB_RFLAGS);
}

static void op_read_seg(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out)
{
	struct svm_cpu *c = svm_primary_cpu(v);
	void *vmcb = svm_vcpu_vmcb(v);

	if (c && (s == X86_FS || s == X86_GS)) // VMSAVE state (svm_entry.S)
		svm_vmcb_save_state(c);
	out->sel = *vmcb16(vmcb, seg_off[s]);
	out->attr = *vmcb16(vmcb, seg_off[s] + 2);
	out->limit = *vmcb32(vmcb, seg_off[s] + 4);
	out->base = *vmcb64(vmcb, seg_off[s] + 8);
}

// The VMCB's CPL, which the CPU keeps (and SET_REGS sets for a secondary).
static unsigned op_cpl(struct vcpu *v)
{
	return *vmcb8(svm_vcpu_vmcb(v), VMCB_CPL) & 3;
}

static void op_inject(struct vcpu *v, unsigned vector, bool has_error, uint32_t error)
{
	uint64_t ev = vector | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;

	if (has_error)
		ev |= EVENTINJ_ERR_VALID | ((uint64_t)error << 32);
	*vmcb64(svm_vcpu_vmcb(v), VMCB_EVENTINJ) = ev;
}

// ---- the instruction's length ----------------------------------------------------
// The exits whose NRIP Slat uses: the instructions it completes. NRIP is
// written only for instruction intercepts, MSR and IOIO (APM vol. 2, 15.7.1;
// zero for the rest, an NPF among them).
static bool exit_has_nrip(uint64_t code)
{
	return code == SVM_EXIT_CPUID || code == SVM_EXIT_MSR || code == SVM_EXIT_HLT ||
	       code == SVM_EXIT_MWAIT || code == SVM_EXIT_MWAIT_C || code == SVM_EXIT_VMMCALL ||
	       code == SVM_EXIT_XSETBV || code == SVM_EXIT_IOIO;
}

// The length the CPU reported, else 0 (the decoder measures it): the exit's
// next RIP (IOIO), else NRIP for the exits above, when after the RIP (NRIP
// at most 15 bytes on, the longest instruction; a wrapped RIP is decoded).
static unsigned op_insn_len(struct vcpu *v)
{
	struct svm_cpu *c = svm_primary_cpu(v);
	void *vmcb = svm_vcpu_vmcb(v);
	uint64_t rip = v->arch.rip, nrip = *vmcb64(vmcb, VMCB_NRIP);
	uint64_t next = c ? c->next_rip : v->arch.hv.next_rip;

	if (next > rip)
		return (unsigned)(next - rip);
	if ((svm_host.features & SVM_FEAT_NRIPS) && exit_has_nrip(*vmcb64(vmcb, VMCB_EXITCODE)) &&
	    nrip > rip && nrip - rip <= 15)
		return (unsigned)(nrip - rip);
	return 0;
}

// The instruction Slat emulated completed: no interrupt shadow after it; a
// single-stepping guest takes its #DB trap (DR6.BS set, as the CPU would).
static void op_complete_insn(struct vcpu *v, bool single_step)
{
	void *vmcb = svm_vcpu_vmcb(v);

	*vmcb64(vmcb, VMCB_INT_SHADOW) &= ~1ull;
	if (!single_step)
		return;
	*vmcb64(vmcb, VMCB_DR6) |= DR6_BS;
	*vmcb64(vmcb, VMCB_EVENTINJ) = X86_EXC_DB | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;
}

// The primary's guest-physical memory is the host's (identity NPT); a
// secondary's goes through its SLAT.
static bool op_read_phys(struct vcpu *v, uint64_t gpa, void *buf, unsigned len)
{
	if (svm_primary_cpu(v))
		return x86_guest_read_phys(gpa, buf, len);
	return x86_hv_read_phys(v, gpa, buf, len);
}

// ---- x86_handle_exit's hooks (the primary's vCPUs) -------------------------------------
// A CPU parked in MWAIT waits here a little for its mailbox instead of
// bouncing straight back into the guest.
static void park_briefly(struct vcpu *v)
{
	for (unsigned i = 0; i < 20000 && !x86_mailbox_pending(v); i++)
		pause();
}

// ops->wait: HLT or MWAIT. HLT is not intercepted (svm_vmcb_control): a
// halted CPU wakes on its interrupts and NMIs natively, and an INIT for it
// comes with a kick (an NMI, intercepted) that makes it exit to its
// mailbox. Parking it in the host instead held its NMIs and interrupts back
// for up to the whole park (GIF clear): an NMI IPI to a `cli; hlt` CPU took
// milliseconds (docs/x86-exits.md).
static enum x86_action op_wait(struct vcpu *v, const struct x86_exit *e)
{
	void *vmcb = svm_vcpu_vmcb(v);

	if (e->kind == X86_EXIT_HLT) {
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) &= ~INT3_HLT;
		return X86_CONTINUE; // RIP unchanged: the HLT runs again, natively
	}
	park_briefly(v);
	x86_skip_insn(v); // MWAIT: a wake-up; the caller re-checks its condition
	return X86_CONTINUE;
}

// Loads a checked CR0 value: EFER.LMA follows LME and PG (what the CPU does
// when paging turns on or off), and the guest's TLB is flushed when paging
// or caching changes.
static void load_cr0(struct vcpu *v, uint64_t val)
{
	void *vmcb = svm_vcpu_vmcb(v);
	uint64_t old = *vmcb64(vmcb, VMCB_CR0), efer = *vmcb64(vmcb, VMCB_EFER);

	*vmcb64(vmcb, VMCB_CR0) = val;
	if ((old ^ val) & CR0_PG) {
		efer &= ~EFER_LMA;
		if ((val & CR0_PG) && (efer & EFER_LME))
			efer |= EFER_LMA;
		*vmcb64(vmcb, VMCB_EFER) = efer;
	}
	if ((old ^ val) & (CR0_PG | CR0_PE | (1ull << 16) | (3ull << 29)))
		*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
}

static void op_write_cr2(struct vcpu *v, uint64_t la)
{
	*vmcb64(svm_vcpu_vmcb(v), VMCB_CR2) = la;
}

// ops->cr_access: the CR0 write intercept.
static enum x86_action op_cr_access(struct vcpu *v, const struct x86_exit *e)
{
	return x86_handle_cr0_write(v, load_cr0);
}

const struct x86_vcpu_ops svm_vcpu_ops = {
    .read_cr = op_read_cr,
    .read_efer = op_read_efer,
    .write_efer = op_write_efer,
    .read_rflags = op_read_rflags,
    .read_seg = op_read_seg,
    .inject = op_inject,
    .write_cr2 = op_write_cr2,
    .insn_len = op_insn_len,
    .complete_insn = op_complete_insn,
    .wait = op_wait,
    .cr_access = op_cr_access,
    .cpl = op_cpl,
    .read_phys = op_read_phys,
};
