// SPDX-License-Identifier: Apache-2.0
//
// The exit policy of a secondary vCPU, for both x86 back ends: each exit,
// decoded by the back end's own decoder into a struct x86_exit, is either
// handled here (and the vCPU enters again) or becomes an hc_exit for the VMM
// (docs/secondary-vms-x86.md has the table). Exits that wait for the VMM's
// data (IN, MMIO reads, hypercalls) are completed by x86_hv_complete at the
// next RUN.
#include "arch/x86/cpu.h"
#include "arch/x86/cr_check.h"
#include "arch/x86/hv.h"
#include "arch/x86/hv_cpuid.h"
#include "core/log.h"

#define MSR_TSC			0x10u
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID7_EBX_TSC_ADJUST	(1u << 1) // IA32_TSC_ADJUST: the VMM's (ABI 1.15)

// ---- CPUID ----------------------------------------------------------------------
// The CPUID a secondary sees: the VMM's table (VCPU_SET_CPUID), else this
// default: the primary's policy minus XSAVE and what Slat does not emulate for
// a secondary (with the guest's CR4 for OSXSAVE / OSPKE).
static void hv_cpuid_default(uint64_t cr4, uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	x86_cpuid_policy_cr4(cr4, leaf, sub, out);
	if (leaf == X86_NESTED_STATS_LEAF)
		out[0] = out[1] = out[2] = out[3] = 0; // the primary's figures only
	switch (leaf) {
	case 1:
		// The extended state is not switched for XSAVE's sake (only
		// FXSAVE-sized state is kept per vCPU): no XSAVE, OSXSAVE, AVX, FMA, F16C.
		out[2] &= ~((1u << 26) | (1u << 27) | (1u << 28) | (1u << 12) | (1u << 29));
		out[2] &= ~((1u << 24) | (1u << 9)); // TSC deadline, SDBG
		out[3] &= ~(1u << 12);		     // MTRR: a secondary's MTRR MSRs are not kept
		break;
	case 0x80000001:
		out[3] &= ~(1u << 27); // RDTSCP: IA32_TSC_AUX is not kept per vCPU
		out[2] &= ~(1u << 2);  // SVM: nested SVM is the primary's only
		break;
	case 0x8000000a:
		out[0] = out[1] = out[2] = out[3] = 0;
		break;
	case 7:
		if (sub == 0) {
			out[1] &=
			    (1u << 0) | (1u << 3) | (1u << 8) | (1u << 9); // FSGSBASE BMI1/2 ERMS
			out[2] = out[3] = 0;
		} else {
			out[0] = out[1] = out[2] = out[3] = 0;
		}
		break;
	case 0xd:
		out[0] = out[1] = out[2] = out[3] = 0;
		break;
	default:
		break;
	}
}

// The VMM's table once it set one (its feature bits are a subset of
// x86_hv_supported's, checked at VCPU_SET_CPUID; no XSAVE or PKU there, so no
// bit follows CR4), else the default policy.
void x86_hv_cpuid_cr4(struct vcpu *v, uint64_t cr4, uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	const struct x86_hv_vcpu *h = &v->arch.hv;

	if (h->cpuid_n)
		x86_cpuid_lookup((const struct hc_cpuid_entry *)(uintptr_t)h->cpuid_pa, h->cpuid_n,
				 leaf, sub, out);
	else
		hv_cpuid_default(cr4, leaf, sub, out);
}

// What a VMM may give a secondary: the default policy of a guest with CR4 = 0
// (no OS-enabled bits), CPUID_SUPPORTED's table and VCPU_SET_CPUID's bound.
//
// The TSC-deadline timer is the VMM's to offer (ABI 1.5): its LAPIC runs it,
// on any host, through HC_EXIT_MSR; Slat's default policy, which has no VMM
// LAPIC behind it, leaves it out. So is IA32_TSC_ADJUST (ABI 1.15: the VMM
// keeps it and moves the vCPU's TSC offset).
void x86_hv_supported(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	hv_cpuid_default(0, leaf, sub, out);
	if (leaf == 1)
		out[2] |= CPUID1_ECX_TSC_DEADLINE;
	if (leaf == 7 && sub == 0)
		out[1] |= CPUID7_EBX_TSC_ADJUST;
}

