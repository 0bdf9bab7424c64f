// SPDX-License-Identifier: Apache-2.0
//
// VMCS field encodings (Intel SDM vol. 3, appendix B), VMX capability MSRs
// (appendix A), control bits (chapter 25) and the VMX instructions. Only what
// Slat uses. VMREAD/VMWRITE act on the current VMCS of the calling CPU.
#ifndef SLAT_ARCH_X86_VMX_VMCS_H
#define SLAT_ARCH_X86_VMX_VMCS_H

#include <stdbool.h>
#include <stdint.h>

// ---- capability MSRs ------------------------------------------------------

// ---- 16-bit fields --------------------------------------------------------
#define VMCS_VPID	  0x0000
#define VMCS_GUEST_ES_SEL 0x0800 // + 2 * segment index (ES CS SS DS FS GS LDTR TR)
#define VMCS_HOST_ES_SEL  0x0c00
#define VMCS_HOST_CS_SEL  0x0c02
#define VMCS_HOST_SS_SEL  0x0c04
#define VMCS_HOST_DS_SEL  0x0c06
#define VMCS_HOST_FS_SEL  0x0c08
#define VMCS_HOST_GS_SEL  0x0c0a
#define VMCS_HOST_TR_SEL  0x0c0c

// ---- 64-bit fields ----------------------------------------------------------
#define VMCS_IO_BITMAP_A     0x2000
#define VMCS_IO_BITMAP_B     0x2002
#define VMCS_MSR_BITMAP	     0x2004
#define VMCS_TSC_OFFSET	     0x2010
#define VMCS_EPT_POINTER     0x201a
#define VMCS_GUEST_PHYS_ADDR 0x2400
#define VMCS_LINK_POINTER    0x2800
#define VMCS_GUEST_DEBUGCTL  0x2802
#define VMCS_GUEST_PAT	     0x2804
#define VMCS_GUEST_EFER	     0x2806
#define VMCS_HOST_PAT	     0x2c00
#define VMCS_HOST_EFER	     0x2c02

// ---- 32-bit fields ----------------------------------------------------------
#define VMCS_PIN_CTLS		    0x4000
#define VMCS_PROC_CTLS		    0x4002
#define VMCS_EXCEPTION_BITMAP	    0x4004
#define VMCS_CR3_TARGET_COUNT	    0x400a
#define VMCS_EXIT_CTLS		    0x400c
#define VMCS_EXIT_MSR_STORE_N	    0x400e
#define VMCS_EXIT_MSR_LOAD_N	    0x4010
#define VMCS_ENTRY_CTLS		    0x4012
#define VMCS_ENTRY_MSR_LOAD_N	    0x4014
#define VMCS_ENTRY_INTR_INFO	    0x4016
#define VMCS_ENTRY_EXC_ERROR	    0x4018
#define VMCS_ENTRY_INSN_LEN	    0x401a
#define VMCS_PROC_CTLS2		    0x401e
#define VMCS_INSN_ERROR		    0x4400
#define VMCS_EXIT_REASON	    0x4402
#define VMCS_EXIT_INTR_INFO	    0x4404
#define VMCS_IDT_VECT_INFO	    0x4408
#define VMCS_IDT_VECT_ERROR	    0x440a
#define VMCS_EXIT_INSN_LEN	    0x440c
#define VMCS_GUEST_ES_LIMIT	    0x4800 // + 2 * segment index
#define VMCS_GUEST_GDTR_LIMIT	    0x4810
#define VMCS_GUEST_IDTR_LIMIT	    0x4812
#define VMCS_GUEST_ES_AR	    0x4814 // + 2 * segment index
#define VMCS_GUEST_INTERRUPTIBILITY 0x4824
#define VMCS_GUEST_ACTIVITY	    0x4826
#define VMCS_GUEST_SYSENTER_CS	    0x482a
#define VMCS_HOST_SYSENTER_CS	    0x4c00

