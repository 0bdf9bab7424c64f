// SPDX-License-Identifier: Apache-2.0
//
// x86 side of arch_enter_hypervisor() (arch/arch.h): AMD SVM with nested
// paging goes to the SVM back end (arch/x86/svm/); Intel VT-x with EPT to the
// VMX back end (arch/x86/vmx/). arch_virt_unusable() has already refused
// anything else.
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmx_primary.h"
#include "arch/x86/x86_boot.h"
#include "core/log.h"

int arch_enter_hypervisor(struct slat_plan *plan)
{
	const struct arch_caps *c = x86_caps();

	if (c->svm && (c->svm_features & SVM_FEAT_NP) && !(c->vm_cr & VM_CR_SVMDIS))
		return svm_enter_primary(plan);
	return vmx_enter_primary(plan);
}

unsigned long long arch_region_extra(void)
{
	// Without Page1GB: a table page per GiB of 2^40 (X86_SLAT_MAX_PHYS_BITS).
	return cpuid(0x80000001u, 0).edx & (1u << 26) ? 0 : 4ull << 20;
}
