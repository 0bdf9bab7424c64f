// SPDX-License-Identifier: Apache-2.0
// tests/arch/x86/lib/irq_stubs.S - interrupt gates of the irq payloads: one
// 16-byte stub per vector (NMI, 0x40-0x47, 0xff) that pushes a zero error code
// and its vector, then irq_common calls irq_dispatch(vector, frame) (Microsoft
// x64 convention: RCX, RDX; RAX, RCX, RDX, R8-R11 are caller-saved) and IRETs.

	.text
	.p2align 4
	.globl	irq_stub_nmi
irq_stub_nmi:
	pushq	$0
	pushq	$2
	jmp	irq_common

	.p2align 4
	.globl	irq_stub_spurious
irq_stub_spurious:
	pushq	$0
	pushq	$0xff
	jmp	irq_common

	.p2align 4
	.globl	irq_stub_table
irq_stub_table:
	.irp	n, 0x40,0x41,0x42,0x43,0x44,0x45,0x46,0x47
	.p2align 4
	pushq	$0
	pushq	$\n
	jmp	irq_common
	.endr

irq_common:
	push	%rbp
	push	%rax
	push	%rcx
	push	%rdx
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	mov	64(%rsp), %rcx		// vector
	lea	72(%rsp), %rdx		// error code, RIP, CS, RFLAGS, RSP, SS
	mov	%rsp, %rbp
	and	$-16, %rsp
	sub	$32, %rsp
	cld
	call	irq_dispatch
	mov	%rbp, %rsp
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdx
	pop	%rcx
	pop	%rax
	pop	%rbp
	add	$16, %rsp
	iretq
