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

	.text
	.globl	svm_hv_run_once
svm_hv_run_once:
	push	%rbx
	push	%rbp
	push	%rdi
	push	%rsi
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	push	%rdx			// 16(%rsp): gprs
	push	%rcx			// 8(%rsp): VMCB
	push	%r8			// (%rsp): set IF for the VMRUN?
	mov	%rdx, %rax
	mov	8*1(%rax), %rcx
	mov	8*2(%rax), %rdx
	mov	8*3(%rax), %rbx
	mov	8*5(%rax), %rbp
	mov	8*6(%rax), %rsi
	mov	8*7(%rax), %rdi
	mov	8*8(%rax), %r8
	mov	8*9(%rax), %r9
	mov	8*10(%rax), %r10
	mov	8*11(%rax), %r11
	mov	8*12(%rax), %r12
	mov	8*13(%rax), %r13
	mov	8*14(%rax), %r14
	mov	8*15(%rax), %r15
	mov	8(%rsp), %rax
	vmload	%rax
	cmpq	$0, (%rsp)
	je	5f
	sti
5:	vmrun	%rax
	cli
	// #VMEXIT restored the host's RAX (the VMCB), RSP and RFLAGS.
	vmsave	%rax
	mov	16(%rsp), %rax
	mov	%rcx, 8*1(%rax)
	mov	%rdx, 8*2(%rax)
	mov	%rbx, 8*3(%rax)
	mov	%rbp, 8*5(%rax)
	mov	%rsi, 8*6(%rax)
	mov	%rdi, 8*7(%rax)
	mov	%r8, 8*8(%rax)
	mov	%r9, 8*9(%rax)
	mov	%r10, 8*10(%rax)
	mov	%r11, 8*11(%rax)
	mov	%r12, 8*12(%rax)
	mov	%r13, 8*13(%rax)
	mov	%r14, 8*14(%rax)
	mov	%r15, 8*15(%rax)
	add	$24, %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rsi
	pop	%rdi
	pop	%rbp
	pop	%rbx
	ret
