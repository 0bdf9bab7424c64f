// SPDX-License-Identifier: Apache-2.0
//
// MSR policy of the primary VM, shared by the SVM and VMX back ends. Only
// the MSRs in x86_msr_intercepts[] exit; every other MSR goes straight to the
// hardware (the primary owns the machine). The table and its reasons are in
// docs/x86-exits.md.
//
//   EFER (0xC0000080)   reads return the guest's value (SVME as the guest
//                       set it: never, since SVM is hidden); writes with a
//                       bit the guest's CPUID does not enumerate (SVME: SVM
//                       is not offered) or changing LME with paging on get
//                       #GP (cr_check.c), else go to the back end, which
//                       keeps the bits the hardware needs (SVM: SVME)
//   VM_CR (0xC0010114)  reads SVMDIS | LOCK (SVM disabled by firmware),
//                       writes ignored (a locked VM_CR ignores them); with
//                       nested SVM (x86_nested_svm): reads 0 (SVM allowed,
//                       not locked), writes of 0 accepted, others #GP
//   VM_HSAVE_PA         reads back what was written, never used (nested SVM
//                       keeps L1's host state itself)
//   IA32_FEATURE_CONTROL (0x3A, Intel) reads "locked, VMX off"; writes #GP
//   IA32_VMX_* (0x480-0x493, Intel)   #GP: VMX is hidden
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "core/log.h"

#define MSR_VMX_FIRST 0x480u
#define MSR_VMX_LAST  0x493u

const struct x86_msr_intercept x86_msr_intercepts[] = {
    {MSR_EFER, MSR_EFER, true, true, false},
    {MSR_VM_CR, MSR_VM_CR, true, true, false},
    {MSR_VM_HSAVE_PA, MSR_VM_HSAVE_PA, true, true, false},
    {MSR_IA32_FEATURE_CONTROL, MSR_IA32_FEATURE_CONTROL, true, true, true},
    {MSR_VMX_FIRST, MSR_VMX_LAST, true, true, true}, // IA32_VMX_BASIC ... VMX capabilities
};
const unsigned x86_n_msr_intercepts = sizeof(x86_msr_intercepts) / sizeof(x86_msr_intercepts[0]);

static void log_once_msr(const char *what, uint32_t msr, uint64_t val)
{
	static int seen;

	if (!__atomic_exchange_n(&seen, 1, __ATOMIC_RELAXED))
		log_warn("x86: guest %s MSR 0x%x (0x%llx): #GP (further ones not logged)\n", what,
			 msr, (unsigned long long)val);
}

static enum x86_action msr_done(struct vcpu *v)
{
	x86_skip_insn(v);
	return X86_CONTINUE;
}

enum x86_action x86_handle_rdmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->arch.gpr[X86_RCX];
	uint64_t val;

	switch (msr) {
	case MSR_EFER:
		val = v->arch.ops->read_efer(v);
		break;
	case MSR_VM_CR:
		val = x86_nested_svm ? 0 : VM_CR_SVMDIS | VM_CR_LOCK;
		break;
	case MSR_VM_HSAVE_PA:
		val = v->arch.hsave_guest;
		break;
	case MSR_IA32_FEATURE_CONTROL:
		val = FEATCTL_LOCKED; // locked with VMX disabled inside and outside SMX
		break;
	default:
		log_once_msr("read of", msr, 0);
		return x86_inject_gp0(v);
	}
	v->arch.gpr[X86_RAX] = (uint32_t)val;
	v->arch.gpr[X86_RDX] = val >> 32;
	return msr_done(v);
}

enum x86_action x86_handle_wrmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->arch.gpr[X86_RCX];
	uint64_t val = (v->arch.gpr[X86_RDX] << 32) | (uint32_t)v->arch.gpr[X86_RAX];

	switch (msr) {
	case MSR_EFER:
		// Bits the guest's CPUID does not enumerate (SVME included: SVM
		// is not offered), LME changed with paging on: #GP(0).
		if (!x86_guest_cr_ok(v, X86_GUEST_EFER, val))
			return x86_inject_gp0(v);
		v->arch.ops->write_efer(v, val);
		break;
	case MSR_VM_CR:
		if (x86_nested_svm && val)
			return x86_inject_gp0(v); // nested SVM: no bit of VM_CR is emulated
		break;				  // locked: writes have no effect
	case MSR_VM_HSAVE_PA:
		if (val & 0xfff)
			return x86_inject_gp0(v);
		v->arch.hsave_guest = val;
		break;
	default: // IA32_FEATURE_CONTROL is locked; VMX MSRs do not exist for the guest
		log_once_msr("write to", msr, val);
		return x86_inject_gp0(v);
	}
	return msr_done(v);
}
