// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/nmi.c - NMI delivery and NMI blocking: a self-NMI (APIC ICR,
 * delivery mode NMI, our own APIC ID) arrives once; a self-NMI sent inside the
 * NMI handler is held until the handler's IRET and arrives right after it (at
 * the instruction the IRET returned to); an NMI arrives while IF=0.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/irq.h"
#include "tests/arch/x86/lib/x86.h"

#define SPIN 2000000u

static volatile unsigned nmis;
static volatile uint64_t nmi_rip[8], nmi_rflags[8];
static volatile int resend_in_handler;
static volatile unsigned nested_seen; /* NMIs that arrived inside the handler */
static char order[64];
static volatile unsigned order_len;

static void note(char c)
{
	if (order_len < sizeof(order) - 1)
		order[order_len++] = c;
	order[order_len] = 0;
}

static void nmi_handler(uint64_t vector, uint64_t *frame)
{
	static volatile unsigned depth;
	unsigned n = nmis;

	depth++;
	if (depth > 1)
		nested_seen++;
	if (n < 8) {
		nmi_rip[n] = frame[1];
		nmi_rflags[n] = frame[3];
	}
	nmis = n + 1;
	note('N');
	if (resend_in_handler) {
		resend_in_handler = 0;
		irq_send_self_nmi();
		note('s');
		/* Hardware holds the second NMI until our IRET: it must not come now. */
		irq_wait_change(&nmis, n + 1, SPIN);
		note(nmis == n + 1 ? 'e' : '!');
	}
	depth--;
}

static void check_once(void)
{
	nmis = 0;
	irq_send_self_nmi();
	unsigned left = irq_wait_change(&nmis, 0, SPIN);
	irq_wait_change(&nmis, 1, SPIN / 4); /* a second delivery would be a bug */
	ta_verdict("nmi-self", "%s, delivered %u time(s)", left ? "arrived" : "timeout", nmis);
}

static void check_in_handler(void)
{
	nmis = 0;
	order_len = 0;
	nested_seen = 0;
	resend_in_handler = 1;
	irq_send_self_nmi();
	irq_wait_change(&nmis, 0, SPIN);
	if (nmis == 1)
		irq_wait_change(&nmis, 1, SPIN);
	note('m');
	ta_verdict("nmi-in-handler-order", "%s (N nmi, s resent, e handler end, m main)", order);
	ta_verdict("nmi-in-handler-nested", "%u", nested_seen);
	ta_verdict("nmi-in-handler-count", "%u", nmis);
	/* The held NMI comes right after the IRET, before the next instruction:
	 * it interrupts the instruction the first handler returned to. */
	ta_verdict("nmi-after-iret-at-return-rip", "%s",
		   nmis >= 2 ? (nmi_rip[1] == nmi_rip[0] ? "yes" : "no") : "n/a");
	ta_info("nmi rip[0] 0x%llx rip[1] 0x%llx, %u NMIs", (unsigned long long)nmi_rip[0],
		(unsigned long long)nmi_rip[1], nmis);
}

static void check_if_clear(void)
{
	nmis = 0;
	cli();
	irq_send_self_nmi();
	unsigned left = irq_wait_change(&nmis, 0, SPIN);
	ta_verdict("nmi-if0", "%s, frame IF %u", left ? "arrived" : "timeout",
		   nmis ? (unsigned)(nmi_rflags[0] >> 9) & 1 : 9);
}

/* `cli; hlt` wakes only for an NMI (or SMI, INIT, reset): the PIT's one-shot
 * output (ISA IRQ 0 = IOAPIC pin 2, redirected as an NMI) ends the halt about
 * 55 ms later, and the NMI handler has run when the HLT returns. */
static void check_cli_hlt_wakeup(void)
{
	nmis = 0;
	cli();
	irq_ioapic_save(2);
	irq_ioapic_set(2, (4u << 8) | 2, irq_apic_id()); /* NMI, edge, high */
	outb(0x43, 0x30);				 /* channel 0, lo/hi, mode 0 */
	outb(0x40, 0xff);
	outb(0x40, 0xff);
	__asm__ volatile("hlt" ::: "memory");
	unsigned at_wakeup = nmis;
	irq_wait_change(&nmis, 0, SPIN * 4);
	irq_ioapic_restore(2);
	ta_verdict("nmi-wakes-cli-hlt", "NMIs taken when the HLT returned: %u", at_wakeup);
	ta_verdict("nmi-from-ioapic", "%u", nmis);
}

void ta_main(void)
{
	uint64_t rflags = read_rflags();

	cli();
	irq_idt_install();
	irq_apic_save();
	irq_set_handler(IRQ_VEC_NMI, nmi_handler);
	check_once();
	check_in_handler();
	check_if_clear();
	check_cli_hlt_wakeup();
	irq_set_handler(IRQ_VEC_NMI, 0);
	irq_apic_restore();
	irq_idt_restore();
	if (rflags & (1u << 9))
		sti();
}
