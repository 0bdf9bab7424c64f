// SPDX-License-Identifier: Apache-2.0
//
// What the x86 boot CPU offers a hypervisor (arch/arch.h's opaque record).
// Raw CPUID/MSR values are kept so later code decides from the source.
#ifndef SLAT_ARCH_X86_CAPS_H
#define SLAT_ARCH_X86_CAPS_H

#include <stdbool.h>
#include <stdint.h>

struct arch_caps {
	char vendor[13];
	char brand[49];
	char hv_vendor[13]; // CPUID 0x40000000 when the hypervisor bit is set
	unsigned family, model, stepping;
	uint32_t max_leaf, max_ext_leaf;
	uint32_t leaf1_ecx;
	bool hypervisor_bit;

	// AMD SVM (AMD APM vol. 2, 15.4; CPUID 0x8000000A)
	bool svm;
	uint32_t svm_rev, svm_asids, svm_features; // 0x8000000A EAX, EBX, EDX
	uint64_t vm_cr;

	// Intel VMX (SDM vol. 3, appendix A)
	bool vmx, smx;
	uint64_t feature_control;
	uint64_t vmx_basic, vmx_procbased, vmx_procbased2, vmx_ept_vpid;
	bool vmx_secondary; // secondary processor-based controls may be 1
};

// CPUID 0x8000000A EDX bits.
#define SVM_FEAT_NP		(1u << 0)
#define SVM_FEAT_LBRV		(1u << 1)
#define SVM_FEAT_SVML		(1u << 2)
#define SVM_FEAT_NRIPS		(1u << 3)
#define SVM_FEAT_TSC_RATE	(1u << 4)
#define SVM_FEAT_VMCB_CLEAN	(1u << 5)
#define SVM_FEAT_FLUSH_BY_ASID	(1u << 6)
#define SVM_FEAT_DECODE_ASSISTS (1u << 7)
#define SVM_FEAT_PAUSE_FILTER	(1u << 10)
#define SVM_FEAT_PAUSE_THRESH	(1u << 12)
#define SVM_FEAT_AVIC		(1u << 13)
#define SVM_FEAT_VMSAVE_VIRT	(1u << 15)
#define SVM_FEAT_VGIF		(1u << 16)
#define SVM_FEAT_GMET		(1u << 17)
#define SVM_FEAT_VNMI		(1u << 25)

// VM_CR bits.
#define VM_CR_LOCK   (1u << 3)
#define VM_CR_SVMDIS (1u << 4)

// IA32_FEATURE_CONTROL bits.
#define FEATCTL_LOCKED		(1u << 0)
#define FEATCTL_VMX_OUTSIDE_SMX (1u << 2)

// Secondary processor-based VM-execution controls (allowed-1 half).
#define VMX_PROC2_EPT	       (1u << 1)
#define VMX_PROC2_RDTSCP       (1u << 3)
#define VMX_PROC2_VPID	       (1u << 5)
#define VMX_PROC2_UNRESTRICTED (1u << 7)
#define VMX_PROC2_INVPCID      (1u << 12)
#define VMX_PROC2_VMCS_SHADOW  (1u << 14)
#define VMX_PROC2_PML	       (1u << 17)
#define VMX_PROC2_XSAVES       (1u << 20)

#endif
