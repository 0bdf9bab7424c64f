// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/ioapic.c - fixed interrupts and EOI: a self-IPI (edge) held
 * while IF=0 and by the TPR, then delivered; a level-triggered interrupt
 * through the IOAPIC that stays asserted (COM1's transmitter-empty interrupt,
 * ISA IRQ 4 = IOAPIC pin 4, level, active high) taken in `sti; hlt`, EOI'd
 * without clearing the source: it re-fires after each EOI and wakes the next
 * `sti; hlt`, until the handler turns the source off. A local APIC timer
 * one-shot is the watchdog of every HLT, so a lost interrupt gives a verdict,
 * not a hang.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/irq.h"
#include "tests/arch/x86/lib/x86.h"

#define VEC_IPI	     0x40
#define VEC_LEVEL    0x41
#define VEC_WATCHDOG 0x42
#define COM1	     0x3f8
#define IOAPIC_PIN   4
#define REFIRES	     8
#define SPIN	     2000000u
#define WATCHDOG     20000000u /* APIC timer ticks (divide by 1) */

static volatile unsigned ipis, levels, watchdogs, level_tmr;
static volatile uint64_t level_rip[REFIRES + 2];

extern char ioapic_hlt[], ioapic_after_hlt[];

/* One `sti; hlt` with interrupts off before and after; the interrupt that
 * wakes it returns to ioapic_after_hlt. */
static __attribute__((noinline)) void halt_once(void)
{
	__asm__ volatile("sti\n\t.globl ioapic_hlt\nioapic_hlt:\n\thlt\n\t"
			 ".globl ioapic_after_hlt\nioapic_after_hlt:\n\tcli" ::
			     : "memory");
}

static void ipi_handler(uint64_t vector, uint64_t *frame)
{
	ipis++;
	irq_apic_eoi();
}

static void watchdog_handler(uint64_t vector, uint64_t *frame)
{
	watchdogs++;
	irq_apic_eoi();
}

/* The level handler EOIs without clearing the source; it returns with IF=0
 * so that the next delivery has to wake the next `sti; hlt`. The last one
 * turns the source off first. */
static void level_handler(uint64_t vector, uint64_t *frame)
{
	unsigned n = levels;

	if (n < REFIRES + 2)
		level_rip[n] = frame[1];
	if (n == 0)
		level_tmr = (unsigned)irq_apic_bit(APIC_TMR0, VEC_LEVEL);
	levels = n + 1;
	/* Taken before the HLT of `sti; hlt` (never on hardware: the HLT is in
	 * the STI shadow): returning there with IF=0 would halt for good, so
	 * step over it; the verdict counts where deliveries came. */
	if (frame[1] == (uint64_t)(uintptr_t)ioapic_hlt)
		frame[1] = (uint64_t)(uintptr_t)ioapic_after_hlt;
	if (n + 1 >= REFIRES)
		outb(COM1 + 1, 0); /* IER = 0: the line drops */
	irq_apic_eoi();
	frame[3] &= ~(1ull << 9);
}

static void check_edge_ipi(void)
{
	ipis = 0;
	irq_send_self_fixed(VEC_IPI);
	irq_wait_change(&ipis, 0, SPIN / 4);
	unsigned held = ipis == 0 && irq_apic_bit(APIC_IRR0, VEC_IPI);
	sti();
	irq_wait_change(&ipis, 0, SPIN);
	cli();
	ta_verdict("ipi-held-while-if0", "%s", held ? "yes" : "no");
	ta_verdict("ipi-delivered", "%u", ipis);
}

static void check_tpr(void)
{
	ipis = 0;
	irq_apic_write(APIC_TPR, 0x50); /* class 5 masks vector 0x40 (class 4) */
	irq_send_self_fixed(VEC_IPI);
	sti();
	irq_wait_change(&ipis, 0, SPIN / 4);
	unsigned masked = ipis == 0;
	irq_apic_write(APIC_TPR, 0);
	irq_wait_change(&ipis, 0, SPIN);
	cli();
	ta_verdict("tpr-masks-lower-class", "%s", masked ? "yes" : "no");
	ta_verdict("tpr-lowered-delivers", "%u", ipis);
}

static void arm_watchdog(void)
{
	irq_apic_write(APIC_TMR_DIV, 0xb); /* divide by 1 */
	irq_apic_write(APIC_LVT_TMR, VEC_WATCHDOG);
	irq_apic_write(APIC_TMR_ICR, WATCHDOG);
}

static void disarm_watchdog(void)
{
	irq_apic_write(APIC_TMR_ICR, 0);
}

/* `sti; hlt` until a level interrupt or the watchdog woke it; 1 = level. */
static int halt_for_level(void)
{
	unsigned before = levels;

	watchdogs = 0;
	arm_watchdog();
	while (levels == before && !watchdogs)
		halt_once();
	disarm_watchdog();
	return levels != before;
}

static void check_level_refire(void)
{
	uint8_t ier = inb(COM1 + 1), mcr = inb(COM1 + 4);
	unsigned woken = 0, at_hlt = 0;

	levels = 0;
	irq_ioapic_save(IOAPIC_PIN);
	irq_ioapic_set(IOAPIC_PIN, VEC_LEVEL | IOAPIC_LEVEL, irq_apic_id());
	/* No console output from here until the source is off: a write to the
	 * transmit register would drop the line. */
	outb(COM1 + 4, mcr | 0x08); /* OUT2 */
	outb(COM1 + 1, 0x02);	    /* transmitter-empty interrupt */
	for (unsigned i = 0; i < REFIRES; i++) {
		if (!halt_for_level())
			break;
		woken++;
	}
	outb(COM1 + 1, 0);
	unsigned quiet = !halt_for_level(); /* the watchdog, not the source */
	irq_ioapic_restore(IOAPIC_PIN);
	outb(COM1 + 1, ier);
	outb(COM1 + 4, mcr);
	for (unsigned i = 0; i < levels && i < REFIRES; i++)
		at_hlt += level_rip[i] == (uint64_t)(uintptr_t)ioapic_after_hlt;
	ta_verdict("ioapic-level-first", "%s", levels ? "delivered" : "timeout");
	ta_verdict("ioapic-level-tmr", "%u", level_tmr);
	ta_verdict("ioapic-level-refired-after-eoi", "%s, %u of %u wake-ups",
		   woken == REFIRES ? "yes" : "no", woken, REFIRES);
	ta_verdict("ioapic-level-delivered-while-halted", "%u of %u", at_hlt, levels);
	ta_verdict("ioapic-level-quiet-after-source-off", "%s", quiet ? "yes" : "no");
}

void ta_main(void)
{
	uint64_t rflags = read_rflags();

	cli();
	irq_pic_mask_all();
	irq_idt_install();
	irq_apic_save();
	irq_set_handler(VEC_IPI, ipi_handler);
	irq_set_handler(VEC_LEVEL, level_handler);
	irq_set_handler(VEC_WATCHDOG, watchdog_handler);
	check_edge_ipi();
	check_tpr();
	check_level_refire();
	irq_apic_restore();
	irq_idt_restore();
	irq_pic_restore();
	if (rflags & (1u << 9))
		sti();
}
