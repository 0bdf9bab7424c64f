// SPDX-License-Identifier: Apache-2.0
//
// x86 instructions slat.efi needs before it is a hypervisor: CPUID, RDMSR,
// port I/O.
#ifndef SLAT_ARCH_X86_CPU_H
#define SLAT_ARCH_X86_CPU_H

#include <stdint.h>

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	__asm__ volatile("cpuid"
			 : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

// Only for MSRs the CPUID bits say exist: any other raises #GP.
static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return (uint64_t)hi << 32 | lo;
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

#define MSR_IA32_FEATURE_CONTROL	 0x03a
#define MSR_IA32_VMX_BASIC		 0x480
#define MSR_IA32_VMX_PROCBASED_CTLS	 0x482
#define MSR_IA32_VMX_PROCBASED_CTLS2	 0x48b
#define MSR_IA32_VMX_EPT_VPID_CAP	 0x48c
#define MSR_IA32_VMX_TRUE_PROCBASED_CTLS 0x48e
#define MSR_VM_CR			 0xc0010114

#endif