// ---- natural-width fields ---------------------------------------------------
#define VMCS_CR0_MASK		0x6000
#define VMCS_CR4_MASK		0x6002
#define VMCS_CR0_SHADOW		0x6004
#define VMCS_CR4_SHADOW		0x6006
#define VMCS_EXIT_QUAL		0x6400
#define VMCS_GUEST_CR0		0x6800
#define VMCS_GUEST_CR3		0x6802
#define VMCS_GUEST_CR4		0x6804
#define VMCS_GUEST_ES_BASE	0x6806 // + 2 * segment index
#define VMCS_GUEST_GDTR_BASE	0x6816
#define VMCS_GUEST_IDTR_BASE	0x6818
#define VMCS_GUEST_DR7		0x681a
#define VMCS_GUEST_RSP		0x681c
#define VMCS_GUEST_RIP		0x681e
#define VMCS_GUEST_RFLAGS	0x6820
#define VMCS_GUEST_PENDING_DBG	0x6822
#define VMCS_GUEST_SYSENTER_ESP 0x6824
#define VMCS_GUEST_SYSENTER_EIP 0x6826
#define VMCS_HOST_CR0		0x6c00
#define VMCS_HOST_CR3		0x6c02
#define VMCS_HOST_CR4		0x6c04
#define VMCS_HOST_FS_BASE	0x6c06
#define VMCS_HOST_GS_BASE	0x6c08
#define VMCS_HOST_TR_BASE	0x6c0a
#define VMCS_HOST_GDTR_BASE	0x6c0c
#define VMCS_HOST_IDTR_BASE	0x6c0e
#define VMCS_HOST_SYSENTER_ESP	0x6c10
#define VMCS_HOST_SYSENTER_EIP	0x6c12
#define VMCS_HOST_RSP		0x6c14
#define VMCS_HOST_RIP		0x6c16

// Guest segment index: field = base + 2 * index.
enum vmx_seg { VMX_ES, VMX_CS, VMX_SS, VMX_DS, VMX_FS, VMX_GS, VMX_LDTR, VMX_TR, VMX_NSEG };

// ---- controls -------------------------------------------------------------
#define PIN_EXT_INT_EXIT   (1u << 0)
#define PIN_NMI_EXIT	   (1u << 3)
#define PIN_VIRTUAL_NMI	   (1u << 5)
#define PROC_INTR_WINDOW   (1u << 2)
#define PROC_TSC_OFFSET	   (1u << 3)
#define PROC_HLT_EXIT	   (1u << 7)
#define PROC_MWAIT_EXIT	   (1u << 10)
#define PROC_NMI_WINDOW	   (1u << 22)
#define PROC_IO_BITMAPS	   (1u << 25)
#define PROC_MSR_BITMAPS   (1u << 28)
#define PROC_MONITOR_EXIT  (1u << 29)
#define PROC_SECONDARY	   (1u << 31)
#define PROC2_EPT	   (1u << 1)
#define PROC2_RDTSCP	   (1u << 3)
#define PROC2_VPID	   (1u << 5)
#define PROC2_UNRESTRICTED (1u << 7)
#define PROC2_INVPCID	   (1u << 12)
#define PROC2_XSAVES	   (1u << 20)
#define EXIT_SAVE_DEBUG	   (1u << 2)
#define EXIT_HOST_64	   (1u << 9)
#define EXIT_SAVE_PAT	   (1u << 18)
#define EXIT_LOAD_PAT	   (1u << 19)
#define EXIT_SAVE_EFER	   (1u << 20)
#define EXIT_LOAD_EFER	   (1u << 21)
#define ENTRY_LOAD_DEBUG   (1u << 2)
#define ENTRY_IA32E_GUEST  (1u << 9)
#define ENTRY_LOAD_PAT	   (1u << 14)
#define ENTRY_LOAD_EFER	   (1u << 15)

// ---- exit reasons -----------------------------------------------------------
enum vmx_exit_reason {
	VMX_EXIT_EXCEPTION = 0,
	VMX_EXIT_EXT_INT = 1,
	VMX_EXIT_TRIPLE_FAULT = 2,
	VMX_EXIT_INIT = 3,
	VMX_EXIT_SIPI = 4,
	VMX_EXIT_INTR_WINDOW = 7,
	VMX_EXIT_NMI_WINDOW = 8,
	VMX_EXIT_CPUID = 10,
	VMX_EXIT_GETSEC = 11,
	VMX_EXIT_HLT = 12,
	VMX_EXIT_INVD = 13,
	VMX_EXIT_VMCALL = 18,
	VMX_EXIT_VMCLEAR = 19,
	VMX_EXIT_VMXON = 27,
	VMX_EXIT_CR = 28,
	VMX_EXIT_IO = 30,
	VMX_EXIT_RDMSR = 31,
	VMX_EXIT_WRMSR = 32,
	VMX_EXIT_BAD_GUEST = 33,
	VMX_EXIT_BAD_MSR_LOAD = 34,
	VMX_EXIT_MWAIT = 36,
	VMX_EXIT_MONITOR = 39,
	VMX_EXIT_PAUSE = 40,
	VMX_EXIT_EPT_VIOLATION = 48,
	VMX_EXIT_EPT_MISCONFIG = 49,
	VMX_EXIT_INVEPT = 50,
	VMX_EXIT_INVVPID = 53,
	VMX_EXIT_WBINVD = 54,
	VMX_EXIT_XSETBV = 55,
	VMX_EXIT_VMFUNC = 59,
	VMX_EXIT_REASONS = 70,
};

