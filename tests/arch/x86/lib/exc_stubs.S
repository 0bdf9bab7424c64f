/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/x86/lib/exc_stubs.S - entry stubs of vectors 0-31 for the
 * payloads' exception tests (see exc.h). Each stub records the exception in
 * exc_rec and resumes at exc_resume with RFLAGS.TF and RF cleared; with no
 * resume point set it reports the unexpected exception and stops.
 */
	.text
	.globl	exc_stub_table
	.p2align 4

/* Vectors whose exceptions push an error code: 8, 10-14, 17, 21, 29, 30. */
.macro STUB n
	.p2align 4
exc_stub_\n:
	.if (\n == 8) || ((\n >= 10) && (\n <= 14)) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	pushq	$\n
	.else
	pushq	$0
	pushq	$\n
	.endif
	jmp	exc_common
.endm

	.irp n, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
	STUB	\n
	.endr

	.section .rdata, "dr"
	.p2align 3
exc_stub_table:
	.irp n, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
	.quad	exc_stub_\n
	.endr

	.text
/* Stack: vector, error code, RIP, CS, RFLAGS, RSP, SS. */
exc_common:
	pushq	%rax
	movq	8(%rsp), %rax
	movq	%rax, exc_rec+0(%rip)
	movq	16(%rsp), %rax
	movq	%rax, exc_rec+8(%rip)
	movq	24(%rsp), %rax
	movq	%rax, exc_rec+16(%rip)
	movq	%cr2, %rax
	movq	%rax, exc_rec+24(%rip)
	movq	%dr6, %rax
	movq	%rax, exc_rec+32(%rip)
	movq	40(%rsp), %rax
	movq	%rax, exc_rec+40(%rip)
	incq	exc_rec+48(%rip)
	movq	exc_resume(%rip), %rax
	testq	%rax, %rax
	jz	1f
	movq	%rax, 24(%rsp)
	andq	$~0x10100, 40(%rsp)	/* TF and RF off */
	popq	%rax
	addq	$16, %rsp
	iretq
1:	andq	$-16, %rsp
	subq	$32, %rsp
	call	exc_unexpected
2:	hlt
	jmp	2b
