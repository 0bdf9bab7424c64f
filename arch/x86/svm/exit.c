// SPDX-License-Identifier: Apache-2.0
//
// VM exits of the primary's vCPUs on SVM: the exit entry (svm_handle_exit:
// decode, the shared policy of arch/x86/handle_exit.c, apply to the VMCB;
// a nested L2's exits are routed from here to nested_run.c),
// the guest's NMIs (for secondaries too) and the host's interrupt window. The
// vCPU operations the shared layer calls are svm/vcpu_ops.c's.
#include "arch/x86/cpu.h"
#include "arch/x86/slat.h"
#include "arch/x86/svm/nested.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"

// ---- the guest's NMIs (arch/x86/nmi.c) -------------------------------------------
// An NMI Slat injects sets no blocking the CPU keeps for the guest: the
// shared state does, with the IRET intercept to see the handler end. Without
// NRIPS the IRET exit comes before the IRET runs, so a held NMI waits for
// the IRET to run alone under TF (#DB intercepted), as hardware delivers it
// after the IRET, before the next instruction. The same for the primary's
// vCPUs and for secondaries (svm/hv.c): the state is the vCPU's.
static void nmi_step_begin(struct x86_nmi_state *n, void *vmcb)
{
	uint64_t rflags = *vmcb64(vmcb, VMCB_RFLAGS);

	n->stepping = true;
	n->step_tf = rflags & RFLAGS_TF;
	n->step_dr6 = *vmcb64(vmcb, VMCB_DR6);
	*vmcb64(vmcb, VMCB_RFLAGS) = rflags | RFLAGS_TF | RFLAGS_RF;
	*vmcb32(vmcb, VMCB_INTERCEPT_EXC) |= 1u << 1;
}

// The #DB of that step (its exit): the IRET ran. The RFLAGS are now the ones
// the IRET loaded; DR6 gets back what the guest had unless the guest was
// single-stepping itself, which then gets its #DB. `rip`: the guest's now.
static void svm_nmi_step_end(struct x86_nmi_state *n, void *vmcb, uint64_t rip)
{
	n->stepping = false;
	*vmcb32(vmcb, VMCB_INTERCEPT_EXC) &= ~(1u << 1);
	if (n->iret_seen && rip == n->iret_rip && !n->step_tf)
		*vmcb64(vmcb, VMCB_RFLAGS) &= ~RFLAGS_TF; // the IRET did not complete
	if (n->step_tf)
		*vmcb64(vmcb, VMCB_EVENTINJ) = 1 | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;
	else
		*vmcb64(vmcb, VMCB_DR6) = n->step_dr6;
}

// Before VMRUN: inject a held NMI the guest can take, intercept IRET while
// it is blocked, step over the IRET when one is held.
// HLT is not intercepted: an NMI exit of a halted CPU already has its RIP
// after the HLT, so the injected NMI is taken after it, as on hardware.
void svm_nmi_apply(struct x86_nmi_state *n, void *vmcb)
{
	// Nothing held, blocked or stepped, no IRET intercept left: nothing to
	// do, and the VMCB is left alone. Measured: without this return the Linux
	// VMs of t_x86_svm_linux_secondary ran about a third slower under QEMU
	// TCG (vm3/vm4 72 s against 47 s); why inside QEMU was not analysed.
	if (!n->pending && !n->blocked && !n->stepping &&
	    !(*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) & INT3_IRET))
		return;
	bool slot_free = !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID);
	struct x86_nmi_plan p = x86_nmi_plan(n, slot_free);

	if (p.inject)
		*vmcb64(vmcb, VMCB_EVENTINJ) = 2 | EVENTINJ_TYPE_NMI | EVENTINJ_VALID;
	if (p.intercept_iret)
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) |= INT3_IRET;
	else
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) &= ~INT3_IRET;
	if (p.step_over_iret && !n->stepping)
		nmi_step_begin(n, vmcb);
}

// This CPU's state: its primary vCPU's back end (NULL before the hand-off).
static struct svm_cpu *svm_this_cpu(void)
{
	struct vcpu *v = vm_vcpu_find(&x86_primary, cpuid(1, 0).ebx >> 24);