// Inside a RUN (the guest's CPUID): CR4 as the guest has it now.
static enum x86_hv_step cpuid_exit(struct vcpu *v)
{
	uint32_t leaf = (uint32_t)v->arch.gpr[X86_RAX], sub = (uint32_t)v->arch.gpr[X86_RCX];
	bool cr4_bits = !v->arch.hv.cpuid_n && (leaf == 1 || (leaf == 7 && sub == 0));
	uint32_t out[4];

	x86_hv_cpuid_cr4(v, cr4_bits ? v->arch.ops->read_cr(v, 4) : 0, leaf, sub, out);
	x86_cpuid_answer(v, out);
	return X86_HV_REENTER;
}

// ---- MSRs: the control block's, the TSC, #GP for the rest --------------------------
static bool efer_write_ok(struct vcpu *v, uint64_t val)
{
	struct x86_cr_state st;
	struct x86_cr_caps caps;

	x86_guest_cr_state(v, &st);
	x86_guest_cr_caps(v, &caps);
	caps.efer_ok &= EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
	return x86_efer_ok(&st, &caps, val);
}

bool x86_canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

bool x86_pat_ok(uint64_t pat)
{
	for (unsigned i = 0; i < 8; i++) {
		unsigned t = (pat >> (8 * i)) & 0xff;
		if (t == 2 || t == 3 || t > 7)
			return false;
	}
	return true;
}

// IA32_APIC_BASE of a secondary: the xAPIC at its reset base, enabled, BSP on
// vCPU 0 (as KVM_GET_SREGS reports it). The guest may write the value it
// reads (a no-op); moving, disabling or x2APIC mode: #GP (not emulated).
static bool apic_base_msr(struct vcpu *v, bool write, uint64_t *val)
{
	uint64_t reset = 0xfee00800ull | (v->index == 0 ? 0x100ull : 0);

	if (write)
		return *val == reset;
	*val = reset;
	return true;
}

// AMD's interrupt-pending message register (K8, family 10h): Linux reads it
// on those families for its E400 C1E check and warns on a #GP. Reads as 0, as
// KVM answers it; writes are not offered.
#define MSR_K8_INT_PENDING_MSG 0xc0010055u

// A secondary's RDMSR / WRMSR inside a RUN: false when the MSR is not kept or
// the value illegal (the guest gets #GP).
static bool hv_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val)
{
	if (msr == MSR_K8_INT_PENDING_MSG && !write) {
		*val = 0;
		return true;
	}
	if (msr == MSR_TSC && !write) {
		*val = rdtsc() + v->arch.hv.tsc_offset;
		return true;
	}
	if (msr == MSR_IA32_APIC_BASE)
		return apic_base_msr(v, write, val);
	if (write && msr == MSR_EFER && !efer_write_ok(v, *val))
		return false;
	return x86_hv_ops_of()->msr(v, msr, write, val);
}

bool x86_hv_msr_stopped(struct vcpu *v, uint32_t msr, bool write, uint64_t *val)
{
	if (msr == MSR_TSC || msr == MSR_EFER) {
		if (write)
			return false;
		if (msr == MSR_TSC) {
			*val = rdtsc() + v->arch.hv.tsc_offset;
			return true;
		}
	}
	if (msr == HC_MSR_TSC_OFFSET) { // any value: the guest's TSC wraps as the host's
		if (write)
			v->arch.hv.tsc_offset = *val;
		*val = v->arch.hv.tsc_offset;
		return true;
	}
	return x86_hv_ops_of()->msr_stopped(v, msr, write, val);
}

// An MSR of a device the VMM emulates (ABI 1.5): IA32_TSC_DEADLINE, while
// the vCPU's CPUID table (the VMM's, never Slat's default) has the timer.
static bool msr_for_vmm(struct vcpu *v, uint32_t msr)
{
	uint32_t out[4];

	if (msr != HC_MSR_TSC_DEADLINE || !v->arch.hv.cpuid_n)
		return false;
	x86_hv_cpuid_cr4(v, 0, 1, 0, out);
	return out[2] & CPUID1_ECX_TSC_DEADLINE;
}

// To the VMM; the instruction completes at the next RUN (x86_hv_complete),
// so a RUN that never comes leaves the guest before it.
static enum x86_hv_step msr_vmm_exit(struct vcpu *v, uint32_t msr, bool write, uint64_t val,
				     struct hc_run *run)
{
	uint64_t at = v->arch.rip;

