/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arm64 secondary payload: EL1h, MMU off (every data access is Device
 * memory: 32-bit aligned only), pc and x0 = vCPU index set through SET_REGS.
 * Loops on jobs of its mailbox (job.h); reports with a 32-bit store to
 * GJ_UCALL, which no slot maps (an MMIO exit, like KVM's ucall).
 */
#include "job.h"

	.text
	.globl _start
_start:
	mov	x19, #GJ_MAILBOX
	add	x19, x19, x0, lsl #6	/* x19 = this vCPU's mailbox */
	mov	w20, #0			/* last seq seen */
wait:
	movz	w9, #(GJ_SPIN >> 16), lsl #16	/* bounded wait for a new job */
1:	ldr	w1, [x19, #GJ_SEQ]
	cmp	w1, w20
	b.ne	got
	subs	w9, w9, #1
	b.ne	1b
	mov	w1, #GJ_IDLE		/* gave up waiting: say so, wait again */
	bl	ucall
	b	wait
got:
	mov	w20, w1
	ldr	w2, [x19, #GJ_OPF]
	tbnz	w2, #2, quit		/* GJ_OP_QUIT */
	ldr	w3, [x19, #GJ_GPA]
	ldr	w4, [x19, #GJ_PBASE]
	ldr	w5, [x19, #GJ_LEN]
	ldr	w6, [x19, #GJ_STRIDE]
	cbnz	w6, 2f
	mov	w6, #4
2:	ldr	w7, [x19, #GJ_SEED]
	ldr	w8, [x19, #GJ_TAG]
	eor	w7, w7, w8, lsl #24
	mov	w10, #0			/* offset; bounded by GJ_LEN */
	mov	w11, #0			/* errors */
	mov	w12, #0			/* first bad address */
	mov	w13, #0			/* words */
job:
	cmp	w10, w5
	b.hs	done
	add	w14, w4, w10
	eor	w14, w14, w7		/* w14 = the pattern word */
	add	x15, x3, w10, uxtw
	tbz	w2, #0, 3f		/* GJ_OP_WRITE */
	str	w14, [x15]
3:	tbz	w2, #1, 4f		/* GJ_OP_CHECK */
	ldr	w16, [x15]
	cmp	w16, w14
	b.eq	4f
	cbnz	w11, 5f
	mov	w12, w15
5:	add	w11, w11, #1
4:	add	w13, w13, #1
	adds	w10, w10, w6
	b.cs	done			/* offset wrapped: stop */
	b	job
done:
	str	w11, [x19, #GJ_ERRORS]
	str	w12, [x19, #GJ_FIRST]
	str	w13, [x19, #GJ_WORDS]
	str	w20, [x19, #GJ_DONE]
	mov	w1, w20
	bl	ucall
	b	wait
quit:
	wfi
	b	quit

ucall:					/* w1 = value */
	movz	x9, #(GJ_UCALL >> 16), lsl #16
	str	w1, [x9]
	ret