	return v ? v->arch.backend : NULL;
}

// The host's NMI handler (svm_entry.S). After an NMI exit svm_handle_exit
// takes the NMI on purpose and decides what it was; in an interrupt window
// it is a kick, or the guest's, dropped (the vCPU is handling an INIT).
// In an SMI window it is noted for svm_take_host_smi.
void svm_host_nmi(void)
{
	struct svm_cpu *c = svm_this_cpu();
	struct vcpu *v = c ? c->vcpu : NULL;

	if (c && c->irq_window)
		x86_consume_kick(v);
	else if (c && c->smi_window)
		c->smi_window_nmi = true; // svm_take_host_smi hands it to the NMI path
}

// An SMI the guest's VMCB intercepted (INT3_SMI): the #VMEXIT leaves it
// pending with GIF clear (AMD APM vol. 2, 15.13.3 and 15.22: the SMI is
// recognized once GIF is 1). Setting GIF here takes it in host mode: the
// firmware's SMM handler runs from Slat's state and its RSM returns here.
// Not intercepting it is no option: QEMU's TCG then runs the SMM handler in
// guest mode, under the guest's intercepts, and the first exit from SMM
// code saves its EFER (SVME clear) into the VMCB, so the next VMRUN fails
// (docs/real-hardware.md). An NMI pending with the SMI is taken in the same
// window by svm_host_nmi; the caller then treats the exit as an NMI exit
// (svm_take_host_nmi's case). Returns whether an NMI came.
bool svm_take_host_smi(void)
{
	struct svm_cpu *c = svm_this_cpu();

	c->smi_window_nmi = false;
	c->smi_window = true;
	__asm__ volatile("stgi; nop; nop; clgi" ::: "memory");
	c->smi_window = false;
	c->smis++;
	return c->smi_window_nmi;
}

void svm_summary(void)
{
	uint64_t smis = 0;
	unsigned cpus = 0;

	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		smis += svm_host.cpus[i].smis;
		cpus += svm_host.cpus[i].smis != 0;
	}
	log_info("slat: SMIs taken in host mode: %llu on %u CPU(s)\n", (unsigned long long)smis,
		 cpus);
	svm_nested_summary();
}

// x86_vm_ops.irq_window: GIF and IF set for a few instructions.
void svm_irq_window(struct vcpu *v)
{
	struct svm_cpu *c = v->arch.backend;

	c->irq_window = true;
	__asm__ volatile("stgi; sti; nop; nop; nop; nop; cli; clgi" ::: "memory");
	c->irq_window = false;
}

// Port I/O the policy has nothing to decide about (x86_io_fast): done with
// the least work, the next RIP from EXITINFO2. Not when a mailbox event
// waits, an event delivery was interrupted or the guest is single-stepping
// (the full path handles those: the #DB after the OUT is its decision).
static bool svm_io_fast(struct svm_cpu *c, void *vmcb, const struct x86_exit *e, uint64_t intinfo)
{
	uint64_t rax = *vmcb64(vmcb, VMCB_RAX);

	if ((intinfo & EVENTINJ_VALID) || x86_mailbox_pending(c->vcpu) ||
	    x86_single_step_due(*vmcb64(vmcb, VMCB_RFLAGS)) || !x86_io_fast(c->vcpu, &e->io, &rax))
		return false;
	*vmcb64(vmcb, VMCB_RAX) = rax;
	*vmcb64(vmcb, VMCB_RIP) = e->next_rip;
	// The instruction completed: an STI or MOV SS shadow it sat in is over.
	*vmcb64(vmcb, VMCB_INT_SHADOW) &= ~1ull;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_NONE;
	return true;
}

void svm_exit_read(void *vmcb, struct svm_exit_fields *f, struct x86_exit *e)
{
	*f = (struct svm_exit_fields){
	    .code = *vmcb64(vmcb, VMCB_EXITCODE),
	    .info1 = *vmcb64(vmcb, VMCB_EXITINFO1),
	    .info2 = *vmcb64(vmcb, VMCB_EXITINFO2),
	};
	svm_decode_exit(f, e);
}