	if (!x86_skip_insn(v))
		return X86_HV_REENTER; // #UD queued
	v->arch.hv.pend_rip = v->arch.rip;
	v->arch.rip = at;
	v->arch.hv.pending = write ? X86_HV_PEND_WRMSR : X86_HV_PEND_RDMSR;
	v->arch.hv.pend_pe = v->arch.ops->read_cr(v, 0) & CR0_PE; // a #GP's error code
	run->reason = HC_EXIT_MSR;
	run->u.msr.index = msr;
	run->u.msr.is_write = write;
	run->u.msr.data = write ? val : 0;
	return X86_HV_RETURN;
}

// ABI 1.13, with the RUN's msr_exits: an MSR Slat does not keep (it cannot
// read it), so the VMM answers it rather than Slat's #GP. A kept MSR's
// illegal write stays Slat's #GP. 1.15: a write of IA32_TSC is the VMM's
// (it moves the vCPU's TSC offset, by its own rules).
static bool msr_unkept_for_vmm(struct vcpu *v, uint32_t msr, bool write)
{
	uint64_t ignored;

	return v->arch.hv.msr_exits &&
	       ((write && msr == MSR_TSC) || !hv_msr(v, msr, false, &ignored));
}

static enum x86_hv_step msr_exit(struct vcpu *v, bool write, struct hc_run *run)
{
	uint32_t msr = (uint32_t)v->arch.gpr[X86_RCX];
	uint64_t val = (v->arch.gpr[X86_RDX] << 32) | (uint32_t)v->arch.gpr[X86_RAX];

	if (msr_for_vmm(v, msr) || msr_unkept_for_vmm(v, msr, write))
		return msr_vmm_exit(v, msr, write, val, run);
	if (!hv_msr(v, msr, write, &val)) {
		x86_inject_gp0(v);
		return X86_HV_REENTER;
	}
	if (!write) {
		v->arch.gpr[X86_RAX] = (uint32_t)val;
		v->arch.gpr[X86_RDX] = val >> 32;
	}
	x86_skip_insn(v);
	return X86_HV_REENTER;
}

// ---- exits for the VMM ----------------------------------------------------------------
static enum x86_hv_step internal(struct hc_run *run, const struct x86_exit *e, uint64_t info)
{
	run->reason = HC_EXIT_INTERNAL;
	run->u.fail.hw_reason = e->code;
	run->u.fail.info[0] = e->qual;
	run->u.fail.info[1] = info;
	return X86_HV_RETURN;
}

static enum x86_hv_step io_exit(struct vcpu *v, const struct x86_exit *e, struct hc_run *run)
{
	if (e->io.string || !e->next_rip)
		return internal(run, e, 0); // INS/OUTS are not emulated
	run->reason = HC_EXIT_IO;
	run->u.io.port = e->io.port;
	run->u.io.size = e->io.size;
	run->u.io.is_out = !e->io.in;
	run->u.io.count = 1;
	run->u.io.data = e->io.in ? 0 : v->arch.gpr[X86_RAX] & x86_size_mask(e->io.size);
	if (e->io.in) {
		v->arch.hv.pending = X86_HV_PEND_IN;
		v->arch.hv.pend_size = e->io.size;
		v->arch.hv.pend_rip = e->next_rip;
	} else {
		v->arch.rip = e->next_rip;
	}
	return X86_HV_RETURN;
}

// The MOV forms decode.c knows: 88/89 (store reg), 8A/8B (load reg), C6/C7
// (store imm), A0-A3 (AL/eAX <-> moffs), and MOVZX 0F B6/B7 (a load of 1 or
// 2 bytes zero-extended into the operand size, *dest). 8-bit AH..BH (byte
// registers 4-7 without REX) are refused; with REX they are SPL..DIL, the
// registers' low bytes (Linux's writeb(val, addr) can be MOV %DIL, (%RSI)).
static bool mmio_decode(struct vcpu *v, const struct x86_insn *in, bool *store, unsigned *size,
			unsigned *reg, uint64_t *val, unsigned *dest)
{
	uint8_t op = in->opcode;
	bool byte = op == 0x88 || op == 0x8a || op == 0xc6 || op == 0xa0 || op == 0xa2;

	if (in->two_byte) {
		if ((op != 0xb6 && op != 0xb7) || (in->modrm >> 6) == 3)
			return false;
		*size = op == 0xb6 ? 1 : 2;
		*dest = in->op_size;
		*reg = in->reg;
		*store = false;
		*val = 0;
		return true;
	}
	*size = byte ? 1 : in->op_size;
	switch (op) {
	case 0x88:
	case 0x89:
	case 0x8a:
	case 0x8b:
		if ((in->modrm >> 6) == 3 || (byte && !in->rex && in->reg >= 4 && in->reg < 8))
			return false;
		*reg = in->reg;
		*store = op <= 0x89;
		*val = v->arch.gpr[in->reg];
		break;
	case 0xc6:
	case 0xc7:
		if ((in->modrm >> 6) == 3 || ((in->modrm >> 3) & 7))
			return false;
		*store = true;
		*val = in->imm;
		break;
	case 0xa0:
	case 0xa1:
	case 0xa2:
	case 0xa3:
		*reg = X86_RAX;
		*store = op >= 0xa2;
		*val = v->arch.gpr[X86_RAX];
		break;
	default:
		return false;
	}
	*val &= x86_size_mask(*size);
	*dest = *size;
	return true;
}

