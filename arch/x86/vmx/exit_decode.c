// SPDX-License-Identifier: Apache-2.0
//
// VMX exit decoding: the VMCS's exit reason, qualification, guest-physical
// address and interruption information to the shared form (struct
// x86_exit). A pure function, so the same architectural events can be fed
// to both vendors' decoders in hosted tests (tests/unit/test_x86_layer.c).
// Encodings: Intel SDM vol. 3, appendix C (basic exit reasons), 28.2.1
// (qualifications of I/O, CR access and EPT violations).
#include "arch/x86/vmx/vmx.h"

#define EXIT_ENTRY_FAILED (1u << 31)

static bool vmx_is_virt_insn(unsigned reason)
{
	return (reason >= VMX_EXIT_VMCLEAR && reason <= VMX_EXIT_VMXON) ||
	       reason == VMX_EXIT_INVEPT || reason == VMX_EXIT_INVVPID ||
	       reason == VMX_EXIT_VMFUNC || reason == VMX_EXIT_GETSEC;
}

static enum x86_exit_kind vmx_exit_kind(const struct vmx_exit_fields *f, unsigned reason)
{
	if (f->reason & EXIT_ENTRY_FAILED)
		return X86_EXIT_BAD_STATE;
	if (vmx_is_virt_insn(reason))
		return X86_EXIT_VIRT_INSN;
	switch (reason) {
	case VMX_EXIT_EXT_INT:
		return X86_EXIT_INTR;
	case VMX_EXIT_EXCEPTION:
		return (f->intr_info & VMX_INTR_VALID) && (f->intr_info & (7u << 8)) == VMX_INTR_NMI
			   ? X86_EXIT_NMI
			   : X86_EXIT_EXCEPTION;
	case VMX_EXIT_CPUID:
		return X86_EXIT_CPUID;
	case VMX_EXIT_RDMSR:
		return X86_EXIT_RDMSR;
	case VMX_EXIT_WRMSR:
		return X86_EXIT_WRMSR;
	case VMX_EXIT_XSETBV:
		return X86_EXIT_XSETBV;
	case VMX_EXIT_CR:
		return X86_EXIT_CR;
	case VMX_EXIT_IO:
		return X86_EXIT_IO;
	case VMX_EXIT_EPT_VIOLATION:
		return X86_EXIT_SLAT_VIOLATION;
	case VMX_EXIT_VMCALL:
		return X86_EXIT_HYPERCALL;
	case VMX_EXIT_HLT:
		return X86_EXIT_HLT;
	case VMX_EXIT_MWAIT:
		return X86_EXIT_MWAIT;
	case VMX_EXIT_MONITOR:
		return X86_EXIT_MONITOR;
	case VMX_EXIT_PAUSE:
		return X86_EXIT_PAUSE;
	case VMX_EXIT_INVD:
	case VMX_EXIT_WBINVD:
		return X86_EXIT_CACHE_FLUSH;
	case VMX_EXIT_INIT:
		return X86_EXIT_INIT;
	case VMX_EXIT_SIPI:
		return X86_EXIT_SIPI;
	case VMX_EXIT_NMI_WINDOW:
		return X86_EXIT_NMI_WINDOW;
	case VMX_EXIT_INTR_WINDOW:
		return X86_EXIT_IRQ_WINDOW;
	case VMX_EXIT_TRIPLE_FAULT:
		return X86_EXIT_TRIPLE_FAULT;
	case VMX_EXIT_EPT_MISCONFIG:
		return X86_EXIT_BAD_STATE;
	default:
		return X86_EXIT_UNKNOWN;
	}
}

void vmx_decode_exit(const struct vmx_exit_fields *f, struct x86_exit *out)
{
	unsigned reason = f->reason & 0xffff;

	*out = (struct x86_exit){
	    .kind = vmx_exit_kind(f, reason),
	    .vendor = "vmx",
	    .code = f->reason,
	    .qual = f->qual,
	};
	if (out->kind == X86_EXIT_IO) {
		out->io = (struct x86_io){
		    .port = (uint16_t)(f->qual >> 16),
		    .size = (uint8_t)((f->qual & 7) + 1),
		    .in = f->qual & 8,
		    .string = f->qual & 16,
		    .rep = f->qual & 32,
		};
	} else if (out->kind == X86_EXIT_SLAT_VIOLATION) {
		out->gpa = f->gpa;
		out->write = f->qual & 2;
		out->fetch = f->qual & 4;
	} else if (out->kind == X86_EXIT_SIPI) {
		out->sipi_vector = (uint8_t)f->qual;
	}
}
