// SPDX-License-Identifier: Apache-2.0
//
// CPUID policy of the primary VM, shared by the SVM and VMX back ends. The
// guest sees the real CPU's answers with these changes (docs/x86-exits.md):
//
//   leaf 1 ECX       hypervisor bit (31) set; VMX (5) cleared until nested
//                    virtualization exists; x2APIC (21) cleared, because the
//                    INIT/SIPI mailbox traps the xAPIC ICR page (an x2APIC ICR
//                    is an MSR); MONITOR/MWAIT (3) cleared so an OS idles with
//                    HLT (an intercepted MWAIT would spin through the host);
//                    OSXSAVE (27) = the guest's CR4.OSXSAVE (the host's own
//                    CR4 would show otherwise)
//   leaf 7.0 ECX     OSPKE (4) = the guest's CR4.PKE
//   0x80000001 ECX   SVM (2) cleared, unless nested SVM is on (x86_nested_svm)
//   0x8000000A       all zero (the SVM leaf); with nested SVM: revision 1,
//                    X86_NESTED_ASIDS ASIDs, and nested paging (EDX bit 0)
//                    as the only feature (what Slat emulates: no NRIPS,
//                    decode assists, flush by ASID, VMCB clean bits, vGIF,
//                    AVIC, LBR virtualization or pause filter)
//   0x40000000       max leaf 0x40000001, vendor "SlatSlatSlat" in EBX ECX EDX
//   0x40000001       zero: no Hyper-V interface ("Hv#1") is claimed, so
//                    Windows and Linux use no enlightenment Slat lacks
//   0x40000002-FF    zero, but 0x400000F0 while nested SVM is on: the shadow
//                    engine's figures (EAX shadow pages in use, EBX longest
//                    hash chain, ECX pages created, EDX orphans reclaimed),
//                    for L1's churn test; above the advertised maximum leaf
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"

#define SLAT_HV_MAX_LEAF 0x40000001u

bool x86_nested_svm;				// set by the SVM back end (svm/nested.c)
void (*x86_nested_stats_leaf)(uint32_t out[4]); // ... with leaf 0x400000F0's answer

// "SlatSlatSlat" as three little-endian words.
#define SLAT_SIG_WORD 0x74616c53u // 'S' 'l' 'a' 't'

static void set_bit32(uint32_t *r, unsigned bit, bool on)
{
	if (on)
		*r |= 1u << bit;
	else
		*r &= ~(1u << bit);
}

void x86_cpuid_policy(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
	bool cr4_bits = leaf == 1 || (leaf == 7 && subleaf == 0);

	x86_cpuid_policy_cr4(cr4_bits ? v->arch.ops->read_cr(v, 4) : 0, leaf, subleaf, out);
}

void x86_cpuid_policy_cr4(uint64_t cr4, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
	if (leaf >= 0x40000000u && leaf <= 0x400000ffu) {
		out[0] = out[1] = out[2] = out[3] = 0;
		if (leaf == 0x40000000u) {
			out[0] = SLAT_HV_MAX_LEAF;
			out[1] = out[2] = out[3] = SLAT_SIG_WORD;
		}
		if (leaf == X86_NESTED_STATS_LEAF && x86_nested_stats_leaf)
			x86_nested_stats_leaf(out);
		return;
	}
	struct cpuid_regs r = cpuid(leaf, subleaf);
	out[0] = r.eax, out[1] = r.ebx, out[2] = r.ecx, out[3] = r.edx;

	switch (leaf) {
	case 1:
		set_bit32(&out[2], 31, true);  // hypervisor present
		set_bit32(&out[2], 5, false);  // VMX
		set_bit32(&out[2], 21, false); // x2APIC
		set_bit32(&out[2], 3, false);  // MONITOR/MWAIT
		set_bit32(&out[2], 27, (out[2] & (1u << 26)) && (cr4 & CR4_OSXSAVE));
		break;
	case 7:
		if (subleaf == 0)
			set_bit32(&out[2], 4, (out[2] & (1u << 3)) && (cr4 & CR4_PKE));
		break;
	case 0x80000001u:
		set_bit32(&out[2], 2, x86_nested_svm && (out[2] & (1u << 2))); // SVM
		break;
	case 0x8000000au:
		out[0] = out[1] = out[2] = out[3] = 0;
		if (x86_nested_svm) {
			out[0] = 1;		   // SVM revision
			out[1] = X86_NESTED_ASIDS; // ASIDs
			out[3] = 1;		   // NP: nested paging
		}
		break;
	default:
		break;
	}
}

enum x86_action x86_handle_cpuid(struct vcpu *v)
{
	uint32_t out[4];

	x86_cpuid_policy(v, (uint32_t)v->arch.gpr[X86_RAX], (uint32_t)v->arch.gpr[X86_RCX], out);
	x86_cpuid_answer(v, out);
	return X86_CONTINUE;
}

void x86_cpuid_answer(struct vcpu *v, const uint32_t out[4])
{
	// CPUID zero-extends into the 64-bit registers.
	v->arch.gpr[X86_RAX] = out[0];
	v->arch.gpr[X86_RBX] = out[1];
	v->arch.gpr[X86_RCX] = out[2];
	v->arch.gpr[X86_RDX] = out[3];
	x86_skip_insn(v);
}
