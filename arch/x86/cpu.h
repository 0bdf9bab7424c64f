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

#define DR6_BS (1ull << 14) // single-step trap

static inline void write_dr6(uint64_t v)
{
	__asm__ volatile("mov %0, %%dr6" : : "r"(v));
}

static inline void write_cr0(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static inline void write_cr4(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

#define X86_READ_DR(n)                                                                             \
	static inline uint64_t read_dr##n(void)                                                    \
	{                                                                                          \
		uint64_t v;                                                                        \
		__asm__ volatile("mov %%dr" #n ", %0" : "=r"(v));                                  \
		return v;                                                                          \
	}
X86_READ_DR(6)
X86_READ_DR(7)
#undef X86_READ_DR

static inline uint64_t read_rflags(void)
{
	uint64_t v;
	__asm__ volatile("pushfq; pop %0" : "=r"(v));
	return v;
}

// Descriptor-table registers through a byte buffer (a packed struct for SGDT
// was not laid out packed with the *-windows target).
static inline void x86_dtr_decode(const uint8_t b[10], uint64_t *base, uint16_t *limit)
{
	*limit = (uint16_t)(b[0] | b[1] << 8);
	*base = 0;
	for (int i = 0; i < 8; i++)
		*base |= (uint64_t)b[2 + i] << (8 * i);
}

static inline void read_gdtr(uint64_t *base, uint16_t *limit)
{
	uint8_t b[10];
	__asm__ volatile("sgdt %0" : "=m"(b));
	x86_dtr_decode(b, base, limit);
}

static inline void read_idtr(uint64_t *base, uint16_t *limit)
{
	uint8_t b[10];
	__asm__ volatile("sidt %0" : "=m"(b));
	x86_dtr_decode(b, base, limit);
}

// Selector readers: read_es() ... read_gs(), read_ldtr() (SLDT), read_tr() (STR).
#define X86_READ_SEL(name, insn)                                                                   \
	static inline uint16_t read_##name(void)                                                   \
	{                                                                                          \
		uint16_t v;                                                                        \
		__asm__ volatile(insn " %0" : "=r"(v));                                            \
		return v;                                                                          \
	}
X86_READ_SEL(es, "mov %%es,")
X86_READ_SEL(cs, "mov %%cs,")
X86_READ_SEL(ss, "mov %%ss,")
X86_READ_SEL(ds, "mov %%ds,")
X86_READ_SEL(fs, "mov %%fs,")
X86_READ_SEL(gs, "mov %%gs,")
X86_READ_SEL(ldtr, "sldt")
X86_READ_SEL(tr, "str")
#undef X86_READ_SEL

// An IRET to the next instruction, on the current stack: ends the NMI
// blocking a VM exit caused by an NMI leaves in effect (VT-x keeps NMIs
// blocked after such an exit until the next IRET, as if the host's own NMI
// handler had run). Needs no red zone (Slat builds with -mno-red-zone).
static inline void x86_nmi_unblock(void)
{
	__asm__ volatile("mov %%ss, %%eax\n\t"
			 "push %%rax\n\t"
			 "push %%rsp\n\t"
			 "addq $8, (%%rsp)\n\t"
			 "pushfq\n\t"
			 "mov %%cs, %%eax\n\t"
			 "push %%rax\n\t"
			 "lea 1f(%%rip), %%rax\n\t"
			 "push %%rax\n\t"
			 "iretq\n"
			 "1:" ::
			     : "rax", "memory", "cc");
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

#define MSR_IA32_FEATURE_CONTROL 0x03a
#define MSR_IA32_APIC_BASE	 0x01b
#define MSR_SYSENTER_CS		 0x174
#define MSR_SYSENTER_ESP	 0x175
#define MSR_SYSENTER_EIP	 0x176
#define MSR_DEBUGCTL		 0x1d9
#define MSR_IA32_PAT		 0x277
// VMX capability MSRs (Intel SDM vol. 3, appendix A).
#define MSR_VMX_BASIC	       0x480
#define MSR_VMX_PINBASED       0x481
#define MSR_VMX_PROCBASED      0x482
#define MSR_VMX_EXIT	       0x483
#define MSR_VMX_ENTRY	       0x484
#define MSR_VMX_MISC	       0x485
#define MSR_VMX_CR0_FIXED0     0x486
#define MSR_VMX_CR0_FIXED1     0x487
#define MSR_VMX_CR4_FIXED0     0x488
#define MSR_VMX_CR4_FIXED1     0x489
#define MSR_VMX_PROCBASED2     0x48b
#define MSR_VMX_EPT_VPID_CAP   0x48c
#define MSR_VMX_TRUE_PINBASED  0x48d
#define MSR_VMX_TRUE_PROCBASED 0x48e
#define MSR_VMX_TRUE_EXIT      0x48f
#define MSR_VMX_TRUE_ENTRY     0x490
#define MSR_VM_CR	       0xc0010114
#define MSR_VM_HSAVE_PA	       0xc0010117
#define MSR_EFER	       0xc0000080
#define MSR_FS_BASE	       0xc0000100
#define MSR_GS_BASE	       0xc0000101
#define MSR_KERNEL_GS_BASE     0xc0000102

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
#define CR4_VMXE    (1ull << 13)
#define CR4_OSXSAVE (1ull << 18)
#define RFLAGS_IF   (1ull << 9)
#define CR4_PKE	    (1ull << 22)
#define CR4_LA57    (1ull << 12)

#endif
