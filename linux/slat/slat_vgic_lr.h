/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The list-register logic of the in-kernel GICv3 (slat_kvm_vgic.c): which
 * interrupts go into Slat's list registers before an entry, in which form,
 * and what the guest's changes to them mean after the run. Pure functions
 * over struct vgic_irq, without kernel calls or locks (the caller holds the
 * VGIC's lock), so that tests/unit/test_vgic_lr.c runs them hosted; the
 * includer provides u8/u16/u32/u64, bool and core/hcall_abi.h.
 */
#ifndef SLAT_VGIC_LR_H
#define SLAT_VGIC_LR_H

#define VGIC_VTIMER_INTID HC_VGIC_VTIMER_INTID
#define VGIC_LR_PENDING	  1u
#define VGIC_LR_ACTIVE	  2u

/* One interrupt's state. */
struct vgic_irq {
	u64 route; /* SPI: GICD_IROUTER (Aff3 39:32, Aff2..Aff0 23:0, IRM 31) */
	u8 prio;   /* GICD/GICR_IPRIORITYR */
	bool enabled;
	bool edge;   /* GICD/GICR_ICFGR: edge-triggered (SGIs always) */
	bool latch;  /* pending: an edge, or set through ISPENDR */
	bool line;   /* the input level (KVM_IRQ_LINE; the timer's output) */
	bool active; /* taken by the guest and not yet deactivated */
};

/* Pending: latched, or a level-sensitive input held high. */
static inline bool vgic_irq_pending(const struct vgic_irq *irq)
{
	return irq->latch || (!irq->edge && irq->line);
}

struct vgic_pick {
	struct vgic_irq *irq;
	u32 intid;
};

/* Active ones first (the guest must be able to deactivate them), then by
 * priority (lower value first), then by INTID. */
static inline bool vgic_pick_before(const struct vgic_pick *a, const struct vgic_pick *b)
{
	if (a->irq->active != b->irq->active)
		return a->irq->active;
	if (a->irq->prio != b->irq->prio)
		return a->irq->prio < b->irq->prio;
	return a->intid < b->intid;
}

/* Keeps the best `max` candidates in picks[0..*n), sorted; *more once one
 * was left out (the VMM asks Slat for an exit when none is pending). */
static inline void vgic_pick(struct vgic_pick *picks, unsigned int *n, unsigned int max,
			     struct vgic_pick p, bool *more)
{
	unsigned int i;

	if (*n == max) {
		*more = true;
		if (!max || !vgic_pick_before(&p, &picks[max - 1]))
			return;
		(*n)--;
	}
	for (i = *n; i > 0 && vgic_pick_before(&p, &picks[i - 1]); i--)
		picks[i] = picks[i - 1];
	picks[i] = p;
	(*n)++;
}

/* The list register for `irq` (group 1, its priority and state). */
static inline u64 vgic_lr_value(const struct vgic_irq *irq, u32 intid)
{
	u64 pend = vgic_irq_pending(irq) ? VGIC_LR_PENDING : 0;
	u64 act = irq->active ? VGIC_LR_ACTIVE : 0;
	u64 lr = intid | (u64)irq->prio << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_GROUP1;

	if (intid == VGIC_VTIMER_INTID && !irq->edge) {
		/* The physical timer PPI: deactivated with the virtual one. A
		 * mapped interrupt is pending or active, never both. */
		lr |= HC_VGIC_LR_HW | (u64)VGIC_VTIMER_INTID << HC_VGIC_LR_PINTID_SHIFT;
		return lr | (act ? act : pend) << HC_VGIC_LR_STATE_SHIFT;
	}
	if (!irq->edge)
		lr |= HC_VGIC_LR_EOI; /* deactivation exits: the line is sampled again */
	return lr | (pend | act) << HC_VGIC_LR_STATE_SHIFT;
}

/*
 * Into an lr: returns its value; *latch_out keeps the latch the lr now
 * carries (the irq's is cleared: a new edge during the run latches anew).
 */
static inline u64 vgic_lr_load(struct vgic_irq *irq, u32 intid, bool *latch_out)
{
	u64 lr = vgic_lr_value(irq, intid);

	*latch_out = irq->latch;
	irq->latch = false;
	return lr;
}

/*
 * Back from an lr the guest may have changed: active as the lr says; a latch
 * not taken (still pending) comes back. False when the lr no longer names
 * `intid` (nothing is applied).
 */
static inline bool vgic_lr_sync(struct vgic_irq *irq, u32 intid, u64 lr, bool latch)
{
	unsigned int state = (unsigned int)(lr >> HC_VGIC_LR_STATE_SHIFT);

	if ((lr & HC_VGIC_LR_VINTID_MASK) != intid)
		return false;
	irq->active = state & VGIC_LR_ACTIVE;
	if (state & VGIC_LR_PENDING)
		irq->latch |= latch;
	return true;
}

#endif
