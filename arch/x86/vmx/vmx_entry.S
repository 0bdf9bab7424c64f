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

// void vmx_launch(void): VMLAUNCH the current VMCS; returns on failure.
	.globl vmx_launch
vmx_launch:
	vmlaunch
	ret

// HOST_RIP. HOST_RSP points at a slot holding the CPU's struct vmx_pcpu *;
// the guest registers are pushed below it as struct vmx_gprs (r[0] = rax).
	.globl vmx_exit_stub
vmx_exit_stub:
	push	%r15
	push	%r14
	push	%r13
	push	%r12
	push	%r11
	push	%r10
	push	%r9
	push	%r8
	push	%rdi
	push	%rsi
	push	%rbp
	push	$0		// rsp: in the VMCS
	push	%rbx
	push	%rdx
	push	%rcx
	push	%rax
	mov	%rsp, %rcx
	sub	$32, %rsp
	call	vmx_handle_exit
	add	$32, %rsp
	pop	%rax
	pop	%rcx
	pop	%rdx
	pop	%rbx
	add	$8, %rsp
	pop	%rbp
	pop	%rsi
	pop	%rdi
	pop	%r8
	pop	%r9
	pop	%r10
	pop	%r11
	pop	%r12
	pop	%r13
	pop	%r14
	pop	%r15
	vmresume
	// VMRESUME failed: report with the registers on the stack again.
	sub	$128, %rsp
	mov	%rsp, %rcx
	sub	$32, %rsp
	call	vmx_resume_failed
3:	cli
	hlt
	jmp	3b

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
