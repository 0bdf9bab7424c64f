// SPDX-License-Identifier: Apache-2.0
//
// One entry of a secondary vCPU on VT-x (vmx/hv.c), called from C on the host
// stack inside the primary's exit handler, with the secondary's VMCS
// current. Microsoft x64 calling convention: RCX = the guest's GPRs (enum
// x86_gpr order; RSP lives in the VMCS), RDX = 0 for VMLAUNCH, else
// VMRESUME. Returns 0 after a VM exit, 1 when the VM entry itself failed
// (VMfailValid / VMfailInvalid: the error is in the VMCS or there is none).
// RBX, RBP, RDI, RSI, R12-R15 are preserved.

#include "arch/x86/gprs.S.h"

#define VMCS_HOST_RSP 0x6c14
#define VMCS_HOST_RIP 0x6c16

	.text
	.globl	vmx_hv_run_once
vmx_hv_run_once:
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
