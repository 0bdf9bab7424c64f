// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm on x86: not offered yet (docs/kvm-api.md). The KVM API's x86
 * vCPU state (KVM_SET_SREGS, MSRs, KVM_SET_CPUID2 with what Slat's policy
 * gives a secondary) needs more than ABI 1.0's register page, so the module
 * registers no /dev/kvm here and says so in dmesg; /dev/slat works as before.
 */
#include "slat_kvm.h"

bool slat_kvm_arch_offered(void)
{
	return false;
}

long slat_kvm_arch_cap(long cap)
{
	return -1;
}

int slat_kvm_arch_vm_type(unsigned long type, unsigned int *ipa_bits)
{
	return type ? -EINVAL : 0;
}

long slat_kvm_arch_vm_ioctl(struct slat_kvm_vm *kvm, unsigned int cmd, void __user *up)
{
	return -ENOTTY;
}

int slat_kvm_arch_vcpu_create(struct slat_kvm_vcpu *v)
{
	v->inited = true;
	return 0;
}

void slat_kvm_arch_vcpu_free(struct slat_kvm_vcpu *v)
{
}

long slat_kvm_arch_vcpu_ioctl(struct slat_kvm_vcpu *v, unsigned int cmd, void __user *up)
{
	return -ENOTTY;
}

int slat_kvm_arch_vcpu_ready(struct slat_kvm_vcpu *v)
{
	return 0;
}

int slat_kvm_arch_exit(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	return SLAT_KVM_GENERIC;
}
