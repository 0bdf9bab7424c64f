// SPDX-License-Identifier: Apache-2.0
//
// VM exits of the primary's vCPUs on VT-x: the exit entry (vmx_handle_exit:
// decode, the shared policy of arch/x86/handle_exit.c, apply to the VMCS)
// and the primary's hooks in vmx_vcpu_ops (vcpu.c) for what is VMX hardware:
// CR access with guest/host masks and read shadows, parking (HLT/MWAIT
// exiting), INIT/SIPI (mailbox, or the native wait-for-SIPI state), NMI
// injection, the report of a failed VM entry.
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/slat.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

static struct vmx_pcpu *pcpu_of(struct vcpu *v)
{
	return v->arch.backend;
}

// ---- control registers ------------------------------------------------------------
static void flush_guest_tlb(void)
{
	if (vmx_cfg.vpid)
		vmx_invvpid(vmx_cfg.invvpid_single ? INVVPID_SINGLE : INVVPID_ALL, VMX_VPID, 0);
}

static enum x86_action emulate_cr0(struct vcpu *v, uint64_t val)
{
	const struct vmx_config *c = &vmx_cfg;
	uint64_t old = vmread(VMCS_GUEST_CR0);

	if (!x86_guest_cr_ok(v, 0, val))
		return x86_inject_gp0(v);
	uint64_t real = (val | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1;
	vmwrite(VMCS_CR0_SHADOW, val);
	vmwrite(VMCS_GUEST_CR0, real);
	if ((old ^ real) & CR0_PG)
		vmx_set_efer(v, vmread(VMCS_GUEST_EFER)); // LMA and the IA-32e entry control
	if ((old ^ real) & (CR0_PG | CR0_PE | (1ull << 16)))
		flush_guest_tlb();
	x86_skip_insn(v);
	return X86_CONTINUE;
}

static enum x86_action emulate_cr4(struct vcpu *v, uint64_t val)
{
	const struct vmx_config *c = &vmx_cfg;

	// Bits the guest's CPUID does not enumerate (VMXE: VMX is hidden),
	// PAE/LA57/PCIDE rules: #GP, as on a CPU without them (cr_check.c).
	if (!x86_guest_cr_ok(v, 4, val) || (val & c->cr4_mask & ~c->cr4_fixed0))
		return x86_inject_gp0(v);
	vmwrite(VMCS_CR4_SHADOW, val);
	vmwrite(VMCS_GUEST_CR4, val | c->cr4_fixed0);
	flush_guest_tlb();
	x86_skip_insn(v);
	return X86_CONTINUE;
}

// Exit qualification (SDM vol. 3, table 28-3): CR in 3:0, type in 5:4
// (0 MOV to CR, 1 MOV from CR, 2 CLTS, 3 LMSW), GPR in 11:8, LMSW data 31:16.
enum x86_action vmx_cr_access(struct vcpu *v, const struct x86_exit *e)
{
	uint64_t q = e->qual;
	unsigned cr = q & 15, type = (q >> 4) & 3, reg = (q >> 8) & 15;

