// SPDX-License-Identifier: Apache-2.0
//
// The host's handler of vectors 32-255 (arch/x86/host_env.c fills them all):
// the host takes an external interrupt only on purpose, in the short window
// in which it retires interrupts that an INIT would have discarded
// (apic_mailbox.c). Accepting the interrupt moved its vector from the local
// APIC's IRR to the ISR; the caller issues the EOIs.
	.text
	.globl	x86_host_irq_ack
	.p2align 4
x86_host_irq_ack:
	iretq
