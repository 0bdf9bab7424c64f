// SPDX-License-Identifier: Apache-2.0
//
// EL2 entry points of Slat on arm64: the exception vectors, the drop of the
// running firmware to EL1, the secondary-CPU entry used by PSCI CPU_ON, and a
// few instructions C cannot express. Only the resident copy's instances of
// these run at EL2 after the drop (see arch/arm64/hyp.h).

#define FRAME_SIZE 272 // struct arm64_frame: x0..x30, elr, spsr, pad
#define FRAME_ELR  248
#define PCPU_VCPU  16  // struct arm64_pcpu: vcpu (static_assert in hyp.h)
#define PCPU_HV_FRAME 24 // struct arm64_pcpu: hv_frame
#define PCPU_HV_SP    32 // struct arm64_pcpu: hv_sp
#define HV_SAVE_SIZE  96 // arm64_hv_enter's save area: x19..x30

// \op (stp or ldp) the registers \r\a,\r\b, then the next pair, ... at
// [\base, #\off], [\base, #\off+\step], ... (\step: 16 for x, 32 for q).
// The layouts, each named where it is used: struct arm64_frame's x[] (hyp.h),
// arm64_hv_enter's save area, arm64_call_then_drop's frame, and the FP area
// of struct arm64_hv_vcpu (hv_vcpu.h: fp[528]).
.macro pairs op, r, base, off, step, a, b, rest:vararg
	\op	\r\a, \r\b, [\base, #\off]
	.ifnb \rest
	pairs \op, \r, \base, (\off+\step), \step, \rest
	.endif
.endm

	.text

// ---- exception vectors ---------------------------------------------------
// 16 entries of 0x80 bytes; each saves x0/x1, puts its index in x0 and joins
// the common path. Index: 0-3 current EL with SP_EL0, 4-7 current EL with
// SP_ELx, 8-11 lower EL AArch64, 12-15 lower EL AArch32 (sync, IRQ, FIQ, SError).
// Lower-EL exceptions are exits of the vCPU this CPU runs:
// arm64_handle_exit(vcpu, frame, index), then back to the guest. The others
// are exceptions in Slat itself: arm64_el2_fault(index, frame), no return.
.macro vector idx
	.balign 0x80
	sub	sp, sp, #FRAME_SIZE
	stp	x0, x1, [sp, #0]
	mov	x0, #\idx
	b	el2_trap_common
.endm

	.balign 2048
	.globl	arm64_el2_vectors
arm64_el2_vectors:
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

el2_trap_common:
	// struct arm64_frame: x[2..29] at 16..239 (x0, x1: the vector saved them)
	pairs stp, x, sp, 16, 16, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29
	mrs	x1, elr_el2
	stp	x30, x1, [sp, #240]
	mrs	x1, spsr_el2
	str	x1, [sp, #256]
	mov	x1, sp
	tbz	x0, #3, el2_fault    // index < 8: taken at EL2
	mrs	x2, tpidr_el2
	ldr	x3, [x2, #PCPU_HV_FRAME]
	cbnz	x3, hv_exit          // a secondary vCPU ran: back to arm64_hv_enter
	mov	x2, x0
	mrs	x0, tpidr_el2
	ldr	x0, [x0, #PCPU_VCPU] // this CPU's struct arm64_pcpu: its vCPU
	bl	arm64_handle_exit
	ldr	x1, [sp, #256]
	msr	spsr_el2, x1
	ldp	x30, x1, [sp, #240]
	msr	elr_el2, x1
	pairs ldp, x, sp, 0, 16, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29 // frame x[0..29]
	add	sp, sp, #FRAME_SIZE
	eret

// The exit of a secondary vCPU: x0 = vector index, x2 = this CPU's record,
// x3 = pcpu->hv_frame, the guest's frame at sp. Copies the frame into
// hv_frame, clears it (the next lower-EL exception is the primary's again)
// and returns the index from arm64_hv_enter on its saved stack.
hv_exit:
	str	xzr, [x2, #PCPU_HV_FRAME]
	mov	x4, sp
	mov	x5, #(FRAME_SIZE / 16)
1:	ldp	x6, x7, [x4], #16
	stp	x6, x7, [x3], #16
	subs	x5, x5, #1
	b.ne	1b
	ldr	x4, [x2, #PCPU_HV_SP]
	mov	sp, x4
	pairs ldp, x, sp, 0, 16, 19,20,21,22,23,24,25,26,27,28,29,30 // hv save area: x19..x30
	add	sp, sp, #HV_SAVE_SIZE
	ret

el2_fault:
	bl	arm64_el2_fault
3:	wfe
	b	3b

// ---- int64_t arm64_call_then_drop(uint64_t fn, void *arg) ----------------
// Runs in the firmware-loaded image. Saves the callee-saved registers on the
// current (firmware) stack and calls fn(arg, resume_pc, el1_sp) at EL2. fn
// either returns an error (we return it, still at EL2) or ERETs to resume_pc
// at EL1 with SP_EL1 = el1_sp and x0 = 0: we then restore and return 0 at EL1.
	.balign 4
	.globl	arm64_call_then_drop
arm64_call_then_drop:
	stp	x29, x30, [sp, #-112]!
	mov	x29, sp
	pairs stp, x, sp, 16, 16, 19,20,21,22,23,24,25,26,27,28 // x29, x30 at 0, daif at 96
	mrs	x3, daif            // interrupts stay masked until we are back
	str	x3, [sp, #96]
	msr	daifset, #0xf
	mov	x16, x0
	mov	x0, x1
	adr	x1, 1f
	mov	x2, sp
	blr	x16
1:	ldr	x3, [sp, #96]
	msr	daif, x3
	pairs ldp, x, sp, 16, 16, 19,20,21,22,23,24,25,26,27,28
	ldp	x29, x30, [sp], #112
	ret

// ---- void arm64_eret_to_el1(pc, el1_sp, x0, el2_sp) ----------------------
	.balign 4
	.globl	arm64_eret_to_el1
arm64_eret_to_el1:
	msr	elr_el2, x0
	mov	x5, #0x3c5 // EL1h, D A I F masked
	msr	spsr_el2, x5
	msr	sp_el1, x1
	mov	sp, x3
	mov	x0, x2
	mov	x1, xzr
	mov	x2, xzr
	mov	x3, xzr
	mov	x4, xzr
	mov	x5, xzr
	mov	x29, xzr
	mov	x30, xzr
	isb
	eret

// ---- uint64_t arm64_hv_enter(struct arm64_pcpu *pc, struct arm64_frame *f)
// Interrupts are masked (we run in an exception handler). The frame's x0..x30
// become the guest's, its elr and spsr the ERET target.
	.balign 4
	.globl	arm64_hv_enter
arm64_hv_enter:
	sub	sp, sp, #HV_SAVE_SIZE
	pairs stp, x, sp, 0, 16, 19,20,21,22,23,24,25,26,27,28,29,30 // hv save area: x19..x30
	mov	x2, sp
	str	x2, [x0, #PCPU_HV_SP]
	str	x1, [x0, #PCPU_HV_FRAME]
	ldp	x2, x3, [x1, #FRAME_ELR]  // elr, spsr
	msr	elr_el2, x2
	msr	spsr_el2, x3
	mov	x30, x1
	pairs ldp, x, x30, 0, 16, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29 // frame x[0..29]
	ldr	x30, [x30, #240]
	eret
	// No speculation past the ERET.
	dsb	nsh
	isb

// ---- FP/SIMD save and load (528 bytes: V0-V31, FPSR, FPCR) ----------------
	.arch_extension fp
	.arch_extension simd
	.balign 4
	.globl	arm64_fp_save
arm64_fp_save:
	pairs stp, q, x0, 0, 32, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 // V0-V31 at 0..511
	mrs	x1, fpsr
	mrs	x2, fpcr
	add	x3, x0, #512
	stp	x1, x2, [x3]
	ret

	.balign 4
	.globl	arm64_fp_load
arm64_fp_load:
	pairs ldp, q, x0, 0, 32, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 // V0-V31 at 0..511
	add	x3, x0, #512
	ldp	x1, x2, [x3]
	msr	fpsr, x1
	msr	fpcr, x2
	ret

// ---- uint64_t arm64_smc4(x0, x1, x2, x3) ---------------------------------
	.balign 4
	.globl	arm64_smc4
arm64_smc4:
	smc	#0
	ret

// ---- void arm64_el2_switch_ttbr0(uint64_t ttbr0) -------------------------
// Both the old and the new tables map the running code identically.
	.balign 4
	.globl	arm64_el2_switch_ttbr0
arm64_el2_switch_ttbr0:
	dsb	ish
	msr	ttbr0_el2, x0
	isb
	tlbi	alle2
	dsb	ish
	isb
	ret

// ---- PSCI CPU_ON target: x0 = struct arm64_pcpu *, MMU and caches off -----
// Turns on Slat's EL2 translation (the boot CPU's values), then calls
// arm64_secondary_main(pcpu) on the CPU's own stack; that never returns.
	.balign 4
	.globl	arm64_secondary_entry
arm64_secondary_entry:
	mov	x19, x0
	ldr	x1, [x19, #8]      // pcpu->mmu
	ldr	x2, [x1, #0]
	msr	tcr_el2, x2
	ldr	x2, [x1, #8]
	msr	mair_el2, x2
	ldr	x2, [x1, #16]
	msr	ttbr0_el2, x2
	isb
	tlbi	alle2
	ic	iallu
	dsb	nsh
	isb
	ldr	x2, [x1, #24]
	msr	sctlr_el2, x2
	isb
	ldr	x2, [x1, #32]
	msr	vbar_el2, x2
	ldr	x2, [x19, #0]      // pcpu->stack_top
	mov	sp, x2
	msr	tpidr_el2, x19
	mov	x29, xzr
	mov	x30, xzr
	mov	x0, x19
	bl	arm64_secondary_main
2:	wfe
	b	2b
