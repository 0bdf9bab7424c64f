// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/gic.c - software-generated interrupts to self through the
 * GIC the machine has (GICv3: ICC_SGI1R_EL1; GICv2: GICD_SGIR): delivery and
 * INTID, the active state between acknowledge and EOI, the running priority,
 * priority masking (PMR) and the order of two pending SGIs of different
 * priorities.
 */
#include "tests/arch/arm64/lib/a64.h"

#define SGI_A 1
#define SGI_B 2
#define SGI_C 3

struct ack {
	unsigned iar, rpr;
	bool active;
};
static struct ack acks[8];
static volatile unsigned n_acks;

static void sgi_irq(void)
{
	unsigned iar = a64_gic_ack();
	unsigned intid = iar & 0x3ff;
	if (intid >= 1020)
		return;
	if (n_acks < 8)
		acks[n_acks] = (struct ack){iar, a64_gic_rpr(), a64_gic_active(intid)};
	a64_gic_eoi(iar);
	n_acks++;
}

static uint64_t ms(uint64_t hz, unsigned n)
{
	return hz / 1000 * n;
}

static void check_delivery(uint64_t hz)
{
	n_acks = 0;
	a64_gic_sgi_self(SGI_A);
	a64_irq_unmask();
	a64_wait_flag(&n_acks, ms(hz, 500));
	a64_irq_mask();
	ta_verdict("sgi-self", "%s, INTID %u, source CPU %u", n_acks ? "delivered" : "missing",
		   acks[0].iar & 0x3ff, (acks[0].iar >> 10) & 7);
	ta_verdict("sgi-active-before-eoi", "%s, running priority 0x%02x",
		   acks[0].active ? "yes" : "no", acks[0].rpr);
	ta_verdict("sgi-after-eoi", "active %s, pending %s, running priority 0x%02x",
		   a64_gic_active(SGI_A) ? "yes" : "no", a64_gic_pending(SGI_A) ? "yes" : "no",
		   a64_gic_rpr());
}

/* PMR 0x80 masks priority 0x80 (only higher priority, lower value, passes). */
static void check_pmr(uint64_t hz)
{
	n_acks = 0;
	a64_gic_pmr_set(0x80);
	a64_gic_sgi_self(SGI_A);
	a64_irq_unmask();
	uint64_t t0 = a64_cntpct();
	while (a64_cntpct() - t0 < ms(hz, 20))
		;
	a64_irq_mask();
	ta_verdict("pmr-masks", "delivered %u, pending %s", n_acks,
		   a64_gic_pending(SGI_A) ? "yes" : "no");
	a64_gic_pmr_set(0xf0);
	a64_irq_unmask();
	a64_wait_flag(&n_acks, ms(hz, 500));
	a64_irq_mask();
	ta_verdict("pmr-unmasked", "delivered %u, INTID %u", n_acks, acks[0].iar & 0x3ff);
}

/* Two SGIs pending while IRQs are masked: the higher priority goes first. */
static void check_order(uint64_t hz)
{
	n_acks = 0;
	a64_gic_sgi_self(SGI_B); /* priority 0xa0 */
	a64_gic_sgi_self(SGI_C); /* priority 0x40 */
	uint64_t t0 = a64_cntpct();
	while (a64_cntpct() - t0 < ms(hz, 5))
		;
	a64_irq_unmask();
	uint64_t start = a64_cntpct();
	while (n_acks < 2 && a64_cntpct() - start < ms(hz, 500))
		;
	a64_irq_mask();
	ta_verdict("sgi-priority-order", "%u acks: INTID %u (rpr 0x%02x) then %u (rpr 0x%02x)",
		   n_acks, acks[0].iar & 0x3ff, acks[0].rpr, acks[1].iar & 0x3ff, acks[1].rpr);
}

void ta_main(void)
{
	uint64_t hz = a64_mrs("cntfrq_el0");
	unsigned gic = a64_gic_init();

	ta_verdict("gic", "GICv%u", gic);
	if (!gic)
		return;
	if (gic == 3)
		ta_verdict("icc_sre_el1", "0x%llx", (unsigned long long)a64_mrs("S3_0_C12_C12_5"));
	a64_vectors_install();
	a64_gic_save();
	a64_gic_local_only(0);
	a64_gic_pmr_set(0xf0);
	a64_gic_local_config(SGI_A, 0x80, true);
	a64_gic_local_config(SGI_B, 0xa0, true);
	a64_gic_local_config(SGI_C, 0x40, true);
	a64_irq_fn = sgi_irq;
	check_delivery(hz);
	check_pmr(hz);
	check_order(hz);
	a64_irq_fn = NULL;
	a64_gic_restore();
	a64_vectors_restore();
}