void svm_exit_collect(struct vcpu *v, void *vmcb, const struct svm_exit_fields *f,
		      struct x86_exit *e)
{
	v->arch.gpr[X86_RAX] = *vmcb64(vmcb, VMCB_RAX);
	v->arch.gpr[X86_RSP] = *vmcb64(vmcb, VMCB_RSP);
	v->arch.rip = *vmcb64(vmcb, VMCB_RIP);
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_NONE; // the last VMRUN flushed
	if (f->code == SVM_EXIT_EXC_DB && v->arch.nmi.stepping) {
		svm_nmi_step_end(&v->arch.nmi, vmcb, v->arch.rip); // may queue the guest's #DB
		e->kind = X86_EXIT_NMI_WINDOW;
	}
	x86_nmi_progress(&v->arch.nmi, v->arch.rip);
	if (f->code == SVM_EXIT_SMI && svm_take_host_smi())
		e->kind = X86_EXIT_NMI; // taken with the SMI: the policy decides what it was
	else if (e->kind == X86_EXIT_NMI)
		svm_take_host_nmi(); // before the policy decides what it was
}

// Before the primary's vCPU (L1) runs again: a start-up the mailbox holds,
// the NMIs it may take.
static void svm_before_primary_entry(struct svm_cpu *c)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;
	uint8_t vector;

	if (x86_mailbox_poll(v, &vector))
		svm_vmcb_sipi_reset(c, vector);
	if (svm_nested_gif(c)) // L1's GIF clear: its NMIs wait for STGI (which exits)
		svm_nmi_apply(&v->arch.nmi, vmcb);
}

// Decode, the shared policy, apply.
static void svm_exit_body(struct svm_cpu *c)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;
	uint64_t intinfo = *vmcb64(vmcb, VMCB_EXITINTINFO);
	struct svm_exit_fields f;
	struct x86_exit e;

	c->vmsaved = false;
	svm_exit_read(vmcb, &f, &e);
	if (e.kind == X86_EXIT_IO && svm_io_fast(c, vmcb, &e, intinfo))
		return;
	c->next_rip = e.next_rip;
	svm_exit_collect(v, vmcb, &f, &e);

	// Nested SVM: L1's SVM instructions, and its writes to the pages that
	// hold its nested page tables; everything else is the shared policy's.
	bool nested = (e.kind == X86_EXIT_VIRT_INSN && svm_nested_insn(c, f.code)) ||
		      (f.code == SVM_EXIT_NPF && svm_nested_l1_write_fault(c, f.info2, f.info1));
	if (!nested)
		x86_apply_action(v, x86_handle_exit(v, &e));

	// An event whose delivery the exit interrupted is delivered again, unless
	// the handler queued an exception of its own.
	svm_event_redeliver(vmcb, intinfo);
	*vmcb64(vmcb, VMCB_RIP) = v->arch.rip;
	*vmcb64(vmcb, VMCB_RAX) = v->arch.gpr[X86_RAX];
	*vmcb64(vmcb, VMCB_RSP) = v->arch.gpr[X86_RSP];
	if (!c->nested.in_l2) // after L1's VMRUN, its events wait for its #VMEXIT
		svm_before_primary_entry(c);
}

// A #VMEXIT that saved the host's state as the guest's loses the guest's
// (svm_vmcb_holds_host_state). Seen about once in 25 runs of
// t_x86_svm_secondary under QEMU TCG (docs/secondary-vms-x86.md); this names
// the exit that brought it and the one before, once per exit code, for the
// guest the CPU's VMRUN just left (c->run_vmcb_pa: the primary's vCPU or a
// secondary's, `kind` and `index` naming it).
static struct log_once host_state_logged;

