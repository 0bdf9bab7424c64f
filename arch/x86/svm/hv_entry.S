// SPDX-License-Identifier: Apache-2.0
//
// One entry of a secondary vCPU (svm/hv.c), called from C on the host stack
// inside the primary's exit handler. Microsoft x64 calling convention:
// RCX = the VMCB's physical address (identity-mapped), RDX = the guest's
// GPRs (enum x86_gpr order; RAX and RSP live in the VMCB). RBX, RBP, RDI,
// RSI, R12-R15 are the host's and are preserved; the rest is clobbered.
//
// R8 != 0: set IF for the VMRUN (the calling primary vCPU has interrupts
// enabled). GIF is clear in the host throughout. With V_INTR_MASKING the
// host's IF gates physical interrupts while the guest runs: set, they cause
// an INTR exit and GIF = 0 after #VMEXIT keeps them pending until the
// primary runs again; clear, they wait until the primary enables them.
//
// The NOP after STI: STI's interrupt shadow must end in the host. QEMU 7.2
// carries a shadow still active at VMRUN into the guest (it never loads the
// VMCB's interrupt state there), so the guest's own next STI would open its
// window one instruction early (docs/secondary-vms-x86.md). On hardware
// GIF = 0 blocks interrupts here anyway: the NOP changes nothing.

#include "arch/x86/gprs.S.h"

	.text
	.globl	svm_hv_run_once
svm_hv_run_once:
	HOST_CALLEE_SAVED_PUSH
	push	%rdx			// 16(%rsp): gprs
	push	%rcx			// 8(%rsp): VMCB
	push	%r8			// (%rsp): set IF for the VMRUN?
	mov	%rdx, %rax
	GUEST_GPRS_LOAD %rax
	mov	8(%rsp), %rax
	vmload	%rax
	cmpq	$0, (%rsp)
	je	5f
	sti
	nop
5:	vmrun	%rax
	cli
	// #VMEXIT restored the host's RAX (the VMCB), RSP and RFLAGS.
	vmsave	%rax
	mov	16(%rsp), %rax
	GUEST_GPRS_STORE %rax
	add	$24, %rsp
	HOST_CALLEE_SAVED_POP
	ret
