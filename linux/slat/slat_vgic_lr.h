/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The list-register logic of the in-kernel GICv3 and GICv2 (slat_kvm_vgic.c,
 * slat_kvm_vgic_v2.c): which interrupts go into Slat's list registers before
 * an entry, in which form, and what the guest's changes to them mean after
 * the run; for GICv2 also the SGIs' sources and GICD_SGIR's targets. Pure
 * functions over struct vgic_irq, without kernel calls or locks (the caller
 * holds the VGIC's lock), so that tests/unit/test_vgic_lr.c runs them hosted;
 * the includer provides u8/u16/u32/u64, bool and core/hcall_abi.h.
 */
#ifndef SLAT_VGIC_LR_H
#define SLAT_VGIC_LR_H

#define VGIC_VTIMER_INTID HC_VGIC_VTIMER_INTID
#define VGIC_LR_PENDING	  1u
#define VGIC_LR_ACTIVE	  2u

/* One interrupt's state. */
struct vgic_irq {
	/* SPI: GICv3 GICD_IROUTER (Aff3 39:32, Aff2..Aff0 23:0, IRM 31); GICv2
	 * GICD_ITARGETSR's CPU mask in bits 7:0 */
	u64 route;
	u8 prio; /* GICD/GICR_IPRIORITYR */
	bool enabled;
	bool edge;   /* GICD/GICR_ICFGR: edge-triggered (SGIs always) */
	bool latch;  /* pending: an edge, or set through ISPENDR */
	bool line;   /* the input level (KVM_IRQ_LINE; the timer's output) */
	bool active; /* taken by the guest and not yet deactivated */
	/* GICv2 SGIs: every (SGI, source vCPU) is its own interrupt. `src` has
	 * a bit per source with one pending (latch is then src != 0), `act_src`
	 * is the source of the active one. */
	u8 src;
	u8 act_src;
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

/* ---- GICv2 (ABI 1.7: HC_VGIC_V2) ---- */

#define VGIC_V2_MAX_CPUS   8u
#define VGIC_V2_NR_SGIS	   16u
#define VGIC_V2_INTID_MASK 0x3ffu /* the vINTID without an SGI's source */
#define VGIC_V2_SRC_MASK   7u

/* The lowest source in `mask` (0 when none). */
static inline unsigned int vgic_v2_lowest(u8 mask)
{
	unsigned int i;

	for (i = 0; i < VGIC_V2_MAX_CPUS; i++)
		if (mask >> i & 1)
			return i;
	return 0;
}

/* The vINTID of a GICv2 lr: an SGI's carries its source vCPU in 12:10. */
static inline u32 vgic_v2_vintid(u32 intid, unsigned int src)
{
	if (intid >= VGIC_V2_NR_SGIS)
		return intid;
	return intid | (src & VGIC_V2_SRC_MASK) << HC_VGIC_V2_SGI_SRC_SHIFT;
}

/*
 * An SGI into a GICv2 lr, one source at a time: the active one's source
 * (pending too when that source sent it again), else the lowest pending
 * source. Another source left waiting hides behind the EOI bit: the guest's
 * deactivation exits and the next flush offers it.
 */
static inline u64 vgic_v2_sgi_load(struct vgic_irq *irq, u32 intid, u32 *vintid, bool *latch_out)
{
	unsigned int src = irq->active ? irq->act_src : vgic_v2_lowest(irq->src);
	u8 bit = (u8)(1u << src);
	u64 state = irq->active ? VGIC_LR_ACTIVE : 0;
	u64 lr;

	*latch_out = irq->src & bit;
	if (*latch_out)
		state |= VGIC_LR_PENDING;
	irq->src &= (u8)~bit;
	irq->latch = irq->src != 0;
	*vintid = vgic_v2_vintid(intid, src);
	lr = *vintid | (u64)irq->prio << HC_VGIC_LR_PRIO_SHIFT | state << HC_VGIC_LR_STATE_SHIFT;
	return irq->src ? lr | HC_VGIC_LR_EOI : lr;
}

/*
 * Into a GICv2 lr: group 0 (the GICv2 guest enables only group 0), the rest
 * as vgic_lr_load; *vintid is the value the lr names (with an SGI's source).
 */
static inline u64 vgic_v2_lr_load(struct vgic_irq *irq, u32 intid, u32 *vintid, bool *latch_out)
{
	if (intid < VGIC_V2_NR_SGIS)
		return vgic_v2_sgi_load(irq, intid, vintid, latch_out);
	*vintid = intid;
	return vgic_lr_load(irq, intid, latch_out) & ~HC_VGIC_LR_GROUP1;
}

/*
 * Back from a GICv2 lr: false when it no longer names `vintid` (source
 * included; nothing applied). An SGI's active state takes the lr's source; a
 * source still pending goes back into the mask.
 */
static inline bool vgic_v2_lr_sync(struct vgic_irq *irq, u32 vintid, u64 lr, bool latch)
{
	unsigned int state = (unsigned int)(lr >> HC_VGIC_LR_STATE_SHIFT);
	unsigned int src = vintid >> HC_VGIC_V2_SGI_SRC_SHIFT & VGIC_V2_SRC_MASK;

	if ((vintid & VGIC_V2_INTID_MASK) >= VGIC_V2_NR_SGIS)
		return vgic_lr_sync(irq, vintid, lr, latch);
	if ((lr & HC_VGIC_LR_VINTID_MASK) != vintid)
		return false;
	irq->active = state & VGIC_LR_ACTIVE;
	if (irq->active)
		irq->act_src = (u8)src;
	if ((state & VGIC_LR_PENDING) && latch)
		irq->src |= (u8)(1u << src);
	irq->latch = irq->src != 0;
	return true;
}

/* Makes SGI `irq` pending from source `src` (GICD_SGIR, GICD_SPENDSGIR). */
static inline void vgic_v2_sgi_raise(struct vgic_irq *irq, u8 srcs)
{
	irq->src |= srcs;
	irq->latch = irq->src != 0;
}

/* GICD_CPENDSGIR: those sources are no longer pending. */
static inline void vgic_v2_sgi_clear(struct vgic_irq *irq, u8 srcs)
{
	irq->src &= (u8)~srcs;
	irq->latch = irq->src != 0;
}

/*
 * GICD_SGIR's targets from vCPU `self`, among the vCPUs of `present` (bit n:
 * vCPU n exists): TargetListFilter 25:24 = 0 the CPUTargetList (23:16), 1
 * every other vCPU, 2 the writer itself, 3 (reserved) none.
 */
static inline u8 vgic_v2_sgir_targets(u32 val, unsigned int self, u8 present)
{
	switch (val >> 24 & 3) {
	case 0:
		return (u8)(val >> 16) & present;
	case 1:
		return present & (u8) ~(1u << self);
	case 2:
		return present & (u8)(1u << self);
	default:
		return 0;
	}
}

/* The vCPU an SPI with GICD_ITARGETSR `mask` goes to: the lowest, -1 none. */
static inline int vgic_v2_spi_cpu(u8 mask)
{
	return mask ? (int)vgic_v2_lowest(mask) : -1;
}

#endif