// The guest state a VMRUN refused (VMEXIT_INVALID), each time (the vCPU stops):
// the consistency checks of AMD APM vol. 2, 15.5.1 look at these. An SMM
// state (EFER 0, CS base SMBASE, RIP near 0x8000) means SMM code ran in
// guest mode (svm_take_host_smi).
static void svm_log_refused_state(void *vmcb, const char *kind, unsigned index, uint64_t prev)
{
	log_err("svm: VMRUN refused %s vcpu%u's state after exit 0x%llx: EFER 0x%llx CR0 0x%llx "
		"CR4 0x%llx CS 0x%x base 0x%llx RIP 0x%llx\n",
		kind, index, (unsigned long long)prev, (unsigned long long)*vmcb64(vmcb, VMCB_EFER),
		(unsigned long long)*vmcb64(vmcb, VMCB_CR0),
		(unsigned long long)*vmcb64(vmcb, VMCB_CR4), (unsigned)*vmcb16(vmcb, VMCB_CS),
		(unsigned long long)*vmcb64(vmcb, VMCB_CS + 8),
		(unsigned long long)*vmcb64(vmcb, VMCB_RIP));
}

void svm_check_guest_state(struct svm_cpu *c, const char *kind, unsigned index)
{
	void *vmcb = (void *)(uintptr_t)c->run_vmcb_pa, *hsave = (void *)(uintptr_t)c->hsave_pa;
	uint64_t code = *vmcb64(vmcb, VMCB_EXITCODE), prev = c->last_exit;

	c->last_exit = code;
	if ((code & 0xffffffffu) == 0xffffffffu) // VMEXIT_INVALID: what VMRUN refused
		svm_log_refused_state(vmcb, kind, index, prev);
	if (!svm_vmcb_holds_host_state(vmcb) || !log_once_first(&host_state_logged, code))
		return;
	log_err("svm: %s vcpu%u's VMCB holds Slat's own state (RIP 0x%llx) after exit 0x%llx "
		"(info 0x%llx 0x%llx, intinfo 0x%llx; previous exit 0x%llx): the guest's state was "
		"lost at that #VMEXIT (VMCB 0x%llx, VM_HSAVE_PA 0x%llx, as set 0x%llx with RIP "
		"0x%llx RSP 0x%llx; VMCB RSP 0x%llx)\n",
		kind, index, (unsigned long long)*vmcb64(vmcb, VMCB_RIP), (unsigned long long)code,
		(unsigned long long)*vmcb64(vmcb, VMCB_EXITINFO1),
		(unsigned long long)*vmcb64(vmcb, VMCB_EXITINFO2),
		(unsigned long long)*vmcb64(vmcb, VMCB_EXITINTINFO), (unsigned long long)prev,
		(unsigned long long)c->run_vmcb_pa, (unsigned long long)rdmsr(MSR_VM_HSAVE_PA),
		(unsigned long long)c->hsave_pa, (unsigned long long)*vmcb64(hsave, VMCB_RIP),
		(unsigned long long)*vmcb64(hsave, VMCB_RSP),
		(unsigned long long)*vmcb64(vmcb, VMCB_RSP));
}

// The exit entry. The primary's SLAT shootdown (arch/x86/slat.h) sees this
// CPU out of guest mode for the whole exit; the entry that follows flushes
// the ASID when a shootdown came meanwhile (the body may have cleared
// TLB_CONTROL: "the last VMRUN flushed").
//
// The exit of a nested L2 comes here too (c->nested.in_l2): Slat's to handle
// or L1's (svm_nested_exit); once it went to L1, L1 runs next as after any
// of its own exits. Each L2 entry flushes every ASID (nested_run.c).
void svm_handle_exit(struct svm_cpu *c)
{
	unsigned cpu = c->vcpu->index;

	x86_slat_cpu_exit(cpu);
	if (!c->nested.in_l2) {
		svm_check_guest_state(c, "primary", cpu);
		svm_exit_body(c);
	} else if (!svm_nested_exit(c)) {
		svm_before_primary_entry(c);
	}
	if (x86_slat_cpu_enter(cpu) && !c->nested.in_l2)
		svm_mm_flush_here((void *)(uintptr_t)c->vmcb_pa);
}