// ---- instructions -------------------------------------------------------------
// Each returns true on success (CF = ZF = 0 afterwards).
static inline bool vmx_on(uint64_t pa)
{
	bool ok;
	__asm__ volatile("vmxon %1; seta %0" : "=q"(ok) : "m"(pa) : "cc", "memory");
	return ok;
}

static inline bool vmx_clear(uint64_t pa)
{
	bool ok;
	__asm__ volatile("vmclear %1; seta %0" : "=q"(ok) : "m"(pa) : "cc", "memory");
	return ok;
}

static inline bool vmx_ptrld(uint64_t pa)
{
	bool ok;
	__asm__ volatile("vmptrld %1; seta %0" : "=q"(ok) : "m"(pa) : "cc", "memory");
	return ok;
}

static inline void vmx_off(void)
{
	__asm__ volatile("vmxoff" ::: "cc", "memory");
}

static inline uint64_t vmread(uint64_t field)
{
	uint64_t v;
	__asm__ volatile("vmread %1, %0" : "=r"(v) : "r"(field) : "cc");
	return v;
}

static inline bool vmwrite(uint64_t field, uint64_t v)
{
	bool ok;
	__asm__ volatile("vmwrite %2, %1; seta %0" : "=q"(ok) : "r"(field), "rm"(v) : "cc");
	return ok;
}
// VMWRITE that keeps going and remembers a failure in the caller's `ok`.
#define W(field, val) (ok = vmwrite((field), (val)) && ok)

// INVEPT / INVVPID types.
#define INVEPT_SINGLE  1
#define INVEPT_ALL     2
#define INVVPID_SINGLE 1
#define INVVPID_ALL    2

static inline bool vmx_invept(uint64_t type, uint64_t eptp)
{
	struct {
		uint64_t eptp, zero;
	} d = {eptp, 0};
	bool ok;
	__asm__ volatile("invept %1, %2; seta %0" : "=q"(ok) : "m"(d), "r"(type) : "cc", "memory");
	return ok;
}

static inline bool vmx_invvpid(uint64_t type, uint16_t vpid, uint64_t addr)
{
	struct {
		uint64_t vpid, addr;
	} d = {vpid, addr};
	bool ok;
	__asm__ volatile("invvpid %1, %2; seta %0" : "=q"(ok) : "m"(d), "r"(type) : "cc", "memory");
	return ok;
}

// VM-entry interruption information (the same layout in the exit
// interruption and IDT-vectoring information).
#define VMX_INTR_VALID	(1u << 31)
#define VMX_INTR_ERROR	(1u << 11) // deliver an error code
#define VMX_INTR_EXT	(0u << 8)  // external interrupt
#define VMX_INTR_NMI	(2u << 8)
#define VMX_INTR_HW_EXC (3u << 8) // hardware exception

// Segment access rights (VMCS_GUEST_ES_AR + 2 * index) to the SVM attribute
// packing of struct x86_seg (arch/x86/vcpu.h): descriptor byte 5 in bits 0-7
// of both, the flags nibble in bits 12-15 here, 8-11 there. Unusable: 0.
#define VMX_AR_UNUSABLE (1u << 16)
static inline uint16_t vmx_attr_of(uint32_t ar)
{
	return (ar & VMX_AR_UNUSABLE) ? 0 : (uint16_t)((ar & 0xff) | ((ar >> 12) & 0xf) << 8);
}

// Guest interruptibility-state bits (VMCS_GUEST_INTERRUPTIBILITY).
#define INTERRUPTIBILITY_STI	(1u << 0)
#define INTERRUPTIBILITY_MOV_SS (1u << 1)
#define INTERRUPTIBILITY_NMI	(1u << 3)
#define INTERRUPTIBILITY_SHADOW (INTERRUPTIBILITY_STI | INTERRUPTIBILITY_MOV_SS)

#endif