static enum x86_hv_step mmio_exit(struct vcpu *v, const struct x86_exit *e, struct hc_run *run)
{
	struct x86_insn in;
	bool store = false;
	unsigned size = 0, reg = 0, dest = 0;
	uint64_t val = 0;

	if (e->fetch || !x86_decode(v, &in) ||
	    !mmio_decode(v, &in, &store, &size, &reg, &val, &dest))
		return internal(run, e, e->gpa);
	run->reason = HC_EXIT_MMIO;
	run->u.mmio.gpa = e->gpa;
	run->u.mmio.len = (uint8_t)size;
	run->u.mmio.is_write = store;
	run->u.mmio.data = store ? val : 0;
	if (store) {
		v->arch.rip += in.len;
	} else {
		v->arch.hv.pending = X86_HV_PEND_MMIO_RD;
		v->arch.hv.pend_reg = (uint8_t)reg;
		v->arch.hv.pend_size = (uint8_t)dest;
		v->arch.hv.pend_load = (uint8_t)size;
		v->arch.hv.pend_rip = v->arch.rip + in.len;
	}
	return X86_HV_RETURN;
}

static enum x86_hv_step npf_exit(struct vcpu *v, const struct x86_exit *e, struct hc_run *run,
				 int *rc)
{
	int r = hv_vcpu_fault(v, e->gpa, e->write, e->fetch);

	if (r == S2_FAULT_MAPPED || r == S2_FAULT_RETRY)
		return X86_HV_REENTER;
	if (r == S2_FAULT_MMIO)
		return mmio_exit(v, e, run);
	if (r == S2_FAULT_ABSENT) // the VMM fills the page; the access runs again
		return hv_vcpu_memfault(v, e->gpa, e->write, run) ? X86_HV_RETURN : X86_HV_REENTER;
	if (r == HC_E_NOMEM) {
		*rc = HC_E_NOMEM; // the access runs again after the VMM deposited
		return X86_HV_RETURN;
	}
	return internal(run, e, e->gpa);
}

static enum x86_hv_step hypercall_exit(struct vcpu *v, struct hc_run *run)
{
	static const unsigned arg_regs[6] = {X86_RBX, X86_RCX, X86_RDX, X86_RSI, X86_RDI, X86_R8};

	if (!x86_skip_insn(v))
		return X86_HV_REENTER; // #UD queued
	run->reason = HC_EXIT_HYPERCALL;
	run->u.hcall.nr = v->arch.gpr[X86_RAX];
	for (unsigned i = 0; i < 6; i++)
		run->u.hcall.args[i] = v->arch.gpr[arg_regs[i]];
	for (unsigned i = 0; i < 4; i++)
		run->u.hcall.ret[i] = 0;
	v->arch.hv.pending = X86_HV_PEND_HCALL;
	v->arch.hv.pend_rip = v->arch.rip;
	return X86_HV_RETURN;
}

// An NMI: Slat's kick (core flushes or stops the vCPU: enter again, unless
// the primary has an INIT waiting) or the primary's own, held for it.
static enum x86_hv_step nmi_exit(struct vcpu *caller, struct hc_run *run)
{
	if (x86_consume_kick(caller)) {
		if (!x86_mailbox_pending(caller) && !vm_is_shutting_down(caller->vm))
			return X86_HV_REENTER;
	} else {
		x86_nmi_raise(&caller->arch.nmi); // injected when the primary resumes
	}
	run->reason = HC_EXIT_PREEMPTED;
	return X86_HV_RETURN;
}

