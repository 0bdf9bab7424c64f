// SPDX-License-Identifier: Apache-2.0
//
// SVM host entry: deprivileging the calling CPU (svm_launch), the one VMRUN
// sequence (svm_vmrun), the primary's loop around it (svm_run) and the host's
// exception stubs.
// Microsoft x64 calling convention (slat.efi is a PE image): first argument
// in RCX; RBX, RBP, RDI, RSI, R12-R15 are callee-saved.

#include "arch/x86/gprs.S.h"

// struct svm_cpu offsets (svm.h)
#define C_VMCB_PA    0
#define C_GPRS	     8
#define C_STACK_TOP  16
#define C_HOST_CR3   24
#define C_GDTR_BASE  32
#define C_IDTR_BASE  40
#define C_HOST_ENTRY 48
#define C_VMLOAD     56
#define C_RUN_VMCB   64
#define C_RUN_STI    72

// c->run_sti (enum svm_run_if, svm.h)
#define SVM_RUN_CLI	   0
#define SVM_RUN_STI	   1
#define SVM_RUN_STI_SHADOW 2

// VMCB state-save offsets (svm.h)
#define VMCB_RFLAGS 0x570
#define VMCB_RIP    0x578
#define VMCB_RSP    0x5d8
#define VMCB_RAX    0x5f8

#define HOST_CS	  0x08
#define HOST_DS	  0x10
#define GDT_LIMIT 39   // null, code, data, 16-byte TSS (host_env.c)
#define IDT_LIMIT 4095 // 256 gates of 16 bytes (host_env.c)

	.text

// int svm_launch(struct svm_cpu *c)
// Called in the loaded image (so that the guest's return path stays in memory
// the firmware owns). The caller's state (with RIP at 1: below and RSP after the pushes) is the
// guest's: VMRUN resumes there in guest mode with RAX = 0, so the guest sees
// this call return 0 with its callee-saved registers intact. The CPU itself
// goes on as the host on its own stack, tables, GDT and IDT, GIF clear.
	.globl	svm_launch
svm_launch:
	HOST_CALLEE_SAVED_PUSH
	mov	C_VMCB_PA(%rcx), %rax
	pushfq
	popq	%rdx
	mov	%rdx, VMCB_RFLAGS(%rax)
	lea	1f(%rip), %rdx
	mov	%rdx, VMCB_RIP(%rax)
	mov	%rsp, VMCB_RSP(%rax)
	movq	$0, VMCB_RAX(%rax)
	cli
	clgi
	mov	C_HOST_CR3(%rcx), %rdx
	mov	%rdx, %cr3
	mov	C_STACK_TOP(%rcx), %rsp
	sub	$16, %rsp
	movw	$GDT_LIMIT, (%rsp)
	mov	C_GDTR_BASE(%rcx), %rdx
	mov	%rdx, 2(%rsp)
	lgdt	(%rsp)
	movw	$IDT_LIMIT, (%rsp)
	mov	C_IDTR_BASE(%rcx), %rdx
	mov	%rdx, 2(%rsp)
	lidt	(%rsp)
	add	$16, %rsp
	pushq	$HOST_CS
	lea	2f(%rip), %rdx
	pushq	%rdx
	lretq
2:	mov	$HOST_DS, %edx
	mov	%edx, %ds
	mov	%edx, %es
	mov	%edx, %ss
	// svm_host_entry(c) in the resident copy, as if called: the 32-byte
	// home area of the Microsoft ABI and a return-address slot on the
	// host stack (16-byte aligned, so RSP % 16 == 8 at the entry).
	sub	$40, %rsp
	jmp	*C_HOST_ENTRY(%rcx)
1:	// guest mode from here: the firmware's own call returns
	HOST_CALLEE_SAVED_POP
	ret

