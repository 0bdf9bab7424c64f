// SPDX-License-Identifier: Apache-2.0
//
// The VMX vCPU operations (struct x86_vcpu_ops): one table, vmx_vcpu_ops,
// for the primary's vCPUs and secondary vCPUs. They act on the current VMCS;
// invariant (kept by the world switch, hv.c): while a vCPU's exit is handled
// the current VMCS is its own (its CPU's for a primary vCPU, its deposited
// one for a secondary between begin and end of a RUN). The vCPU's kind is
// data, its VM record (vmx_secondary): it decides where the VMCS lives, the
// CR0/CR4 view (a secondary's owned bits from the read shadows, the primary's
// real values) and how guest-physical memory is read (a secondary's through
// its EPT). wait, cr_access and init_sipi serve the primary's exit policy
// (x86_handle_exit); a secondary's (x86_hv_exit) calls none of them.
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/vmx/vmx.h"

uint64_t vmx_vmcs_of(struct vcpu *v)
{
	if (vmx_secondary(v))
		return v->arch.hv.vmcb_pa;
	return ((struct vmx_pcpu *)v->arch.backend)->vmcs_pa;
}

// CR0 / CR4 as the guest reads them: the bits in `owned` from the read shadow.
static uint64_t guest_cr(uint64_t real_field, uint64_t shadow_field, uint64_t owned)
{
	return (vmread(real_field) & ~owned) | (vmread(shadow_field) & owned);
}

static uint64_t op_read_cr(struct vcpu *v, unsigned n)
{
	bool view = vmx_secondary(v);

	switch (n) {
	case 0:
		return guest_cr(VMCS_GUEST_CR0, VMCS_CR0_SHADOW, view ? vmx_hv.cr0_mask : 0);
	case 2:
		return read_cr2(); // not switched by VMX: the live CR2 is the guest's
	case 3:
		return vmread(VMCS_GUEST_CR3);
	default:
		return guest_cr(VMCS_GUEST_CR4, VMCS_CR4_SHADOW, view ? vmx_hv.cr4_mask : 0);
	}
}

static uint64_t op_read_efer(struct vcpu *v)
{
	return vmread(VMCS_GUEST_EFER);
}

// LMA follows LME and CR0.PG; the IA-32e entry control follows LMA. For a
// WRMSR (checked by the policy: LME never changes while paging is on) this
// keeps LMA as the CPU had it; after an emulated CR0.PG change it sets it.
void vmx_set_efer(struct vcpu *v, uint64_t efer)
{
	if ((efer & EFER_LME) && (vmread(VMCS_GUEST_CR0) & CR0_PG))
		efer |= EFER_LMA;
	else
		efer &= ~EFER_LMA;
	vmwrite(VMCS_GUEST_EFER, efer);
	uint64_t entry = vmread(VMCS_ENTRY_CTLS) & ~(uint64_t)ENTRY_IA32E_GUEST;
	vmwrite(VMCS_ENTRY_CTLS, entry | (efer & EFER_LMA ? ENTRY_IA32E_GUEST : 0));
}

static uint64_t op_read_rflags(struct vcpu *v)
{
	return vmread(VMCS_GUEST_RFLAGS);
}

static void op_read_seg(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out)
{
	// x86_seg_reg and vmx_seg share the ES CS SS DS FS GS order.
	out->sel = (uint16_t)vmread(VMCS_GUEST_ES_SEL + 2 * s);
	out->base = vmread(VMCS_GUEST_ES_BASE + 2 * s);
	out->limit = (uint32_t)vmread(VMCS_GUEST_ES_LIMIT + 2 * s);
	out->attr = vmx_attr_of((uint32_t)vmread(VMCS_GUEST_ES_AR + 2 * s));
}

static void op_inject(struct vcpu *v, unsigned vector, bool has_error, uint32_t error)
{
	// Real mode has no error codes (VM entry refuses one there). PE is never
	// an owned bit: the real CR0 and the guest's view agree on it.
	if (!(vmread(VMCS_GUEST_CR0) & CR0_PE))
		has_error = false;
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_VALID | VMX_INTR_HW_EXC | (vector & 0xff) |
					  (has_error ? VMX_INTR_ERROR : 0));
	if (has_error)
		vmwrite(VMCS_ENTRY_EXC_ERROR, error);
}

// The VM-exit instruction-length field is defined only for the exits the SDM
// lists (vol. 3, 28.2.5): instruction intercepts. Of those, the ones Slat
// completes by advancing RIP, for both kinds of vCPU; for every other exit
// (EPT violation or misconfiguration, exception, interrupt, window, INIT,
// failed entry) 0, and the caller decodes the instruction. The reason is the
// current VMCS's: that of the vCPU whose exit is handled.
static unsigned op_insn_len(struct vcpu *v)
{
	switch (vmread(VMCS_EXIT_REASON) & 0xffff) {
	case VMX_EXIT_CPUID:
	case VMX_EXIT_HLT:
	case VMX_EXIT_INVD:
	case VMX_EXIT_VMCALL:
	case VMX_EXIT_CR:
	case VMX_EXIT_IO:
	case VMX_EXIT_RDMSR:
	case VMX_EXIT_WRMSR:
	case VMX_EXIT_MWAIT:
	case VMX_EXIT_MONITOR:
	case VMX_EXIT_PAUSE:
	case VMX_EXIT_WBINVD:
	case VMX_EXIT_XSETBV:
		return (unsigned)vmread(VMCS_EXIT_INSN_LEN);
	default:
		return 0;
	}
}

// The instruction Slat emulated completed: no STI/MOV SS blocking after it;
// a single-stepping guest takes its #DB trap. VMX does not switch DR6, so
// the guest's DR6 is the live one: BS is set there, and the #DB injected as
// a hardware exception (a pending MOV SS trap merges into it). Secondaries
// never ask for the trap (arch_hv_run passes false). A secondary whose VMCS
// could not be made current (cb_bad) gets nothing written.
static void op_complete_insn(struct vcpu *v, bool single_step)
{
	if (v->arch.hv.cb_bad)
		return;
	vmwrite(VMCS_GUEST_INTERRUPTIBILITY,
		vmread(VMCS_GUEST_INTERRUPTIBILITY) & ~(uint64_t)INTERRUPTIBILITY_SHADOW);
	if (!single_step)
		return;
	write_dr6(read_dr6() | DR6_BS);
	vmwrite(VMCS_GUEST_PENDING_DBG, vmread(VMCS_GUEST_PENDING_DBG) & ~DR6_BS);
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_VALID | VMX_INTR_HW_EXC | X86_EXC_DB);
}

static bool op_read_phys(struct vcpu *v, uint64_t gpa, void *buf, unsigned len)
{
	if (vmx_secondary(v))
		return x86_hv_read_phys(v, gpa, buf, len);
	return x86_guest_read_phys(gpa, buf, len);
}

const struct x86_vcpu_ops vmx_vcpu_ops = {
    .read_cr = op_read_cr,
    .read_efer = op_read_efer,
    .write_efer = vmx_set_efer,
    .read_rflags = op_read_rflags,
    .read_seg = op_read_seg,
    .inject = op_inject,
    .insn_len = op_insn_len,
    .complete_insn = op_complete_insn,
    .wait = vmx_wait,
    .cr_access = vmx_cr_access,
    .init_sipi = vmx_init_sipi,
    .read_phys = op_read_phys,
};
