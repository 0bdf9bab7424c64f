// SPDX-License-Identifier: Apache-2.0
//
// Privileged x86 instructions the VMX back end uses directly (control
// registers, descriptor tables, WRMSR, segment selectors).
#ifndef SLAT_ARCH_X86_VMX_HW_H
#define SLAT_ARCH_X86_VMX_HW_H

#include <stdint.h>

// Bits named with a VMX_ prefix so that they never clash with arch/x86/cpu.h.
#define VMX_CR0_PE	(1ull << 0)
#define VMX_CR0_NE	(1ull << 5)
#define VMX_CR0_PG	(1ull << 31)
#define VMX_CR4_PAE	(1ull << 5)
#define VMX_CR4_VMXE	(1ull << 13)
#define VMX_CR4_OSXSAVE (1ull << 18)
#define VMX_EFER_LME	(1ull << 8)
#define VMX_EFER_LMA	(1ull << 10)
#define VMX_RFLAGS_IF	(1ull << 9)

#define VMX_DEFINE_CR(n)                                                                           \
	static inline uint64_t vmx_read_cr##n(void)                                                \
	{                                                                                          \
		uint64_t v;                                                                        \
		__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v));                                  \
		return v;                                                                          \
	}                                                                                          \
	static inline void vmx_write_cr##n(uint64_t v)                                             \
	{                                                                                          \
		__asm__ volatile("mov %0, %%cr" #n ::"r"(v) : "memory");                           \
	}
VMX_DEFINE_CR(0)
VMX_DEFINE_CR(3)
VMX_DEFINE_CR(4)
#undef VMX_DEFINE_CR

static inline void vmx_wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

static inline uint64_t vmx_read_dr7(void)
{
	uint64_t v;
	__asm__ volatile("mov %%dr7, %0" : "=r"(v));
	return v;
}

static inline uint64_t vmx_read_rflags(void)
{
	uint64_t v;
	__asm__ volatile("pushfq; pop %0" : "=r"(v));
	return v;
}

// Descriptor-table registers through a byte buffer (a packed struct for SGDT
// was not laid out packed with the *-windows target).
static inline void vmx_read_gdtr(uint64_t *base, uint16_t *limit)
{
	uint8_t b[10];
	__asm__ volatile("sgdt %0" : "=m"(b));
	*limit = (uint16_t)(b[0] | b[1] << 8);
	*base = 0;
	for (int i = 0; i < 8; i++)
		*base |= (uint64_t)b[2 + i] << (8 * i);
}

static inline void vmx_read_idtr(uint64_t *base, uint16_t *limit)
{
	uint8_t b[10];
	__asm__ volatile("sidt %0" : "=m"(b));
	*limit = (uint16_t)(b[0] | b[1] << 8);
	*base = 0;
	for (int i = 0; i < 8; i++)
		*base |= (uint64_t)b[2 + i] << (8 * i);
}

static inline void vmx_load_gdt_idt(uint64_t gdt, uint16_t glimit, uint64_t idt, uint16_t ilimit)
{
	uint8_t g[10], d[10];
	g[0] = (uint8_t)glimit, g[1] = (uint8_t)(glimit >> 8);
	d[0] = (uint8_t)ilimit, d[1] = (uint8_t)(ilimit >> 8);
	for (int i = 0; i < 8; i++) {
		g[2 + i] = (uint8_t)(gdt >> (8 * i));
		d[2 + i] = (uint8_t)(idt >> (8 * i));
	}
	__asm__ volatile("lgdt %0; lidt %1" ::"m"(g), "m"(d) : "memory");
}

#define READ_SEG(name)                                                                             \
	static inline uint16_t vmx_read_##name(void)                                               \
	{                                                                                          \
		uint16_t v;                                                                        \
		__asm__ volatile("mov %%" #name ", %0" : "=r"(v));                                 \
		return v;                                                                          \
	}
READ_SEG(es)
READ_SEG(cs)
READ_SEG(ss)
READ_SEG(ds)
READ_SEG(fs)
READ_SEG(gs)
#undef READ_SEG

static inline uint16_t vmx_read_ldtr(void)
{
	uint16_t v;
	__asm__ volatile("sldt %0" : "=r"(v));
	return v;
}

static inline uint16_t vmx_read_tr(void)
{
	uint16_t v;
	__asm__ volatile("str %0" : "=r"(v));
	return v;
}

static inline void vmx_pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

#endif
