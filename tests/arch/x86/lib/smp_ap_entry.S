// SPDX-License-Identifier: Apache-2.0
//
// tests/arch/x86/lib/smp_ap_entry.S - the code an AP runs after a STARTUP IPI
// (copied by smp_tramp.c to a page below 1 MiB; CS = page >> 4, IP 0).
//
// 16-bit: its own real-mode vector table (faults are recorded), a flat GDT,
// protected mode. 32-bit (no paging, EBX = the page's address throughout):
// its own IDT (vectors 0-31; NMI counted, any other vector is a fault that
// is recorded and stops the AP; the NMI handler counts its entry and, as its
// last store before IRET, its exit), then
//   1. a snapshot of its local APIC (what INIT left: smp.h)
//   2. the start-up count
//   3. an interrupt window (sti ... cli): after INIT the local APIC is
//      software-disabled with every LVT masked, so nothing may arrive; an
//      interrupt from before the INIT would be a vector past the IDT: #GP
//   4. it leaves its APIC dirty for the next INIT to clean: software-enabled,
//      periodic timer on vector 0x40, period 0x80000 bus clocks (0.5 ms at
//      QEMU's 1 GHz APIC clock; 4 us before made QEMU spend its time waking
//      the halted AP on every expiry, and its NMIs waited up to seconds)
//   5. parks: cli; hlt (an NMI returns here).
// Offsets into the page are fixed (smp.h).

#define SMP_DATA      0x800
#define D_STARTS      (SMP_DATA + 0)
#define D_NMIS	      (SMP_DATA + 4)
#define D_FAULTS      (SMP_DATA + 8)
#define D_FAULT_VEC   (SMP_DATA + 12)
#define D_APIC	      (SMP_DATA + 16)
#define D_PM_JUMP     (SMP_DATA + 20) // offset32, selector16
#define D_NMI_EXITS   (SMP_DATA + 28)
#define D_IVT_DESC    (SMP_DATA + 32) // limit16, base32
#define D_GDT_DESC    (SMP_DATA + 40)
#define D_IDT_DESC    (SMP_DATA + 48)
#define D_SNAP	      (SMP_DATA + 64) // struct smp_apic_snap
#define STACK_TOP     0xff0
#define WINDOW_SPINS  200000
#define TIMER_PERIOD  0x80000

	.text
	.code16
	.globl	smp_tramp_start, smp_tramp_end, smp_tramp_rm_stubs, smp_tramp_pm_stubs
	.globl	smp_tramp_rm_nmi, smp_tramp_pm_nmi, smp_tramp_pm_entry
smp_tramp_start:
	cli
	mov	%cs, %ax
	mov	%ax, %ds
	mov	%ax, %ss
	mov	$STACK_TOP, %sp
	lidt	D_IVT_DESC
	lgdtl	D_GDT_DESC
	xor	%ebx, %ebx
	mov	%cs, %bx
	shl	$4, %ebx
	mov	%cr0, %eax
	or	$1, %eax
	mov	%eax, %cr0
	ljmpl	*D_PM_JUMP

smp_tramp_rm_nmi:
	lock incl D_NMIS
	lock incl D_NMI_EXITS
	iret

	.balign	8
smp_tramp_rm_stubs:
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.balign	8
	movb	$\v, %al
	jmp	rm_fault
	.endr
rm_fault:
	movb	%al, D_FAULT_VEC
	lock incl D_FAULTS
1:	cli
	hlt
	jmp	1b

	.code32
	.balign	8
smp_tramp_pm_entry:
	mov	$0x10, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	lea	STACK_TOP(%ebx), %esp
	lidt	D_IDT_DESC(%ebx)
	mov	D_APIC(%ebx), %esi
	// 1. the APIC as INIT left it
	lea	D_SNAP(%ebx), %edi
	.irp	reg, 0xf0, 0x80, 0xd0, 0xe0, 0x320, 0x350, 0x360, 0x370, 0x380, 0x3e0
	mov	\reg(%esi), %eax
	mov	%eax, (%edi)
	add	$4, %edi
	.endr
	xor	%eax, %eax
	.irp	reg, 0x100, 0x110, 0x120, 0x130, 0x140, 0x150, 0x160, 0x170
	or	\reg(%esi), %eax
	.endr
	mov	%eax, (%edi)
	xor	%eax, %eax
	.irp	reg, 0x200, 0x210, 0x220, 0x230, 0x240, 0x250, 0x260, 0x270
	or	\reg(%esi), %eax
	.endr
	mov	%eax, 4(%edi)
	// 2. counted
	lock incl D_STARTS(%ebx)
	// 3. the interrupt window
	mov	$WINDOW_SPINS, %ecx
	sti
2:	dec	%ecx
	jnz	2b
	cli
	// 4. dirty for the next INIT
	movl	$0x1ff, 0xf0(%esi)
	movl	$0xb, 0x3e0(%esi)
	movl	$0x20040, 0x320(%esi)
	movl	$TIMER_PERIOD, 0x380(%esi)
	// 5. park
3:	hlt
	jmp	3b

// The BSP sends the next NMI only once D_NMI_EXITS counted this one: one that
// arrives before the IRET below is held pending by the CPU (NMIs are blocked
// from delivery until IRET, and one is latched), so none is ever lost.
smp_tramp_pm_nmi:
	lock incl D_NMIS(%ebx)
	lock incl D_NMI_EXITS(%ebx)
	iret

	.balign	8
smp_tramp_pm_stubs:
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.balign	8
	movb	$\v, %al
	jmp	pm_fault
	.endr
pm_fault:
	movb	%al, D_FAULT_VEC(%ebx)
	lock incl D_FAULTS(%ebx)
4:	cli
	hlt
	jmp	4b
smp_tramp_end:
	.code64
