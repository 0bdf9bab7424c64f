// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/apictimer.c - the local APIC timer: one-shot (fires once,
 * held in the IRR while IF=0, the programmed vector), periodic (fires again
 * and again with the programmed vector), and TSC-deadline mode when CPUID
 * says the CPU has it (fires once the TSC passes the deadline, not before).
 * Verdicts are about delivery and mode, never counts that depend on timing.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/irq.h"
#include "tests/arch/x86/lib/x86.h"

#define VEC_ONESHOT	 0x43
#define VEC_PERIODIC	 0x44
#define VEC_DEADLINE	 0x45
#define SPIN		 20000000u
#define LVT_MASKED	 (1u << 16)
#define LVT_PERIODIC	 (1u << 17)
#define LVT_DEADLINE	 (2u << 17)
#define MSR_TSC_DEADLINE 0x6e0

static volatile unsigned fired[3];
static volatile unsigned last_vector;

static void timer_handler(uint64_t vector, uint64_t *frame)
{
	last_vector = (unsigned)vector;
	fired[vector - VEC_ONESHOT]++;
	irq_apic_eoi();
}

static void check_oneshot(void)
{
	fired[0] = 0;
	irq_apic_write(APIC_TMR_DIV, 0xb); /* divide by 1 */
	irq_apic_write(APIC_LVT_TMR, VEC_ONESHOT);
	irq_apic_write(APIC_TMR_ICR, 100000);
	unsigned n = SPIN;
	while (n && irq_apic_read(APIC_TMR_CCR) != 0)
		n--;
	/* The count reads 0 a little before the emulator's timer sets the IRR. */
	for (unsigned i = 0; i < SPIN && !irq_apic_bit(APIC_IRR0, VEC_ONESHOT); i++)
		__asm__ volatile("pause" ::: "memory");
	unsigned held = irq_apic_bit(APIC_IRR0, VEC_ONESHOT) && !fired[0];
	sti();
	irq_wait_change(&fired[0], 0, SPIN);
	irq_wait_change(&fired[0], 1, SPIN / 4); /* a second one would be wrong */
	cli();
	ta_verdict("oneshot-count-reached-zero", "%s", n ? "yes" : "no");
	ta_verdict("oneshot-held-in-irr-while-if0", "%s", held ? "yes" : "no");
	ta_verdict("oneshot-delivered", "%u time(s), vector 0x%x", fired[0], last_vector);
	ta_verdict("oneshot-lvt-mode", "%u", (irq_apic_read(APIC_LVT_TMR) >> 17) & 3);
}

static void check_periodic(void)
{
	fired[1] = 0;
	last_vector = 0;
	irq_apic_write(APIC_TMR_DIV, 0xb);
	irq_apic_write(APIC_LVT_TMR, VEC_PERIODIC | LVT_PERIODIC);
	irq_apic_write(APIC_TMR_ICR, 200000);
	sti();
	for (unsigned i = 0; i < SPIN && fired[1] < 3; i++)
		__asm__ volatile("pause" ::: "memory");
	cli();
	unsigned mode = (irq_apic_read(APIC_LVT_TMR) >> 17) & 3;
	irq_apic_write(APIC_LVT_TMR, VEC_PERIODIC | LVT_PERIODIC | LVT_MASKED);
	irq_apic_write(APIC_TMR_ICR, 0);
	ta_verdict("periodic-fires-repeatedly", "%s, vector 0x%x", fired[1] >= 3 ? "yes" : "no",
		   last_vector);
	ta_verdict("periodic-lvt-mode", "%u", mode);
	ta_info("periodic fired %u times", fired[1]);
}

static void check_deadline(void)
{
	uint32_t r[4];

	cpuid(1, 0, r);
	unsigned has = (r[2] >> 24) & 1;
	ta_verdict("tsc-deadline-cpuid", "%u", has);
	if (!has)
		return;
	fired[2] = 0;
	last_vector = 0;
	irq_apic_write(APIC_LVT_TMR, VEC_DEADLINE | LVT_DEADLINE);
	unsigned mode = (irq_apic_read(APIC_LVT_TMR) >> 17) & 3;
	uint64_t deadline = rdtsc() + 2000000;
	wrmsr(MSR_TSC_DEADLINE, deadline);
	sti();
	irq_wait_change(&fired[2], 0, SPIN);
	cli();
	uint64_t after = rdtsc();
	unsigned early = fired[2] && after < deadline;
	irq_wait_change(&fired[2], 1, SPIN / 4);
	wrmsr(MSR_TSC_DEADLINE, 0);
	ta_verdict("tsc-deadline-lvt-mode", "%u", mode);
	ta_verdict("tsc-deadline-delivered", "%u time(s), vector 0x%x, before the deadline: %s",
		   fired[2], last_vector, early ? "yes" : "no");
}

void ta_main(void)
{
	uint64_t rflags = read_rflags();

	cli();
	irq_pic_mask_all();
	irq_idt_install();
	irq_apic_save();
	for (unsigned v = VEC_ONESHOT; v <= VEC_DEADLINE; v++)
		irq_set_handler(v, timer_handler);
	check_oneshot();
	check_periodic();
	check_deadline();
	irq_apic_restore();
	irq_idt_restore();
	irq_pic_restore();
	if (rflags & (1u << 9))
		sti();
}
