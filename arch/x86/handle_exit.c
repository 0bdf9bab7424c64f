// SPDX-License-Identifier: Apache-2.0
//
// The exit policy of the primary's vCPUs on both x86 back ends.
// svm_handle_exit and vmx_handle_exit decode their exit into a `struct
// x86_exit` (svm/exit_decode.c, vmx/exit_decode.c), call x86_handle_exit() and
// apply the result to their control block. SVM skips it only for the I/O fast
// path (x86_io_fast, exit.c) and nested SVM's exits (svm/nested*.c). A
// secondary's exits are decided in hv_exit.c. docs/x86-exits.md lists the
// answers.
#include "arch/x86/cr_check.h"
#include "arch/x86/vcpu.h"
#include "core/hv.h"
#include "core/log.h"

// Exit codes the layer did not know, reported once each (any CPU).
static struct log_once unknown_logged;

static enum x86_action unknown_exit(struct vcpu *v, const struct x86_exit *e)
{
	if (log_once_first(&unknown_logged, e->code))
		log_warn("%s: unexpected exit 0x%llx (qualification 0x%llx) on vcpu%u at RIP "
			 "0x%llx: #UD\n",
			 e->vendor, (unsigned long long)e->code, (unsigned long long)e->qual,
			 v->index, (unsigned long long)v->arch.rip);
	return x86_inject_ud(v);
}

// A hypercall of the primary (docs/hypercalls.md): at CPL > 0 the #UD a
// CPU without a hypervisor gives, nothing else changed; at CPL 0 the
// secondary-VM layer (core/hv.h) answers in RAX, RBX, RCX, RDX and the
// instruction completes. VCPU_RUN runs a secondary vCPU inside this call.
static enum x86_action hypercall(struct vcpu *v)
{
	static const unsigned arg_regs[HC_NARGS] = {X86_RBX, X86_RCX, X86_RDX,
						    X86_RSI, X86_RDI, X86_R8};
	struct hc_regs r;

	if (x86_guest_cpl(v) != 0)
		return x86_inject_ud(v);
	r.fn = v->arch.gpr[X86_RAX];
	for (unsigned i = 0; i < HC_NARGS; i++)
		r.a[i] = v->arch.gpr[arg_regs[i]];
	hv_dispatch(v, &r);
	v->arch.gpr[X86_RAX] = r.fn;
	v->arch.gpr[X86_RBX] = r.a[0];
	v->arch.gpr[X86_RCX] = r.a[1];
	v->arch.gpr[X86_RDX] = r.a[2];
	x86_skip_insn(v);
	return X86_CONTINUE;
}

// A second-level fault: a write to the local APIC page is the APIC emulation
// (INIT/SIPI mailbox), anything else a violation. After the shutdown began
// the tables are gone: nothing is left to run.
static enum x86_action slat_violation(struct vcpu *v, const struct x86_exit *e)
{
	if (vm_is_shutting_down(v->vm))
		x86_park();
	if (e->write && !e->fetch && (e->gpa & ~0xfffull) == v->vm->arch.apic_base) {
		vcpu_count_exit(v, EXIT_MMIO);
		return x86_handle_apic_write(v, e->gpa);
	}
	vcpu_count_exit(v, EXIT_SLAT_FAULT);
	return x86_handle_slat_violation(v, e->gpa, e->write, e->fetch);
}

// An NMI exit: one of Slat's kicks (never shown to the guest) or the guest's
// own, held in v->arch.nmi until the guest can take it (nmi.c); the back end
// injects it before an entry.
static enum x86_action nmi(struct vcpu *v)
{
	if (x86_consume_kick(v))
		return X86_CONTINUE;
	x86_nmi_raise(&v->arch.nmi);
	if (v->arch.ops->deliver_nmi)
		v->arch.ops->deliver_nmi(v);
	return X86_CONTINUE;
}

static enum x86_action triple_fault(struct vcpu *v, const struct x86_exit *e)
{
	log_warn("x86: vcpu%u shut down (triple fault) at RIP 0x%llx: resetting\n", v->index,
		 (unsigned long long)v->arch.rip);
	return X86_RESET;
}