	switch (type) {
	case 0:
		if (cr == 0)
			return emulate_cr0(v, v->arch.gpr[reg]);
		if (cr == 4)
			return emulate_cr4(v, v->arch.gpr[reg]);
		if (cr == 3) { // only with CR3-load exiting forced on
			vmwrite(VMCS_GUEST_CR3, v->arch.gpr[reg] & ~(1ull << 63));
			flush_guest_tlb();
			x86_skip_insn(v);
			return X86_CONTINUE;
		}
		break;
	case 1:
		if (cr == 3) {
			v->arch.gpr[reg] = vmread(VMCS_GUEST_CR3);
			x86_skip_insn(v);
			return X86_CONTINUE;
		}
		break;
	case 2: // CLTS: TS is not owned, so this exits only if TS were
		return emulate_cr0(v, vmread(VMCS_CR0_SHADOW) & ~(1ull << 3));
	case 3: { // LMSW: low 4 bits; cannot clear PE
		uint64_t sh = vmread(VMCS_CR0_SHADOW), src = (q >> 16) & 0xf;
		return emulate_cr0(v, (sh & ~0xeull) | (src & 0xe) | ((sh | src) & 1));
	}
	}
	log_err("vmx: unexpected CR access exit (qualification 0x%llx) on vcpu%u\n",
		(unsigned long long)q, v->index);
	return x86_inject_ud(v);
}

// ---- parking, INIT/SIPI ----------------------------------------------------------
static void set_proc_bits(uint32_t bits, bool on)
{
	uint32_t p = (uint32_t)vmread(VMCS_PROC_CTLS);

	p = on ? p | bits : p & ~bits;
	vmwrite(VMCS_PROC_CTLS,
		p & (uint32_t)(rdmsr(vmx_cfg.basic & (1ull << 55) ? MSR_VMX_TRUE_PROCBASED
								  : MSR_VMX_PROCBASED) >>
			       32));
}

// Parked CPUs exit on HLT and MWAIT so that they notice their mailbox.
void vmx_set_parked(struct vmx_pcpu *pc, bool parked)
{
	pc->monitor_armed = false;
	set_proc_bits(PROC_HLT_EXIT | PROC_MWAIT_EXIT | PROC_MONITOR_EXIT, parked);
}

// The state a SIPI gives (SDM vol. 3, 9.4 / 10.4): real mode at vector:0000.
static void sipi_state(struct vcpu *v, uint8_t vector)
{
	const struct vmx_config *c = &vmx_cfg;
	uint64_t cr0 = 0x60000010ull;

	for (unsigned s = VMX_ES; s <= VMX_GS; s++) {
		vmwrite(VMCS_GUEST_ES_SEL + 2 * s, 0);
		vmwrite(VMCS_GUEST_ES_BASE + 2 * s, 0);
		vmwrite(VMCS_GUEST_ES_LIMIT + 2 * s, 0xffff);
		vmwrite(VMCS_GUEST_ES_AR + 2 * s, 0x93);
	}
	vmwrite(VMCS_GUEST_ES_SEL + 2 * VMX_CS, (uint64_t)vector << 8);
	vmwrite(VMCS_GUEST_ES_BASE + 2 * VMX_CS, (uint64_t)vector << 12);
	vmwrite(VMCS_GUEST_ES_AR + 2 * VMX_CS, 0x9b);
	vmwrite(VMCS_GUEST_ES_SEL + 2 * VMX_LDTR, 0);
	vmwrite(VMCS_GUEST_ES_BASE + 2 * VMX_LDTR, 0);
	vmwrite(VMCS_GUEST_ES_LIMIT + 2 * VMX_LDTR, 0xffff);
	vmwrite(VMCS_GUEST_ES_AR + 2 * VMX_LDTR, 0x82);
	vmwrite(VMCS_GUEST_ES_SEL + 2 * VMX_TR, 0);
	vmwrite(VMCS_GUEST_ES_BASE + 2 * VMX_TR, 0);
	vmwrite(VMCS_GUEST_ES_LIMIT + 2 * VMX_TR, 0xffff);
	vmwrite(VMCS_GUEST_ES_AR + 2 * VMX_TR, 0x8b);
	vmwrite(VMCS_GUEST_GDTR_BASE, 0);
	vmwrite(VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmwrite(VMCS_GUEST_IDTR_BASE, 0);
	vmwrite(VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmwrite(VMCS_CR0_SHADOW, cr0);
	vmwrite(VMCS_GUEST_CR0, (cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	vmwrite(VMCS_GUEST_CR3, 0);
	vmwrite(VMCS_CR4_SHADOW, 0);
	vmwrite(VMCS_GUEST_CR4, c->cr4_fixed0);
	vmwrite(VMCS_GUEST_EFER, 0);
	vmwrite(VMCS_ENTRY_CTLS, vmread(VMCS_ENTRY_CTLS) & ~(uint64_t)ENTRY_IA32E_GUEST);
	vmwrite(VMCS_GUEST_DR7, 0x400);
	vmwrite(VMCS_GUEST_RFLAGS, 0x2);
	vmwrite(VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmwrite(VMCS_GUEST_ACTIVITY, 0);
	vmwrite(VMCS_GUEST_PENDING_DBG, 0);
	vmwrite(VMCS_ENTRY_INTR_INFO, 0);
	x86_nmi_reset(&v->arch.nmi);
	for (unsigned i = 0; i < X86_NR_GPRS; i++)
		v->arch.gpr[i] = 0;
	v->arch.rip = 0;
	flush_guest_tlb();
}

// Mailbox: after any exit, an INIT for this CPU stops it until a SIPI; the
// SIPI restarts it in real mode. It stays parked (HLT exiting) until it
// idles with interrupts on.
static void check_mailbox(struct vcpu *v)
{
	uint8_t vector;

	if (!x86_mailbox_poll(v, &vector))
		return;
	log_debug("vmx: vcpu%u: INIT-SIPI, starting at 0x%x:0000\n", v->index, vector << 8);
	sipi_state(v, vector);
	vmx_set_parked(pcpu_of(v), true);
}

// MONITOR of a parked CPU: remember the armed address (guest-linear,
// DS-relative as the instruction uses it) so that MWAIT can watch it.
static enum x86_action handle_monitor(struct vcpu *v)
{
	struct vmx_pcpu *pc = pcpu_of(v);
	struct x86_seg ds;

	v->arch.ops->read_seg(v, X86_DS, &ds);
	pc->monitor_la = ds.base + v->arch.gpr[X86_RAX];
	pc->monitor_armed = true;
	x86_skip_insn(v);
	return X86_CONTINUE;
}

// HLT or MWAIT of a parked CPU. Interrupts off (the firmware's or the OS's
// AP parking loop): wait in the host until the mailbox has something or, for
// MWAIT, the monitored memory changes (the firmware wakes MWAIT-parked APs
// by writing there). Interrupts on, or MWAIT with interrupts as break
// events: the OS idles; HLT/MWAIT go back to the hardware for good.
static enum x86_action handle_park(struct vcpu *v, bool mwait)
{
	struct vmx_pcpu *pc = pcpu_of(v);
	bool irq_break = mwait && (v->arch.gpr[X86_RCX] & 1);
	uint64_t seen = 0, now = 0;

	if ((vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF) || irq_break) {
		vmx_set_parked(pc, false); // re-executed natively
		return X86_CONTINUE;
	}
	bool watch = mwait && pc->monitor_armed &&
		     x86_guest_read_linear(v, pc->monitor_la, &seen, sizeof(seen));
	pc->monitor_armed = false;
	// The boot CPU never waits for a SIPI: an unwatched MWAIT returns (MWAIT
	// may wake for any reason); a HLT still waits for an NMI or an INIT.
	if (pc->bsp && mwait && !watch) {
		x86_skip_insn(v);
		return X86_CONTINUE;
	}
	log_debug("vmx: vcpu%u parks in root mode (%s, RIP 0x%llx)\n", v->index,
		  mwait ? "MWAIT" : "HLT", (unsigned long long)v->arch.rip);
	// An NMI for the guest (taken in root, vmx_host_nmi) ends the halt too:
	// the HLT completes and the NMI is injected after it.
	while (!x86_mailbox_pending(v) && !v->arch.nmi.pending) {
		if (vm_is_shutting_down(v->vm))
			x86_park();
		if (watch &&
		    (!x86_guest_read_linear(v, pc->monitor_la, &now, sizeof(now)) || now != seen))
			break;
		pause();
	}
	x86_skip_insn(v);
	return X86_CONTINUE;
}

// Native wait-for-SIPI (real VT-x; Bochs 2.7 breaks it, see the doc).
enum x86_action vmx_init_sipi(struct vcpu *v, const struct x86_exit *e)
{
	if (e->kind == X86_EXIT_INIT)
		vmwrite(VMCS_GUEST_ACTIVITY, 3); // wait-for-SIPI
	else
		sipi_state(v, e->sipi_vector);
	return X86_CONTINUE;
}

// x86_vcpu_ops.wait: HLT, MWAIT or MONITOR.
enum x86_action vmx_wait(struct vcpu *v, const struct x86_exit *e)
{
	if (e->kind == X86_EXIT_MONITOR)
		return handle_monitor(v);
	return handle_park(v, e->kind == X86_EXIT_MWAIT);
}

// ---- NMIs and kicks ----------------------------------------------------------------
// NMI exiting is on so that another CPU can make this one exit while its
// guest runs without exits (an OS that halted it with HLT not intercepted,
// e.g. CPU offline): the sender of an INIT kicks it with an NMI
// (x86_vm_ops.kick). NMIs that were not kicks belong to the guest and are
// injected back. Sending and consuming kicks: apic_mailbox.c.

// An NMI taken in root operation (host IDT vector 2): a kick that arrived
// while this CPU was in the host, or the guest's, to be injected.
void vmx_host_nmi(void)
{
	struct vcpu *v = vm_vcpu_find(&x86_primary, cpuid(1, 0).ebx >> 24);

	if (v && v->arch.backend && !x86_consume_kick(v))
		x86_nmi_raise(&v->arch.nmi);
}

// Before an entry of any vCPU, the primary's or a secondary's (vmx/hv.c),
// its VMCS current: inject a held NMI when the guest can take it, else ask
// for an NMI-window exit (`window`: NMI-window exiting is there) or wait for
// a later exit. Blocked by the NMI blocking the CPU keeps, and by STI or
// MOV SS blocking (as KVM's vmx_nmi_blocked: a CPU may hold an NMI back in an
// STI shadow, and VM entry refuses one injected under MOV SS blocking); the
// event slot must be free.
void vmx_nmi_apply(struct x86_nmi_state *s, bool window)
{
	uint32_t intr = (uint32_t)vmread(VMCS_GUEST_INTERRUPTIBILITY);

	s->blocked = intr & INTERRUPTIBILITY_NMI; // the CPU keeps it: no IRET watch
	s->iret_seen = false;
	bool slot_free =
	    !(vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_VALID) && !(intr & INTERRUPTIBILITY_SHADOW);
	struct x86_nmi_plan p = x86_nmi_plan(s, slot_free);

	if (p.inject)
		vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_VALID | VMX_INTR_NMI | 2);
	if (window)
		set_proc_bits(PROC_NMI_WINDOW, p.want_window);
}

// An event whose delivery an exit interrupted (`idt`: its IDT-vectoring
// information, the error code in bits 63:32) is delivered again at the next
// entry, unless the handler queued an event; a software interrupt or
// exception needs the instruction length the exit reported (`insn_len`).
// The primary's vCPUs and secondaries alike.
void vmx_event_redeliver(uint64_t idt, uint32_t insn_len)
{
	if (!(idt & VMX_INTR_VALID) || (vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_VALID))
		return;
	vmwrite(VMCS_ENTRY_INTR_INFO, (uint32_t)idt & ~(1u << 12));
	if (idt & VMX_INTR_ERROR)
		vmwrite(VMCS_ENTRY_EXC_ERROR, idt >> 32);
	vmwrite(VMCS_ENTRY_INSN_LEN, insn_len);
}

// The exit's IDT-vectoring information with its error code in bits 63:32
// (the EXITINTINFO layout secondaries keep, x86_hv_vcpu.intinfo); 0 when none.
uint64_t vmx_exit_intinfo(void)
{
	uint64_t idt = (uint32_t)vmread(VMCS_IDT_VECT_INFO);

	if ((idt & VMX_INTR_VALID) && (idt & VMX_INTR_ERROR))
		idt |= vmread(VMCS_IDT_VECT_ERROR) << 32;
	return idt;
}

// ---- dispatch ---------------------------------------------------------------------
// A failed VM entry: the guest state the CPU refused, for the log (the
// policy, x86_handle_exit, then powers off).
static void entry_failed_report(struct vcpu *v, uint32_t reason)
{
	log_err(
	    "vmx: VM entry failed on vcpu%u: exit reason 0x%x, qualification 0x%llx, RIP "
	    "0x%llx, CR0 0x%llx CR4 0x%llx EFER 0x%llx entry 0x%llx\n",
	    v->index, reason, (unsigned long long)vmread(VMCS_EXIT_QUAL),
	    (unsigned long long)vmread(VMCS_GUEST_RIP), (unsigned long long)vmread(VMCS_GUEST_CR0),
	    (unsigned long long)vmread(VMCS_GUEST_CR4), (unsigned long long)vmread(VMCS_GUEST_EFER),
	    (unsigned long long)vmread(VMCS_ENTRY_CTLS));
}

// A primary vCPU's exit (its GPRs in v->arch.gpr): decode, the shared
// policy, apply.
static void vmx_handle_exit(struct vmx_pcpu *pc)
{
	struct vcpu *v = pc->vcpu;
	x86_slat_cpu_exit(pc->index); // out of guest mode until vmx_ept_sync
	const struct vmx_exit_fields f = {
	    .reason = (uint32_t)vmread(VMCS_EXIT_REASON),
	    .qual = vmread(VMCS_EXIT_QUAL),
	    .gpa = vmread(VMCS_GUEST_PHYS_ADDR),
	    .intr_info = (uint32_t)vmread(VMCS_EXIT_INTR_INFO),
	};
	unsigned reason = f.reason & 0xffff;
	struct x86_exit e;

	v->arch.gpr[X86_RSP] = vmread(VMCS_GUEST_RSP);
	v->arch.rip = vmread(VMCS_GUEST_RIP);
	if (reason < VMX_EXIT_REASONS)
		pc->exits_by_reason[reason]++;
	vmx_decode_exit(&f, &e);
	if (e.kind == X86_EXIT_NMI)
		x86_nmi_unblock(); // the exit left NMIs blocked: kicks must reach us again
	if (f.reason & (1u << 31))
		entry_failed_report(v, f.reason);

	x86_apply_action(v, x86_handle_exit(v, &e));
	if (!vmx_cfg.native_sipi)
		check_mailbox(v);
	vmx_event_redeliver(vmx_exit_intinfo(), (uint32_t)vmread(VMCS_EXIT_INSN_LEN));
	vmx_ept_sync(pc->index);
	vmx_nmi_apply(&v->arch.nmi, vmx_cfg.nmi_window);

	vmwrite(VMCS_GUEST_RSP, v->arch.gpr[X86_RSP]);
	vmwrite(VMCS_GUEST_RIP, v->arch.rip);
}

static void vmx_resume_failed(struct vmx_pcpu *pc)
{
	uint64_t err = vmread(VMCS_INSN_ERROR);

	log_err("vmx: VMRESUME failed on vcpu%u: VM-instruction error %llu (%s)\n", pc->index,
		(unsigned long long)err, vmx_insn_error_name(err));
	x86_vm_shutdown(pc->vcpu, false, 0, 0, 0);
}

void vmx_primary_loop(void *arg)
{
	struct vmx_pcpu *pc = arg;

	for (;;) {
		if (vmx_enter_guest(pc->vcpu->arch.gpr, pc->launched)) {
			if (!pc->launched)
				return; // cpu_launch reports it and leaves VMX operation
			vmx_resume_failed(pc);
		}
		pc->launched = true;
		vmx_handle_exit(pc);
	}
}
