// SPDX-License-Identifier: Apache-2.0
//
// SVM exit decoding: the VMCB's exit code and EXITINFO1/2 to the shared form
// (struct x86_exit). A pure function, so the same architectural events can
// be fed to both vendors' decoders in hosted tests (tests/unit/test_x86_layer.c).
// Encodings: AMD APM vol. 2, appendix C (exit codes) and 15.10.2 (IOIO),
// 15.25.6 (NPF error code).
#include "arch/x86/svm/svm.h"

static void svm_decode_io(uint64_t info1, struct x86_io *io)
{
	io->port = (uint16_t)(info1 >> 16);
	io->size = (info1 & 0x10) ? 1 : (info1 & 0x20) ? 2 : 4;
	io->in = info1 & 1;
	io->string = info1 & 4;
	io->rep = info1 & 8;
}

static enum x86_exit_kind svm_exit_kind(uint64_t code, uint64_t info1)
{
	switch (code) {
	case SVM_EXIT_INTR:
	case SVM_EXIT_SMI: // taken in host mode by svm_exit_collect: nothing left to do
		return X86_EXIT_INTR;
	case SVM_EXIT_NMI:
		return X86_EXIT_NMI;
	case SVM_EXIT_CPUID:
		return X86_EXIT_CPUID;
	case SVM_EXIT_WRITE_CR0:
		return X86_EXIT_CR;
	case SVM_EXIT_MSR:
		return info1 ? X86_EXIT_WRMSR : X86_EXIT_RDMSR;
	case SVM_EXIT_XSETBV:
		return X86_EXIT_XSETBV;
	case SVM_EXIT_IOIO:
		return X86_EXIT_IO;
	case SVM_EXIT_NPF:
		return X86_EXIT_SLAT_VIOLATION;
	case SVM_EXIT_VMMCALL:
		return X86_EXIT_HYPERCALL;
	case SVM_EXIT_HLT:
		return X86_EXIT_HLT;
	case SVM_EXIT_MWAIT:
	case SVM_EXIT_MWAIT_C:
		return X86_EXIT_MWAIT;
	case SVM_EXIT_VMRUN:
	case SVM_EXIT_VMLOAD:
	case SVM_EXIT_VMSAVE:
	case SVM_EXIT_STGI:
	case SVM_EXIT_CLGI:
	case SVM_EXIT_SKINIT:
	case SVM_EXIT_INVLPGA:
		return X86_EXIT_VIRT_INSN;
	case SVM_EXIT_SHUTDOWN:
		return X86_EXIT_TRIPLE_FAULT;
	case SVM_EXIT_IRET:
		return X86_EXIT_IRET;
	case SVM_EXIT_VINTR:
		return X86_EXIT_IRQ_WINDOW;
	case SVM_EXIT_INVALID:
	case SVM_EXIT_INVALID & 0xffffffffu: // QEMU writes -1 as a 32-bit value
		return X86_EXIT_BAD_STATE;
	default:
		return X86_EXIT_UNKNOWN;
	}
}

void svm_decode_exit(const struct svm_exit_fields *f, struct x86_exit *out)
{
	*out = (struct x86_exit){
	    .kind = svm_exit_kind(f->code, f->info1),
	    .vendor = "svm",
	    .code = f->code,
	    .qual = f->info1,
	};
	if (out->kind == X86_EXIT_IO) {
		svm_decode_io(f->info1, &out->io);
		out->next_rip = f->info2; // IOIO exits always report the next RIP
	} else if (out->kind == X86_EXIT_SLAT_VIOLATION) {
		out->gpa = f->info2;
		out->write = f->info1 & 2;
		out->fetch = f->info1 & 0x10;
	}
}