// A MOV to CR0, CR3 or CR4 at RIP whose value the checks refuse, with the
// guest's current state itself valid: some CPUs report such a load as an
// invalid-state exit instead of raising #GP themselves (QEMU 7.2's SVM does,
// with the state as it was before the instruction). The guest gets the
// #GP(0) the architecture gives. A state the checks find valid but the CPU
// keeps refusing would loop: after X86_BAD_STATE_STREAK invalid-state exits
// in a row (no other exit between) it is a real one.
#define X86_BAD_STATE_STREAK 1000

static bool current_state_ok(struct vcpu *v)
{
	struct x86_cr_state st;
	struct x86_cr_caps caps;

	x86_guest_cr_state(v, &st);
	x86_guest_cr_caps(v, &caps);
	return x86_cr0_ok(&st, &caps, st.cr0) && x86_cr3_ok(&st, &caps, st.cr3) &&
	       x86_cr4_ok(&st, &caps, st.cr4) && x86_efer_ok(&st, &caps, st.efer);
}

static bool refused_cr_load(struct vcpu *v)
{
	struct x86_insn in;

	if (++v->arch.bad_state_streak > X86_BAD_STATE_STREAK || !x86_decode(v, &in) ||
	    !in.two_byte || in.opcode != 0x22)
		return false;
	unsigned cr = in.reg;
	return (cr == 0 || cr == 3 || cr == 4) && !x86_guest_cr_ok(v, cr, v->arch.gpr[in.rm]) &&
	       current_state_ok(v);
}

static enum x86_action bad_state(struct vcpu *v, const struct x86_exit *e)
{
	if (refused_cr_load(v))
		return x86_inject_gp0(v);
	log_err("%s: vcpu%u cannot run (exit 0x%llx, qualification 0x%llx, RIP 0x%llx): "
		"powering off\n",
		e->vendor, v->index, (unsigned long long)e->code, (unsigned long long)e->qual,
		(unsigned long long)v->arch.rip);
	return X86_POWER_OFF;
}

static enum x86_action cache_flush(struct vcpu *v)
{
	// INVD would drop the host's data too: both write back and invalidate.
	__asm__ volatile("wbinvd" ::: "memory");
	x86_skip_insn(v);
	return X86_CONTINUE;
}

enum exit_reason x86_exit_class(enum x86_exit_kind k)
{
	switch (k) {
	case X86_EXIT_INTR:
	case X86_EXIT_NMI:
	case X86_EXIT_EXCEPTION:
	case X86_EXIT_IRET:
	case X86_EXIT_NMI_WINDOW:
	case X86_EXIT_IRQ_WINDOW:
		return EXIT_INTERRUPT;
	case X86_EXIT_CPUID:
		return EXIT_CPUID;
	case X86_EXIT_RDMSR:
	case X86_EXIT_WRMSR:
	case X86_EXIT_XSETBV:
	case X86_EXIT_CR:
		return EXIT_SYSREG;
	case X86_EXIT_IO:
		return EXIT_IO;
	case X86_EXIT_SLAT_VIOLATION:
		return EXIT_SLAT_FAULT;
	case X86_EXIT_HYPERCALL:
		return EXIT_HYPERCALL;
	case X86_EXIT_HLT:
	case X86_EXIT_MWAIT:
	case X86_EXIT_MONITOR:
	case X86_EXIT_PAUSE:
		return EXIT_WAIT;
	default:
		return EXIT_OTHER;
	}
}

static enum x86_action hook_or_unknown(struct vcpu *v, const struct x86_exit *e,
				       enum x86_action (*hook)(struct vcpu *,
							       const struct x86_exit *))
{
	return hook ? hook(v, e) : unknown_exit(v, e);
}

bool x86_single_step_due(uint64_t rflags)
{
	return rflags & (1u << 8); // TF as the instruction began
}

static enum x86_action dispatch(struct vcpu *v, const struct x86_exit *e);

