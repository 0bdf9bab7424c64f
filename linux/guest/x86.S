/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The x86 secondary payload: 32-bit protected mode, flat segments, no paging
 * (the VMM sets CR0.PE, the segments and EIP through SET_REGS; ESI = vCPU
 * index). Loops on jobs of its mailbox (job.h); reports with OUT to GJ_PORT.
 */
#include "job.h"

	.macro	ucall			/* eax = value; no stack needed */
	mov	$GJ_PORT, %dx
	out	%eax, %dx
	.endm

	.code32
	.text
	.globl _start
_start:
	mov	%esi, %ebp
	shl	$6, %ebp
	add	$GJ_MAILBOX, %ebp	/* ebp = this vCPU's mailbox */
	xor	%edi, %edi		/* edi = last seq seen */
wait:
	mov	$GJ_SPIN, %ecx		/* bounded wait for a new job */
1:	mov	GJ_SEQ(%ebp), %eax
	cmp	%edi, %eax
	jne	got
	pause
	dec	%ecx
	jnz	1b
	mov	$GJ_IDLE, %eax		/* gave up waiting: say so, wait again */
	ucall
	jmp	wait
got:
	mov	%eax, %edi
	mov	GJ_OPF(%ebp), %eax
	test	$GJ_OP_QUIT, %eax
	jnz	quit
	movl	$0, GJ_ERRORS(%ebp)
	movl	$0, GJ_FIRST(%ebp)
	movl	$0, GJ_WORDS(%ebp)
	mov	GJ_STRIDE(%ebp), %esi
	test	%esi, %esi
	jnz	2f
	mov	$4, %esi
2:	mov	GJ_GPA(%ebp), %ebx
	xor	%ecx, %ecx		/* offset; bounded by GJ_LEN */
job:
	cmp	GJ_LEN(%ebp), %ecx
	jae	done
	mov	GJ_PBASE(%ebp), %eax
	add	%ecx, %eax
	xor	GJ_SEED(%ebp), %eax
	mov	GJ_TAG(%ebp), %edx
	shl	$24, %edx
	xor	%edx, %eax		/* eax = the pattern word */
	testl	$GJ_OP_WRITE, GJ_OPF(%ebp)
	jz	3f
	mov	%eax, (%ebx,%ecx)
3:	testl	$GJ_OP_CHECK, GJ_OPF(%ebp)
	jz	4f
	mov	(%ebx,%ecx), %edx	/* a plain load: the form MMIO emulation decodes */
	cmp	%edx, %eax
	je	4f
	cmpl	$0, GJ_ERRORS(%ebp)
	jne	5f
	lea	(%ebx,%ecx), %edx
	mov	%edx, GJ_FIRST(%ebp)
5:	incl	GJ_ERRORS(%ebp)
4:	incl	GJ_WORDS(%ebp)
	add	%esi, %ecx
	jc	done			/* offset wrapped: stop */
	jmp	job
done:
	mov	%edi, GJ_DONE(%ebp)
	mov	%edi, %eax
	ucall
	jmp	wait
quit:
	hlt
	jmp	quit