// svm_vmrun(struct svm_cpu *c): the CPU's one VMRUN sequence, for every kind
// of guest: the primary's vCPU (svm_run's loop), a nested L2 (the same loop
// with c->run_vmcb_pa on vmcb02) and a secondary (svm/hv.c, inside the
// primary's exit). The kind is data: c->run_vmcb_pa is the VMCB entered (and
// VMLOADed), c->gprs the guest's GPRs other than RAX and RSP (which VMRUN
// takes from the VMCB), c->run_sti the host's IF for the VMRUN. Returns after
// the #VMEXIT with the guest's GPRs stored back; the host's callee-saved
// registers are preserved (Microsoft x64 ABI), the rest clobbered.
//
// VMLOAD/VMSAVE move the state VMRUN does not (FS, GS, TR, LDTR, the
// SYSCALL/SYSENTER MSRs, KernelGSBase); the host never uses those, so the CPU
// keeps the guest's values across an exit: VMLOAD only when the host rewrote
// them in the VMCB (c->vmload, cleared here), VMSAVE only when it reads them
// (svm_vmcb_save_state; a secondary's after each exit, svm/hv.c). Each costs
// dozens of memory accesses per exit.
//
// With c->run_sti the VMRUN runs with the host's IF set: under V_INTR_MASKING
// physical interrupts then exit the guest, and GIF = 0 after #VMEXIT keeps
// them pending until the primary runs again. The NOP after STI: STI's
// interrupt shadow must end in the host. QEMU 7.2 carries a shadow still
// active at VMRUN into the guest (it never loads the VMCB's interrupt state
// there), so the guest's own next STI would open its window one instruction
// early (docs/secondary-vms-x86.md). On hardware GIF = 0 blocks interrupts
// here anyway: the NOP changes nothing.
//
// SVM_RUN_STI_SHADOW (the guest is in an interrupt shadow, VMCB bit 0 of
// INT_SHADOW): the STI comes right before VMRUN. Hardware loads the guest's
// shadow from the VMCB and GIF = 0 holds the host's interrupts, so the two
// sequences behave alike there; QEMU 7.2 instead carries the host's shadow into
// the guest, so the guest keeps the shadow its VMCB says it is in. Without it,
// an exit right after the guest's STI (a host interrupt) lost the shadow and
// the guest took a pending interrupt before the HLT of STI; HLT.
	.globl	svm_vmrun
svm_vmrun:
	HOST_CALLEE_SAVED_PUSH
	push	%rcx			// (%rsp): c
	cmpq	$0, C_VMLOAD(%rcx)
	je	1f
	movq	$0, C_VMLOAD(%rcx)
	mov	C_RUN_VMCB(%rcx), %rax
	vmload	%rax
1:	mov	C_GPRS(%rcx), %rax
	GUEST_GPRS_LOAD %rax
	mov	(%rsp), %rax
	cmpq	$SVM_RUN_STI, C_RUN_STI(%rax)
	mov	C_RUN_VMCB(%rax), %rax	// MOV keeps the flags of the CMP
	jb	2f			// SVM_RUN_CLI: the host's IF stays clear
	ja	3f			// SVM_RUN_STI_SHADOW
	sti
	nop
	jmp	2f
3:	sti
2:	vmrun	%rax
	cli
	// #VMEXIT restored the host's RAX (the VMCB), RSP and RFLAGS.
	mov	(%rsp), %rax
	mov	C_GPRS(%rax), %rax
	GUEST_GPRS_STORE %rax
	add	$8, %rsp
	HOST_CALLEE_SAVED_POP
	ret

// svm_run(struct svm_cpu *c): never returns; entered in the resident copy on
// the CPU's host stack. The primary's (and L2's) loop: VMRUN, then the exit
// entry (svm_handle_exit), which may point c->run_vmcb_pa elsewhere.
	.globl	svm_run
svm_run:
	mov	C_STACK_TOP(%rcx), %rsp
	sub	$16, %rsp
	mov	%rcx, (%rsp)
.Lloop:
	mov	(%rsp), %rcx
	call	svm_vmrun
	mov	(%rsp), %rcx
	sub	$32, %rsp
	call	svm_handle_exit
	add	$32, %rsp
	jmp	.Lloop

// Host exception stubs: 16 bytes each, vector n at svm_idt_stubs + 16 * n.
// Each pushes a zero error code where the CPU pushes none, then the vector.
	.p2align 4
	.globl	svm_idt_stubs
svm_idt_stubs:
	.irp	n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.p2align 4
	.if \n == 2
	jmp	svm_host_nmi_entry
	.elseif (\n == 8) || (\n == 10) || (\n == 11) || (\n == 12) || (\n == 13) || (\n == 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	pushq	$\n
	jmp	svm_exc_common
	.else
	pushq	$0
	pushq	$\n
	jmp	svm_exc_common
	.endif
	.endr

// NMI in the host: taken on purpose after an NMI exit (svm_handle_exit), or
// during the interrupt window of an INIT (svm_host_nmi decides).
svm_host_nmi_entry:
	HOST_VOLATILE_PUSH
	mov	%rsp, %rax
	and	$-16, %rsp
	push	%rax
	sub	$40, %rsp
	call	svm_host_nmi
	add	$40, %rsp
	pop	%rsp
	HOST_VOLATILE_POP
	iretq

// Frame for svm_host_exception(): vector, error, RIP, CS, RFLAGS, RSP, SS.
svm_exc_common:
	mov	%rsp, %rcx
	and	$-16, %rsp
	sub	$32, %rsp
	call	svm_host_exception
3:	cli
	hlt
	jmp	3b
