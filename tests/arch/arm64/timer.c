// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/timer.c - the EL1 virtual timer (CNTV, PPI 27) and physical
 * timer (CNTP, PPI 30): each fires through the GIC as an interrupt with the
 * right INTID and ISTATUS, never before its compare value; a masked timer
 * raises ISTATUS but no interrupt; CNTFRQ and the virtual offset are what
 * the firmware had. The payload programs the GIC itself (GICv3 or GICv2,
 * whichever the machine has) with the firmware's interrupts held off.
 */
#include "tests/arch/arm64/lib/a64.h"

#define PPI_VTIMER  27
#define PPI_PTIMER  30
#define CTL_ENABLE  1u
#define CTL_IMASK   2u
#define CTL_ISTATUS 4u

struct timer {
	const char *name;
	unsigned intid;
	uint64_t (*count)(void);
	uint64_t (*ctl)(void);
	void (*set)(uint64_t ctl, uint64_t cval);
};

static uint64_t v_count(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}
static uint64_t v_ctl(void)
{
	return a64_mrs("cntv_ctl_el0");
}
static void v_set(uint64_t ctl, uint64_t cval)
{
	a64_msr("cntv_cval_el0", cval);
	a64_msr("cntv_ctl_el0", ctl);
	a64_isb();
}
static uint64_t p_count(void)
{
	return a64_cntpct();
}
static uint64_t p_ctl(void)
{
	return a64_mrs("cntp_ctl_el0");
}
static void p_set(uint64_t ctl, uint64_t cval)
{
	a64_msr("cntp_cval_el0", cval);
	a64_msr("cntp_ctl_el0", ctl);
	a64_isb();
}

static const struct timer timers[] = {
    {"cntv", PPI_VTIMER, v_count, v_ctl, v_set},
    {"cntp", PPI_PTIMER, p_count, p_ctl, p_set},
};

/* What the IRQ handler saw (first interrupt of a run). */
static const struct timer *cur;
static volatile unsigned got, got_intid, got_istatus, spurious;
static volatile uint64_t got_count, cval;

static void timer_irq(void)
{
	unsigned iar = a64_gic_ack();
	unsigned intid = iar & 0x3ff;

	if (intid >= 1020) {
		spurious++;
		return;
	}
	if (!got && cur) {
		got_count = cur->count();
		got_istatus = (unsigned)(cur->ctl() & CTL_ISTATUS) ? 1 : 0;
		got_intid = intid;
	}
	got++;
	if (cur && intid == cur->intid)
		cur->set(CTL_ENABLE | CTL_IMASK, cval); /* quiet the level-sensitive line */
	a64_gic_eoi(iar);
}

static void run_timer(const struct timer *t, uint64_t hz)
{
	uint64_t delta = hz / 200; /* 5 ms */

	cur = t;
	got = got_intid = got_istatus = 0;
	a64_gic_local_config(t->intid, 0x80, true);
	cval = t->count() + delta;
	t->set(CTL_ENABLE, cval);
	a64_irq_unmask();
	a64_wait_flag(&got, hz); /* at most 1 s */
	a64_irq_mask();
	ta_verdict(t->name, "interrupt %s, INTID %u, ISTATUS %u, not before CVAL %s",
		   got ? "delivered" : "missing", got_intid, got_istatus,
		   got && got_count >= cval ? "yes" : "no");
	ta_info("%s: fired %lld ticks after CVAL", t->name, (long long)(got_count - cval));

	/* Masked (IMASK): the condition is met, ISTATUS says so, no interrupt. */
	got = 0;
	cval = t->count() + delta;
	t->set(CTL_ENABLE | CTL_IMASK, cval);
	a64_irq_unmask();
	/* QEMU updates ISTATUS from a host timer, a little after the count
	 * passes CVAL: poll it (bounded: 500 ms), then give an interrupt that
	 * should not come another 5 ms. */
	uint64_t until = cval + hz / 2;
	while (!(t->ctl() & CTL_ISTATUS) && t->count() < until)
		;
	until = t->count() + delta;
	while (t->count() < until)
		;
	a64_irq_mask();
	ta_verdict(t == &timers[0] ? "cntv-masked" : "cntp-masked", "%s: ISTATUS %u, interrupts %u",
		   t->name, (unsigned)(t->ctl() & CTL_ISTATUS) ? 1 : 0, got);
	t->set(0, 0);
	a64_gic_local_config(t->intid, 0x80, false);
	a64_gic_clear_pending(t->intid);
	cur = NULL;
}

/* CNTVCT = CNTPCT - CNTVOFF: with no offset, a virtual count read between two
 * physical ones lies between them. */
static void check_counters(uint64_t hz)
{
	uint64_t p0 = a64_cntpct(), v = v_count(), p1 = a64_cntpct();
	ta_verdict("cntfrq_el0", "%llu Hz", (unsigned long long)hz);
	ta_verdict("cntvct-offset", "%s", p0 <= v && v <= p1 ? "zero" : "nonzero");
	ta_verdict("cnt-monotonic", "%s", p1 >= p0 ? "yes" : "no");
}

static uint64_t saved_v[2], saved_p[2];

static void save_timers(void)
{
	saved_v[0] = a64_mrs("cntv_ctl_el0");
	saved_v[1] = a64_mrs("cntv_cval_el0");
	saved_p[0] = a64_mrs("cntp_ctl_el0");
	saved_p[1] = a64_mrs("cntp_cval_el0");
	v_set(0, 0);
	p_set(0, 0);
}

static void restore_timers(void)
{
	v_set(saved_v[0] & 3, saved_v[1]);
	p_set(saved_p[0] & 3, saved_p[1]);
}

void ta_main(void)
{
	uint64_t hz = a64_mrs("cntfrq_el0");

	check_counters(hz);
	unsigned gic = a64_gic_init();
	ta_verdict("gic", "GICv%u", gic);
	if (!gic)
		return;
	a64_vectors_install();
	a64_gic_save();
	save_timers();
	a64_gic_local_only(0);
	a64_gic_pmr_set(0xf0);
	ta_verdict("cpu-interface", "%s", a64_gic_cpuif_enabled() ? "enabled" : "disabled");
	a64_irq_fn = timer_irq;
	for (unsigned i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
		run_timer(&timers[i], hz);
	ta_verdict("spurious", "%u", spurious);
	a64_irq_fn = NULL;
	restore_timers();
	a64_gic_restore();
	a64_vectors_restore();
	ta_verdict("cntfrq_el0-after", "%llu Hz", (unsigned long long)a64_mrs("cntfrq_el0"));
}
