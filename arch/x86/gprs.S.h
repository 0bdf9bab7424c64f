// SPDX-License-Identifier: Apache-2.0
//
// The guest GPR moves the x86 entry paths share (svm/svm_entry.S,
// vmx/vmx_entry.S): the guest's registers in memory at \base
// in enum x86_gpr order (8 bytes each: RAX, RCX, RDX, RBX, RSP, RBP, RSI,
// RDI, R8..R15). RAX and RSP are not moved (the VMCB / VMCS and the caller
// hold them); \base must be neither of the registers moved, so use %rax.
// MOVs only: the flags are unchanged.

.macro GUEST_GPRS_LOAD base
	mov	8*1(\base), %rcx
	mov	8*2(\base), %rdx
	mov	8*3(\base), %rbx
	mov	8*5(\base), %rbp
	mov	8*6(\base), %rsi
	mov	8*7(\base), %rdi
	mov	8*8(\base), %r8
	mov	8*9(\base), %r9
	mov	8*10(\base), %r10
	mov	8*11(\base), %r11
	mov	8*12(\base), %r12
	mov	8*13(\base), %r13
	mov	8*14(\base), %r14
	mov	8*15(\base), %r15
.endm

.macro GUEST_GPRS_STORE base
	mov	%rcx, 8*1(\base)
	mov	%rdx, 8*2(\base)
	mov	%rbx, 8*3(\base)
	mov	%rbp, 8*5(\base)
	mov	%rsi, 8*6(\base)
	mov	%rdi, 8*7(\base)
	mov	%r8, 8*8(\base)
	mov	%r9, 8*9(\base)
	mov	%r10, 8*10(\base)
	mov	%r11, 8*11(\base)
	mov	%r12, 8*12(\base)
	mov	%r13, 8*13(\base)
	mov	%r14, 8*14(\base)
	mov	%r15, 8*15(\base)
.endm

// The host's registers the Microsoft x64 ABI has a callee preserve (RBX, RBP,
// RDI, RSI, R12-R15), around an entry called from C (svm/svm_entry.S,
// vmx/vmx_entry.S): 64 bytes, RBX at the top.
.macro HOST_CALLEE_SAVED_PUSH
	push	%rbx
	push	%rbp
	push	%rdi
	push	%rsi
	push	%r12
	push	%r13
	push	%r14
	push	%r15
.endm

.macro HOST_CALLEE_SAVED_POP
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rsi
	pop	%rdi
	pop	%rbp
	pop	%rbx
.endm

// The registers the Microsoft x64 ABI lets a callee clobber (RAX, RCX, RDX,
// R8-R11), around a C call from a host interrupt or exception stub
// (svm/svm_entry.S, vmx/vmx_entry.S): 56 bytes, RAX at the top; the stubs
// find the CPU's frame (vector, error code, RIP, ...) just above them.
.macro HOST_VOLATILE_PUSH
	push	%rax
	push	%rcx
	push	%rdx
	push	%r8
	push	%r9
	push	%r10
	push	%r11
.endm

.macro HOST_VOLATILE_POP
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdx
	pop	%rcx
	pop	%rax
.endm
