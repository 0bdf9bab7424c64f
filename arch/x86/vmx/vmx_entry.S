// SPDX-License-Identifier: Apache-2.0
//
// VMX entry and exit paths (Microsoft x64 calling convention: arguments in
// rcx, rdx, r8, r9; rbx, rbp, rdi, rsi, r12-r15 callee-saved; 32 bytes of
// shadow space above the return address; rsp 16-byte aligned at a call).

#include "arch/x86/gprs.S.h"

	.text

// int64_t vmx_call_then_launch(uint64_t fn, void *arg)
// Runs in the firmware-loaded image. fn(arg, resume_rip, resume_rsp) is the
// resident copy's: it either VMLAUNCHes this CPU as a guest that continues at
// 1: below with rsp = resume_rsp, or returns an error.
	.globl vmx_call_then_launch
vmx_call_then_launch:
	HOST_CALLEE_SAVED_PUSH
	pushfq
	cli
	mov	%rcx, %rax
	mov	%rdx, %rcx
	lea	1f(%rip), %rdx
	mov	%rsp, %r8
	sub	$32, %rsp
	call	*%rax
	add	$32, %rsp
	popfq
	jmp	2f
1:	// First instruction of the primary VM on this CPU (guest mode).
	popfq
	xor	%eax, %eax
2:	HOST_CALLEE_SAVED_POP
	ret

// int vmx_enter_guest(uint64_t *gprs, uint64_t resume)
// The one VM entry of every VT-x vCPU, the primary's (vmx_primary_loop,
// exit.c) and a secondary's (vmx/hv.c), with its VMCS current: RCX = the
// guest's GPRs (enum x86_gpr order; RSP lives in the VMCS), RDX = 0 for
// VMLAUNCH, else VMRESUME. HOST_RSP / HOST_RIP are written here, so the exit
// returns to this call's caller on the same stack. Returns 0 after a VM exit,
// 1 when the VM entry itself failed (VMfailValid / VMfailInvalid: the error
// is in the VMCS or there is none). RBX, RBP, RDI, RSI, R12-R15 are preserved.
#define VMCS_HOST_RSP 0x6c14
#define VMCS_HOST_RIP 0x6c16
	.globl	vmx_enter_guest
vmx_enter_guest:
	HOST_CALLEE_SAVED_PUSH
	push	%rcx			// (%rsp): gprs, found again at the exit
	mov	$VMCS_HOST_RSP, %rax
	vmwrite	%rsp, %rax
	lea	1f(%rip), %rbx
	mov	$VMCS_HOST_RIP, %rax
	vmwrite	%rbx, %rax
	mov	%rcx, %rax
	test	%rdx, %rdx		// launched? (the loads below leave the flags alone)
	GUEST_GPRS_LOAD %rax
	mov	(%rax), %rax
	jnz	2f
	vmlaunch
	jmp	3f
2:	vmresume
3:	// VM entry failed: the guest's registers are loaded; the host's are on the stack.
	mov	$1, %eax
	jmp	4f
1:	// VM exit: RSP is the host RSP written above.
	push	%rax
	mov	8(%rsp), %rax
	GUEST_GPRS_STORE %rax
	pop	%rcx
	mov	%rcx, (%rax)
	xor	%eax, %eax
4:	add	$8, %rsp
	HOST_CALLEE_SAVED_POP
	ret

// void vmx_call_on_stack(void (*fn)(void *), void *arg, uint64_t stack_top)
// fn(arg) on the stack below stack_top (16-byte aligned); returns when fn
// does, on the caller's stack again.
	.globl	vmx_call_on_stack
vmx_call_on_stack:
	push	%rbp
	mov	%rsp, %rbp
	mov	%r8, %rsp
	mov	%rcx, %rax
	mov	%rdx, %rcx
	sub	$32, %rsp
	call	*%rax
	mov	%rbp, %rsp
	pop	%rbp
	ret

// Host IDT: 32 stubs of 16 bytes each. Those without a CPU-pushed error code
// push 0 so that every frame looks the same, then the vector number.
	.balign 16
	.globl vmx_idt_stubs
vmx_idt_stubs:
	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.balign 16
	.if (\vec == 8) || (\vec >= 10 && \vec <= 14) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
	push	$\vec
	.else
	push	$0
	push	$\vec
	.endif
	jmp	vmx_idt_common
	.endr

// Frame: vector, error code, rip, cs, rflags, rsp, ss.
vmx_idt_common:
	push	%rbp
	HOST_VOLATILE_PUSH
	mov	64(%rsp), %rcx	// vector
	lea	72(%rsp), %rdx	// error code, then the CPU's frame
	mov	%rsp, %rbp
	and	$-16, %rsp
	sub	$32, %rsp
	call	vmx_host_exception
	mov	%rbp, %rsp
	HOST_VOLATILE_POP
	pop	%rbp
	add	$16, %rsp
	iretq
