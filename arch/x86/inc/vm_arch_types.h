// SPDX-License-Identifier: Apache-2.0
//
// The x86 part of core's VM and vCPU records (core/vm.h). Transitional: the
// records still point at arch/x86/vcpu.h's x86_vcpu / x86_vm.
#ifndef SLAT_ARCH_X86_VM_ARCH_TYPES_H
#define SLAT_ARCH_X86_VM_ARCH_TYPES_H

struct x86_vcpu;
struct x86_vm;

struct vcpu_arch {
	struct x86_vcpu *x86;
};

struct vm_arch {
	struct x86_vm *x86;
};

#endif