// Every exit: the policy (dispatch), then, when it completed an instruction
// for the guest (RIP advanced, nothing injected), what the CPU does after an
// instruction: end an interrupt shadow and, if the guest single-steps,
// deliver the #DB trap with DR6.BS (Intel SDM vol. 3 and AMD APM vol. 2,
// single-step trap after an instruction completes). A trap in
// a MOV SS shadow is not blocked: the shadow holds back the trap of the
// MOV SS itself, which then comes with this one.
enum x86_action x86_handle_exit(struct vcpu *v, const struct x86_exit *e)
{
	uint64_t rflags = v->arch.ops->read_rflags(v);

	v->arch.insn_done = false;
	enum x86_action a = dispatch(v, e);
	if (a == X86_CONTINUE && v->arch.insn_done && v->arch.ops->complete_insn)
		v->arch.ops->complete_insn(v, x86_single_step_due(rflags));
	if (e->kind != X86_EXIT_BAD_STATE)
		v->arch.bad_state_streak = 0;
	return a;
}

static enum x86_action dispatch(struct vcpu *v, const struct x86_exit *e)
{
	const struct x86_vcpu_ops *ops = v->arch.ops;

	v->arch.shutdown.port = 0;
	if (e->kind != X86_EXIT_SLAT_VIOLATION) // counted as MMIO or SLAT fault there
		vcpu_count_exit(v, x86_exit_class(e->kind));
	switch (e->kind) {
	case X86_EXIT_INTR:
		return X86_CONTINUE;
	case X86_EXIT_NMI:
		return nmi(v);
	case X86_EXIT_IRET: // the IRET runs when the guest resumes (RIP unchanged)
		x86_nmi_at_iret(&v->arch.nmi, v->arch.rip);
		return X86_CONTINUE;
	case X86_EXIT_NMI_WINDOW:
		return X86_CONTINUE; // the back end injects the held NMI
	case X86_EXIT_EXCEPTION:
		if (log_once_first(&unknown_logged, e->code))
			log_warn("%s: exception exit 0x%llx (qualification 0x%llx) on vcpu%u\n",
				 e->vendor, (unsigned long long)e->code,
				 (unsigned long long)e->qual, v->index);
		return X86_CONTINUE;
	case X86_EXIT_CPUID:
		return x86_handle_cpuid(v);
	case X86_EXIT_RDMSR:
		return x86_handle_rdmsr(v);
	case X86_EXIT_WRMSR:
		return x86_handle_wrmsr(v);
	case X86_EXIT_XSETBV:
		return x86_handle_xsetbv(v);
	case X86_EXIT_CR:
		return hook_or_unknown(v, e, ops->cr_access);
	case X86_EXIT_IO:
		return x86_handle_io(v, &e->io);
	case X86_EXIT_SLAT_VIOLATION:
		return slat_violation(v, e);
	case X86_EXIT_HYPERCALL:
		return hypercall(v);
	case X86_EXIT_HLT:
	case X86_EXIT_MWAIT:
	case X86_EXIT_MONITOR:
		return hook_or_unknown(v, e, ops->wait);
	case X86_EXIT_PAUSE:
		x86_skip_insn(v);
		return X86_CONTINUE;
	case X86_EXIT_CACHE_FLUSH:
		return cache_flush(v);
	case X86_EXIT_INIT:
	case X86_EXIT_SIPI:
		return hook_or_unknown(v, e, ops->init_sipi);
	case X86_EXIT_VIRT_INSN:
		return x86_inject_ud(v); // SVM and VMX are not offered to the guest
	case X86_EXIT_TRIPLE_FAULT:
		return triple_fault(v, e);
	case X86_EXIT_BAD_STATE:
		return bad_state(v, e);
	case X86_EXIT_UNKNOWN:
	default:
		return unknown_exit(v, e);
	}
}

void x86_apply_action(struct vcpu *v, enum x86_action a)
{
	if (a == X86_CONTINUE)
		return;
	x86_vm_shutdown(v, a == X86_RESET, v->arch.shutdown.port, v->arch.shutdown.value,
			v->arch.shutdown.size);
}
