// SPDX-License-Identifier: Apache-2.0
//
// x86 instructions and register bits slat.efi uses: CPUID, MSRs, TSC, XCRs,
// control registers, port I/O.
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

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t xgetbv(uint32_t xcr)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(xcr));
	return (uint64_t)hi << 32 | lo;
}

static inline void xsetbv(uint32_t xcr, uint64_t v)
{
	__asm__ volatile("xsetbv" : : "c"(xcr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

#define X86_READ_CR(n)                                                                             \
	static inline uint64_t read_cr##n(void)                                                    \
	{                                                                                          \
		uint64_t v;                                                                        \
		__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v));                                  \
		return v;                                                                          \
	}
X86_READ_CR(0)
X86_READ_CR(2)
X86_READ_CR(3)
X86_READ_CR(4)

static inline void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline void write_cr4(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static inline void pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
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
#define MSR_VM_HSAVE_PA			 0xc0010117
#define MSR_EFER			 0xc0000080
#define MSR_IA32_APIC_BASE		 0x01b
#define MSR_IA32_PAT			 0x277
#define MSR_X2APIC_ICR			 0x830

#define EFER_SCE      (1ull << 0)
#define EFER_LME      (1ull << 8)
#define EFER_LMA      (1ull << 10)
#define EFER_NXE      (1ull << 11)
#define EFER_SVME     (1ull << 12)
#define EFER_LMSLE    (1ull << 13)
#define EFER_FFXSR    (1ull << 14)
#define EFER_TCE      (1ull << 15)
#define EFER_AUTOIBRS (1ull << 21)

#define CR0_PE	    (1ull << 0)
#define CR0_PG	    (1ull << 31)
#define CR4_PSE	    (1ull << 4)
#define CR4_PAE	    (1ull << 5)
#define CR4_OSXSAVE (1ull << 18)
#define CR4_PKE	    (1ull << 22)
#define CR4_LA57    (1ull << 12)

#endif