enum x86_hv_step x86_hv_exit(struct vcpu *caller, struct vcpu *v, const struct x86_exit *e,
			     struct hc_run *run, int *rc)
{
	vcpu_count_exit(v, x86_exit_class(e->kind));
	switch (e->kind) {
	case X86_EXIT_INTR:
	case X86_EXIT_INIT:
		run->reason = HC_EXIT_PREEMPTED; // the primary takes it once back in guest mode
		return X86_HV_RETURN;
	case X86_EXIT_NMI:
		return nmi_exit(caller, run);
	case X86_EXIT_IRQ_WINDOW: // the entry loop injects or ends the RUN (hv.c)
	case X86_EXIT_NMI_WINDOW: // the back end's NMI bookkeeping (svm/hv.c)
		return X86_HV_REENTER;
	case X86_EXIT_CPUID:
		return cpuid_exit(v);
	case X86_EXIT_RDMSR:
	case X86_EXIT_WRMSR:
		return msr_exit(v, e->kind == X86_EXIT_WRMSR, run);
	case X86_EXIT_IO:
		return io_exit(v, e, run);
	case X86_EXIT_SLAT_VIOLATION:
		return npf_exit(v, e, run, rc);
	case X86_EXIT_HYPERCALL:
		return hypercall_exit(v, run);
	case X86_EXIT_HLT:
		if (!x86_skip_insn(v))
			return X86_HV_REENTER;
		run->reason = HC_EXIT_HALT;
		return X86_HV_RETURN;
	case X86_EXIT_MWAIT:
	case X86_EXIT_MONITOR:
	case X86_EXIT_XSETBV:
	case X86_EXIT_VIRT_INSN:
	case X86_EXIT_CACHE_FLUSH: // INVD would drop the host's data: #UD
		x86_inject_ud(v);
		return X86_HV_REENTER;
	case X86_EXIT_TRIPLE_FAULT:
		run->reason = HC_EXIT_SHUTDOWN;
		return X86_HV_RETURN;
	case X86_EXIT_BAD_STATE:
		run->reason = HC_EXIT_FAIL_ENTRY;
		run->u.fail.hw_reason = e->code;
		run->u.fail.info[0] = e->qual;
		run->u.fail.info[1] = 0;
		return X86_HV_RETURN;
	default:
		return internal(run, e, 0);
	}
}

// ---- completion on the next RUN -------------------------------------------------
void x86_hv_complete(struct vcpu *v, const struct hc_run *run)
{
	struct x86_hv_vcpu *h = &v->arch.hv;

	switch (h->pending) {
	case X86_HV_PEND_IN:
		x86_put_reg(&v->arch.gpr[X86_RAX], run->u.io.data, h->pend_size);
		v->arch.rip = h->pend_rip;
		break;
	case X86_HV_PEND_MMIO_RD: // MOVZX: the bytes loaded, zero-extended
		x86_put_reg(&v->arch.gpr[h->pend_reg & 15],
			    run->u.mmio.data &
				x86_size_mask(h->pend_load ? h->pend_load : h->pend_size),
			    h->pend_size);
		v->arch.rip = h->pend_rip;
		break;
	case X86_HV_PEND_HCALL:
		v->arch.gpr[X86_RAX] = run->u.hcall.ret[0];
		v->arch.gpr[X86_RBX] = run->u.hcall.ret[1];
		v->arch.gpr[X86_RCX] = run->u.hcall.ret[2];
		v->arch.gpr[X86_RDX] = run->u.hcall.ret[3];
		break;
	case X86_HV_PEND_RDMSR:
	case X86_HV_PEND_WRMSR:
		if (run->u.msr.fault) { // 1.13: the VMM refused it; RIP stays at it
			// Delivered at the entry (the control block is not loaded yet):
			// #GP(0), in the EXITINTINFO layout hv.c keeps; real mode has
			// no error codes (VM entry refuses one there).
			h->intinfo = HC_EVENT_VALID | HC_EVENT_EXC | X86_EXC_GP |
				     (h->pend_pe ? HC_EVENT_ERR : 0);
			break;
		}
		if (h->pending == X86_HV_PEND_WRMSR) {
			v->arch.rip = h->pend_rip;
			break;
		}
		v->arch.gpr[X86_RAX] = (uint32_t)run->u.msr.data;
		v->arch.gpr[X86_RDX] = run->u.msr.data >> 32;
		v->arch.rip = h->pend_rip;
		break;
	default:
		break;
	}
	h->pending = X86_HV_PEND_NONE;
}
