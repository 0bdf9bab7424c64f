// SPDX-License-Identifier: Apache-2.0
//
// tests/arch/arm64/lib/a64_vectors.S - the payloads' own EL1 exception
// vectors (every entry saves x0-x30, ELR and SPSR and calls
// a64_exc_dispatch(frame, index)), the PSCI conduit instructions and the
// CPU_ON target of the psci payload.

#define FRAME 272 // x0..x30, elr, spsr, pad

.macro vector idx
	.balign 0x80
	sub	sp, sp, #FRAME
	stp	x0, x1, [sp, #0]
	mov	x1, #\idx
	b	a64_vec_common
.endm

	.text
	.balign 2048
	.globl	a64_vector_table
a64_vector_table:
	vector 0
	vector 1
	vector 2
	vector 3
	vector 4
	vector 5
	vector 6
	vector 7
	vector 8
	vector 9
	vector 10
	vector 11
	vector 12
	vector 13
	vector 14
	vector 15

a64_vec_common:
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	stp	x16, x17, [sp, #128]
	stp	x18, x19, [sp, #144]
	stp	x20, x21, [sp, #160]
	stp	x22, x23, [sp, #176]
	stp	x24, x25, [sp, #192]
	stp	x26, x27, [sp, #208]
	stp	x28, x29, [sp, #224]
	mrs	x2, elr_el1
	stp	x30, x2, [sp, #240]
	mrs	x2, spsr_el1
	str	x2, [sp, #256]
	mov	x0, sp
	bl	a64_exc_dispatch
	ldr	x2, [sp, #256]
	msr	spsr_el1, x2
	ldp	x30, x2, [sp, #240]
	msr	elr_el1, x2
	ldp	x0, x1, [sp, #0]
	ldp	x2, x3, [sp, #16]
	ldp	x4, x5, [sp, #32]
	ldp	x6, x7, [sp, #48]
	ldp	x8, x9, [sp, #64]
	ldp	x10, x11, [sp, #80]
	ldp	x12, x13, [sp, #96]
	ldp	x14, x15, [sp, #112]
	ldp	x16, x17, [sp, #128]
	ldp	x18, x19, [sp, #144]
	ldp	x20, x21, [sp, #160]
	ldp	x22, x23, [sp, #176]
	ldp	x24, x25, [sp, #192]
	ldp	x26, x27, [sp, #208]
	ldp	x28, x29, [sp, #224]
	add	sp, sp, #FRAME
	eret

	.balign 4
	.globl	a64_hvc
a64_hvc:
	hvc	#0
	ret

	.balign 4
	.globl	a64_smc
a64_smc:
	smc	#0
	ret

// CPU_ON target: x0 = struct a64_cpu_mailbox * (a64.h), MMU and caches off.
	.balign 4
	.globl	a64_cpu_entry
a64_cpu_entry:
	mov	x19, x0
	str	x0, [x19, #24]
	mrs	x1, CurrentEL
	lsr	x1, x1, #2
	str	w1, [x19, #12]
	mrs	x1, sctlr_el1
	str	x1, [x19, #16]
	dsb	sy
	mov	w1, #1
	str	w1, [x19, #0]
	dsb	sy
	movz	x5, #0x400, lsl #16 // bounded wait for the release (2^26 rounds)
1:	ldr	w1, [x19, #4]
	cbnz	w1, 2f
	subs	x5, x5, #1
	b.ne	1b
2:	ldr	w2, [x19, #8]
	movz	x0, #0x8400, lsl #16
	movk	x0, #0x0002 // PSCI CPU_OFF
	cbz	w2, 3f
	hvc	#0
	b	4f
3:	smc	#0
4:	wfe
	b	4b
