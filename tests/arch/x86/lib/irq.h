/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/x86/lib/irq.h - interrupt helpers of the nmi, ioapic and
 * apictimer payloads: a private IDT (a copy of the firmware's with our own
 * gates), the local APIC, the IOAPIC, the 8259 PIC masks and COM1's
 * interrupt enable. Every helper that changes firmware state has a matching
 * restore; payloads run with interrupts off except where a check needs them.
 */
#ifndef TA_X86_IRQ_H
#define TA_X86_IRQ_H

#include <stdint.h>

/* Vectors with a gate of ours (irq_stubs.S); others stay the firmware's. */
#define IRQ_VEC_NMI	 2
#define IRQ_VEC_FIRST	 0x40 /* 0x40 .. 0x47 */
#define IRQ_VEC_LAST	 0x47
#define IRQ_VEC_SPURIOUS 0xff

/* frame[0] error code (0), [1] RIP, [2] CS, [3] RFLAGS, [4] RSP, [5] SS.
 * A handler may change frame[3] (the RFLAGS the IRET restores). */
typedef void (*irq_handler_fn)(uint64_t vector, uint64_t *frame);

/* Loads a copy of the firmware's IDT with our gates; irq_idt_restore puts the
 * firmware's back. */
void irq_idt_install(void);
void irq_idt_restore(void);
void irq_set_handler(unsigned vector, irq_handler_fn fn);

/* Local APIC (xAPIC, MMIO at IA32_APIC_BASE). */
#define APIC_ID	     0x020
#define APIC_TPR     0x080
#define APIC_EOI     0x0b0
#define APIC_SVR     0x0f0
#define APIC_ISR0    0x100
#define APIC_TMR0    0x180
#define APIC_IRR0    0x200
#define APIC_ICR_LO  0x300
#define APIC_ICR_HI  0x310
#define APIC_LVT_TMR 0x320
#define APIC_TMR_ICR 0x380
#define APIC_TMR_CCR 0x390
#define APIC_TMR_DIV 0x3e0
uint32_t irq_apic_read(unsigned off);
void irq_apic_write(unsigned off, uint32_t v);
uint32_t irq_apic_id(void);
void irq_apic_eoi(void);
/* True when `vector` is set in the 256-bit register array at `base`. */
int irq_apic_bit(unsigned base, unsigned vector);
/* Saves TPR, SVR and the timer registers, enables the APIC (SVR bit 8,
 * spurious vector 0xff); irq_apic_restore puts them back. */
void irq_apic_save(void);
void irq_apic_restore(void);
/* A fixed-vector IPI to self (shorthand), an NMI to our own APIC ID
 * (physical destination: the self shorthand allows only fixed). */
void irq_send_self_fixed(uint8_t vector);
void irq_send_self_nmi(void);

/* IOAPIC at 0xFEC00000 (QEMU pc, Bochs). */
uint32_t irq_ioapic_read(unsigned reg);
void irq_ioapic_write(unsigned reg, uint32_t v);
/* Redirection entry of `pin`: save, program (low = vector | flags), restore. */
void irq_ioapic_save(unsigned pin);
void irq_ioapic_set(unsigned pin, uint32_t lo, uint32_t dest_apic_id);
void irq_ioapic_restore(unsigned pin);
#define IOAPIC_LEVEL  (1u << 15)
#define IOAPIC_MASKED (1u << 16)

/* 8259 PIC: mask every line (saved), restore. */
void irq_pic_mask_all(void);
void irq_pic_restore(void);

/* A bounded wait: spins `n` times or until *flag != old. Returns the number of
 * spins left (0: timed out). */
unsigned irq_wait_change(volatile unsigned *flag, unsigned old, unsigned n);

#endif
