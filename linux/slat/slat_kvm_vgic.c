// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel GICv3 of /dev/kvm on arm64, and what its GICv2 shares with
 * it (the GICv2 distributor: slat_kvm_vgic_v2.c): see slat_kvm_vgic.h for the
 * shape. Register offsets and fields from the GICv3 architecture
 * specification (Arm IHI 0069); the device's attributes from KVM's
 * Documentation/virt/kvm/devices/arm-vgic-v3.rst and arm-vgic.rst.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/hrtimer.h>
#include <linux/math64.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/arch_timer.h>
#include <asm/sysreg.h>

#include "slat_kvm_vgic.h"

/* GICD / GICR registers (offsets in their 64 KiB frames). */
#define GICD_CTLR	 0x0000
#define GICD_TYPER	 0x0004
#define GICD_IIDR	 0x0008
#define GICD_TYPER2	 0x000c
#define GICX_IGROUPR	 0x0080
#define GICX_ISENABLER	 0x0100
#define GICX_ICENABLER	 0x0180
#define GICX_ISPENDR	 0x0200
#define GICX_ICPENDR	 0x0280
#define GICX_ISACTIVER	 0x0300
#define GICX_ICACTIVER	 0x0380
#define GICX_IPRIORITYR	 0x0400
#define GICX_ICFGR	 0x0c00
#define GICD_IROUTER	 0x6000 /* 8 bytes per INTID, from INTID 32 */
#define GICX_PIDR2	 0xffe8
#define GICR_CTLR	 0x0000
#define GICR_IIDR	 0x0004
#define GICR_TYPER	 0x0008
#define GICR_WAKER	 0x0014
#define GICD_STATUSR	 0x0010
#define GICD_ITARGETSR	 0x0800
#define GICD_IGRPMODR	 0x0d00
#define GICX_IDREGS	 0xffd0
#define GICR_PROPBASER	 0x0070
#define GICR_PENDBASER	 0x0078
#define GICR_INVLPIR	 0x00a0
#define GICR_INVALLR	 0x00b0
#define GICR_SYNCR	 0x00c0
#define GICR_NSACR	 0x0e00
#define GICR_SGI_FRAME	 0x10000
#define GICD_CTLR_GRP1	 (1u << 1) /* EnableGrp1 (one security state: DS) */
#define GICD_CTLR_V2_EN	 (1u << 0) /* GICv2 without Security Extensions: Enable */
#define GICD_CTLR_ARE	 (1u << 4)
#define GICD_CTLR_DS	 (1u << 6)
#define GICR_WAKER_PS	 (1u << 1) /* ProcessorSleep */
#define GICR_WAKER_CA	 (1u << 2) /* ChildrenAsleep */
#define GICR_TYPER_LAST	 (1ull << 4)
#define GIC_PIDR2_ARCHV3 0x3b		       /* ArchRev 3 */
#define GIC_IIDR_SLAT	 (0x53u << 24 | 0x43b) /* product 'S', implementer Arm */
#define IROUTER_IRM	 (1ull << 31)
#define AFF_MASK	 0xff00ffffffull
#define SGI1R_INTID(v)	 ((u32)((v) >> 24) & 0xf)
#define SGI1R_IRM	 (1ull << 40)
#define CNTV_CTL_ENABLE	 1ull
#define CNTV_CTL_IMASK	 2ull
#define CNTV_CTL_ISTATUS 4ull
#define VGIC_WFI_MAX_S	 3600u

/* ---- availability ---- */

/* Slat's ABI 1.6 and a GICv3 the primary drives through system registers. */
static bool vgic_v3_offered(void)
{
	u64 pfr0 = read_sysreg_s(SYS_ID_AA64PFR0_EL1);

	if ((slat_hv_version & 0xffff) < 6 || !((pfr0 >> 24) & 0xf)) /* GIC: sysregs */
		return false;
	return read_sysreg_s(SYS_ICC_SRE_EL1) & 1; /* ICC_SRE_EL1.SRE */
}

bool slat_vgic_type_offered(u32 type)
{
	if (type == KVM_DEV_TYPE_ARM_VGIC_V3)
		return vgic_v3_offered();
	if (type == KVM_DEV_TYPE_ARM_VGIC_V2)
		return slat_vgic_v2_offered();
	return false;
}

bool slat_vgic_offered(void)
{
	return vgic_v3_offered() || slat_vgic_v2_offered();
}

/* ---- lookups (under the kvcpus lock) ---- */

static struct slat_vgic_cpu *vgic_cpu(struct slat_kvm_vcpu *v)
{
	return v->arch;
}

/* The vCPU Slat placed at this affinity (hv_mpidr: 16 per Aff0 cluster). */
static struct slat_kvm_vcpu *vcpu_at(struct slat_vm *vm, u64 aff)
{
	u64 aff0 = aff & 0xff, aff1 = (aff >> 8) & 0xff, aff2 = (aff >> 16) & 0xff;

	if (aff0 >= 16 || (aff >> 32) & 0xff)
		return NULL;
	return xa_load(&vm->kvcpus, (unsigned long)(aff0 | aff1 << 4 | aff2 << 12));
}

static struct vgic_irq *irq_of(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 intid)
{
	if (intid < VGIC_NR_PRIVATE)
		return cpu ? &cpu->priv[intid] : NULL;
	if (intid < c->nr_irqs && intid < VGIC_INTID_LIMIT)
		return &c->spi[intid - VGIC_NR_PRIVATE];
	return NULL;
}

/* A new pending interrupt for `t`: wake it from WFI, or kick it out of Slat. */
void slat_vgic_kick(struct slat_kvm_vcpu *t)
{
	struct slat_vgic_cpu *cpu = vgic_cpu(t);

	wake_up_interruptible(&t->psci_wq);
	if (cpu->task && cpu->task != current)
		kick_process(cpu->task);
}

/* The vCPU an SPI goes to (1-of-N: vCPU 0; GICv2: its ITARGETSR), or NULL. */
static struct slat_kvm_vcpu *spi_target(struct slat_vm *vm, const struct vgic_irq *irq)
{
	if (vm->irqchip->v2)
		return slat_vgic_v2_spi_target(vm, irq);
	if (irq->route & IROUTER_IRM)
		return xa_load(&vm->kvcpus, 0);
	return vcpu_at(vm, irq->route & AFF_MASK);
}

/* ---- vCPUs ---- */

int slat_vgic_vcpu_create(struct slat_kvm_vcpu *v)
{
	struct slat_irqchip *c = READ_ONCE(v->vc->vm->irqchip);
	struct slat_vgic_cpu *cpu;
	unsigned int i;

	if (c && READ_ONCE(c->ready))
		return -EBUSY; /* KVM: no vCPU after the VGIC is initialised */
	cpu = kzalloc(sizeof(*cpu), GFP_KERNEL);
	if (!cpu)
		return -ENOMEM;
	for (i = 0; i < VGIC_NR_PRIVATE; i++)
		cpu->priv[i].edge = i < 16; /* SGIs edge; PPIs level until ICFGR1 says */
	for (i = 0; i < 16; i++)
		cpu->priv[i].enabled = true; /* KVM: SGIs are always enabled on GICv3 */
	cpu->asleep = true;
	v->arch = cpu;
	return 0;
}

/*
 * KVM makes a GICv2 VM's max_vcpus 8, and the CPU interface number is what
 * GICD_ITARGETSR and GICD_SGIR name: here the vCPU id. Checked once the vCPU
 * is in kvcpus, under its lock, as slat_vgic_create_device checks the ids
 * there: of a vCPU and a GICv2 made at once, one of them sees the other.
 */
int slat_vgic_vcpu_added(struct slat_kvm_vcpu *v)
{
	struct xarray *xa = &v->vc->vm->kvcpus;
	struct slat_irqchip *c;
	int rc = 0;

	xa_lock(xa);
	c = v->vc->vm->irqchip;
	if (c && c->v2 && v->id >= VGIC_V2_MAX_CPUS)
		rc = -EINVAL;
	xa_unlock(xa);
	return rc;
}

void slat_vgic_vcpu_free(struct slat_kvm_vcpu *v)
{
	kfree(v->arch);
	v->arch = NULL;
}

/* ---- the virtual timer ---- */

/* The guest's virtual count: the primary runs with CNTVOFF 0, the VM with its own. */
static u64 counter_now(const struct slat_vm *vm)
{
	isb();
	return read_sysreg(cntvct_el0) - READ_ONCE(vm->kvm_cntvoff);
}

/* The timer's output as the guest left it: enabled, unmasked, expired. */
static bool vtimer_level(const struct slat_vm *vm, const struct hc_run *hr)
{
	u64 ctl = hr->vgic.vtimer_ctl;

	if (!(ctl & CNTV_CTL_ENABLE) || (ctl & CNTV_CTL_IMASK))
		return false;
	return (ctl & CNTV_CTL_ISTATUS) || counter_now(vm) >= hr->vgic.vtimer_cval;
}

/* ---- list registers (the logic: slat_vgic_lr.h) ---- */

/* The distributor forwards pending interrupts: v3 EnableGrp1, v2 Enable. */
static bool dist_on(const struct slat_irqchip *c)
{
	return READ_ONCE(c->ctlr) & (c->v2 ? GICD_CTLR_V2_EN : GICD_CTLR_GRP1);
}

static void consider(struct slat_irqchip *c, struct vgic_irq *irq, u32 intid,
		     struct vgic_pick *picks, unsigned int *n, unsigned int max, bool *more)
{
	bool deliver = vgic_irq_pending(irq) && irq->enabled && dist_on(c);

	if (irq->active || deliver)
		vgic_pick(picks, n, max, (struct vgic_pick){irq, intid}, more);
}

/* lr `i` for `irq`, recorded for the sync: the GICv3 or the GICv2 form. */
static u64 lr_load(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, unsigned int i,
		   struct vgic_irq *irq, u32 intid)
{
	u32 vintid = intid;
	u64 lr;

	if (c->v2)
		lr = vgic_v2_lr_load(irq, intid, &vintid, &cpu->lr_latch[i]);
	else
		lr = vgic_lr_load(irq, intid, &cpu->lr_latch[i]);
	cpu->lr_intid[i] = (u16)vintid;
	return lr;
}

/* Under the lock: the interrupts for `v` into the run page's list registers. */
static void vgic_flush(struct slat_kvm_vcpu *v, struct slat_irqchip *c, struct hc_run *hr)
{
	struct slat_vgic_cpu *cpu = vgic_cpu(v);
	struct slat_vm *vm = v->vc->vm;
	struct vgic_pick picks[HC_VGIC_LR_MAX];
	unsigned int n = 0, i, max = min_t(unsigned int, hr->vgic.lr_max, HC_VGIC_LR_MAX);
	bool more = false;
	u32 intid;

	cpu->priv[VGIC_VTIMER_INTID].line = vtimer_level(vm, hr);
	for (intid = 0; intid < VGIC_NR_PRIVATE; intid++)
		consider(c, &cpu->priv[intid], intid, picks, &n, max, &more);
	for (intid = VGIC_NR_PRIVATE; intid < c->nr_irqs; intid++) {
		struct vgic_irq *irq = &c->spi[intid - VGIC_NR_PRIVATE];

		if ((irq->active || vgic_irq_pending(irq)) && spi_target(vm, irq) == v)
			consider(c, irq, intid, picks, &n, max, &more);
	}
	for (i = 0; i < n; i++)
		hr->vgic.lr[i] = lr_load(c, cpu, i, picks[i].irq, picks[i].intid);
	cpu->nr_lr = n;
	cpu->loaded = true;
	hr->vgic.nr_lr = n;
	hr->vgic.flags = HC_VGIC_ON | (c->v2 ? HC_VGIC_V2 : 0) | (more ? HC_VGIC_NPIE : 0);
	hr->vgic.cpuif_ipa = c->v2 ? c->cpu_base : 0;
}

/* Under the lock: what the guest did with the last flush's list registers. */
static void vgic_sync(struct slat_kvm_vcpu *v, struct slat_irqchip *c, const struct hc_run *hr)
{
	struct slat_vgic_cpu *cpu = vgic_cpu(v);
	unsigned int i;

	if (!cpu->loaded)
		return;
	for (i = 0; i < cpu->nr_lr; i++) {
		u32 vintid = cpu->lr_intid[i];
		struct vgic_irq *irq = irq_of(c, cpu, vintid & VGIC_V2_INTID_MASK);

		/* An lr naming another INTID is ignored: Slat only writes back
		 * what the guest did with the ones it was given. */
		if (irq && c->v2)
			vgic_v2_lr_sync(irq, vintid, hr->vgic.lr[i], cpu->lr_latch[i]);
		else if (irq)
			vgic_lr_sync(irq, vintid, hr->vgic.lr[i], cpu->lr_latch[i]);
	}
	cpu->loaded = false;
}

/* ---- entry and exit ---- */

static struct slat_irqchip *vgic_of(struct slat_kvm_vcpu *v)
{
	return READ_ONCE(v->vc->vm->irqchip);
}

int slat_vgic_ready(struct slat_kvm_vcpu *v)
{
	struct slat_irqchip *c = vgic_of(v);
	struct hc_run *hr = page_address(v->vc->run);
	struct xarray *xa = &v->vc->vm->kvcpus;

	if (!c) {
		hr->vgic.flags = 0;
		hr->vgic.nr_lr = 0;
		return 0;
	}
	/* KVM initialises a VGIC the VMM did not at the first run; it must
	 * know where its frames are by then. */
	if (c->v2) {
		int rc = slat_vgic_v2_check_addrs(c);

		if (rc)
			return rc;
	} else if (c->dist_base == VGIC_ADDR_UNSET || c->redist_base == VGIC_ADDR_UNSET) {
		return -ENXIO;
	} else if (c->redist_count && v->id >= c->redist_count) {
		return -ENXIO; /* this vCPU has no redistributor in the region (KVM: -ENXIO) */
	}
	xa_lock(xa);
	WRITE_ONCE(c->ready, true);
	WRITE_ONCE(c->mapped, true);
	vgic_sync(v, c, hr);
	vgic_cpu(v)->task = current;
	vgic_flush(v, c, hr);
	xa_unlock(xa);
	return 0;
}

void slat_vgic_done(struct slat_kvm_vcpu *v)
{
	struct slat_irqchip *c = vgic_of(v);
	struct xarray *xa = &v->vc->vm->kvcpus;

	if (!c || !v->arch)
		return;
	xa_lock(xa);
	vgic_sync(v, c, page_address(v->vc->run));
	vgic_cpu(v)->task = NULL;
	xa_unlock(xa);
}

/* ---- KVM_IRQ_LINE ---- */

static int vgic_set_line(struct slat_vm *vm, struct slat_irqchip *c, struct slat_kvm_vcpu *t,
			 u32 intid, bool level)
{
	struct vgic_irq *irq;
	bool was;

	xa_lock(&vm->kvcpus);
	irq = irq_of(c, t ? vgic_cpu(t) : NULL, intid);
	if (!irq) {
		xa_unlock(&vm->kvcpus);
		return -EINVAL;
	}
	was = vgic_irq_pending(irq);
	if (irq->edge)
		irq->latch |= level; /* any assertion of an edge interrupt */
	else
		irq->line = level;
	if (!t)
		t = spi_target(vm, irq);
	if (t && vgic_irq_pending(irq) != was)
		slat_vgic_kick(t); /* raised: deliver; lowered: take it out of the lrs */
	xa_unlock(&vm->kvcpus);
	return 0;
}

/*
 * KVM's arm64 irq field: vcpu2_index 31:28, type 27:24, vcpu_index 23:16,
 * number 15:0. With the VGIC: SPIs (32..nr_irqs-1) and a vCPU's PPIs (16-31).
 */
long slat_vgic_irq_line(struct slat_vm *vm, void __user *up)
{
	struct slat_irqchip *c = READ_ONCE(vm->irqchip);
	struct kvm_irq_level l;
	u32 type, num, idx;
	struct slat_kvm_vcpu *t;

	if (copy_from_user(&l, up, sizeof(l)))
		return -EFAULT;
	if (!c)
		return -ENXIO; /* no user-space irqchip lines (KVM_ARM_IRQ_TYPE_CPU) */
	type = (l.irq >> KVM_ARM_IRQ_TYPE_SHIFT) & KVM_ARM_IRQ_TYPE_MASK;
	num = l.irq & KVM_ARM_IRQ_NUM_MASK;
	idx = ((l.irq >> KVM_ARM_IRQ_VCPU_SHIFT) & KVM_ARM_IRQ_VCPU_MASK) |
	      ((l.irq >> KVM_ARM_IRQ_VCPU2_SHIFT) & KVM_ARM_IRQ_VCPU2_MASK) << 8;
	if (type == KVM_ARM_IRQ_TYPE_SPI)
		return num < VGIC_NR_PRIVATE ? -EINVAL : vgic_set_line(vm, c, NULL, num, l.level);
	if (type != KVM_ARM_IRQ_TYPE_PPI || num < 16 || num >= VGIC_NR_PRIVATE)
		return -EINVAL;
	t = xa_load(&vm->kvcpus, idx);
	if (!t)
		return -EINVAL;
	return vgic_set_line(vm, c, t, num, l.level);
}

/* ---- MMIO: bit, byte and route registers ---- */

enum bit_reg { BIT_ENABLE, BIT_PEND, BIT_ACTIVE };

static bool bit_get(const struct vgic_irq *irq, enum bit_reg r)
{
	switch (r) {
	case BIT_ENABLE:
		return irq->enabled;
	case BIT_PEND:
		return vgic_irq_pending(irq);
	default:
		return irq->active;
	}
}

static void bit_set(struct vgic_irq *irq, enum bit_reg r, bool set)
{
	switch (r) {
	case BIT_ENABLE:
		irq->enabled = set;
		break;
	case BIT_PEND: /* a level interrupt's line stays as the device drives it */
		irq->latch = set;
		break;
	default:
		irq->active = set;
		break;
	}
}

/* One access to a set/clear bit register: INTIDs from `first`, 8 per byte. */
static u64 bits_access(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 first,
		       unsigned int len, enum bit_reg r, bool set_reg, bool write, u64 val,
		       bool *raised)
{
	u64 out = 0;
	unsigned int i;

	for (i = 0; i < len * 8; i++) {
		struct vgic_irq *irq = irq_of(c, cpu, first + i);

		if (!irq)
			continue;
		if (!write) {
			out |= (u64)bit_get(irq, r) << i;
			continue;
		}
		if (!(val >> i & 1))
			continue;
		if (r == BIT_ENABLE && first + i < 16)
			continue; /* SGIs stay enabled */
		if (r == BIT_PEND && first + i < 16 && c->v2)
			continue; /* GICv2: SGIs pend by source (SPENDSGIR) */
		if (set_reg && !bit_get(irq, r))
			*raised = true;
		bit_set(irq, r, set_reg);
	}
	return out;
}

static u64 prio_access(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 first,
		       unsigned int len, bool write, u64 val)
{
	u64 out = 0;
	unsigned int i;

	for (i = 0; i < len; i++) {
		struct vgic_irq *irq = irq_of(c, cpu, first + i);

		if (!irq)
			continue;
		if (write)
			irq->prio = (u8)(val >> (8 * i));
		else
			out |= (u64)irq->prio << (8 * i);
	}
	return out;
}

/* GICx_ICFGR: 2 bits per INTID, the upper one edge; SGIs are edge, fixed. */
static u64 cfg_access(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 first,
		      unsigned int len, bool write, u64 val)
{
	u64 out = 0;
	unsigned int i;

	for (i = 0; i < len * 4; i++) {
		struct vgic_irq *irq = irq_of(c, cpu, first + i);

		if (!irq)
			continue;
		if (write && first + i >= 16)
			irq->edge = val >> (2 * i + 1) & 1;
		out |= (u64)irq->edge << (2 * i + 1);
	}
	return write ? 0 : out;
}

/*
 * The registers both frames share, for the INTIDs the frame owns (the
 * distributor: SPIs; a redistributor's SGI frame: its SGIs and PPIs). *hit
 * false: not one of them.
 */
u64 slat_vgic_common_access(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 off,
			    unsigned int len, bool write, u64 val, bool *hit, bool *raised)
{
	*hit = true;
	if (off >= GICX_IGROUPR && off < GICX_ISENABLER)
		return write ? 0 : ~0ull >> (64 - 8 * len); /* group 1, RAO/WI */
	if (off >= GICX_ISENABLER && off < GICX_IPRIORITYR) {
		u32 base = off & ~0x7fu, first = (off - base) * 8;
		enum bit_reg r = base < GICX_ISPENDR	 ? BIT_ENABLE
				 : base < GICX_ISACTIVER ? BIT_PEND
							 : BIT_ACTIVE;
		bool set_reg = !(base & 0x80);

		return bits_access(c, cpu, first, len, r, set_reg, write, val, raised);
	}
	if (off >= GICX_IPRIORITYR && off < GICX_IPRIORITYR + VGIC_NR_IRQS_MAX)
		return prio_access(c, cpu, off - GICX_IPRIORITYR, len, write, val);
	if (off >= GICX_ICFGR && off < GICX_ICFGR + VGIC_NR_IRQS_MAX / 4)
		return cfg_access(c, cpu, (off - GICX_ICFGR) * 4, len, write, val);
	if (off >= GICX_PIDR2 && off < GICX_PIDR2 + 4)
		return write ? 0 : GIC_PIDR2_ARCHV3;
	*hit = false;
	return 0;
}

static u64 dist_access(struct slat_irqchip *c, u32 off, unsigned int len, bool write, u64 val,
		       bool *raised)
{
	bool hit;
	u64 r;

	if (off == GICD_CTLR) {
		if (write)
			c->ctlr = (u32)val & GICD_CTLR_GRP1;
		if (write && (c->ctlr & GICD_CTLR_GRP1))
			*raised = true;
		return c->ctlr | GICD_CTLR_ARE | GICD_CTLR_DS;
	}
	if (off == GICD_TYPER) /* ITLinesNumber; IDbits 9 (10 bits); no LPIs */
		return (c->nr_irqs / 32 - 1) | 9u << 19;
	if (off == GICD_IIDR)
		return GIC_IIDR_SLAT;
	if (off >= GICD_IROUTER + 8 * VGIC_NR_PRIVATE &&
	    off < GICD_IROUTER + 8 * VGIC_NR_IRQS_MAX) {
		struct vgic_irq *irq = irq_of(c, NULL, (off - GICD_IROUTER) / 8);
		unsigned int shift = (off & 4) * 8;

		if (!irq)
			return 0;
		if (write) {
			u64 mask = (len == 8 ? ~0ull : 0xffffffffull) << shift;

			irq->route = (irq->route & ~mask) | ((val << shift) & mask);
			irq->route &= AFF_MASK | IROUTER_IRM;
			*raised = vgic_irq_pending(irq);
		}
		return irq->route >> shift;
	}
	/* Private INTIDs are the redistributors' (ARE): RAZ/WI here. */
	if ((off >= GICX_IGROUPR && off < GICX_IGROUPR + 0x80 && (off & 0x7f) < 4) ||
	    (off >= GICX_IPRIORITYR && off < GICX_IPRIORITYR + VGIC_NR_PRIVATE) ||
	    (off >= GICX_ICFGR && off < GICX_ICFGR + 8))
		return 0;
	if (off >= GICX_ISENABLER && off < GICX_IPRIORITYR && (off & 0x7f) < 4)
		return 0;
	r = slat_vgic_common_access(c, NULL, off, len, write, val, &hit, raised);
	return hit ? r : 0; /* everything else RAZ/WI */
}

/* Redistributor `t` (index `idx`; `last`: the highest). */
static u64 redist_access(struct slat_irqchip *c, struct slat_kvm_vcpu *t, bool last, u32 off,
			 unsigned int len, bool write, u64 val, bool *raised)
{
	struct slat_vgic_cpu *cpu = vgic_cpu(t);
	bool hit;
	u64 typer, r;

	if (off >= GICR_SGI_FRAME) {
		off -= GICR_SGI_FRAME;
		if (off >= GICX_IPRIORITYR + VGIC_NR_PRIVATE && off < GICX_ICFGR)
			return 0;
		if ((off >= GICX_IGROUPR && off < GICX_IPRIORITYR && (off & 0x7f) >= 4) ||
		    off >= GICX_ICFGR + 8)
			return 0; /* only the first register of each: INTIDs 0-31 */
		r = slat_vgic_common_access(c, cpu, off, len, write, val, &hit, raised);
		return hit ? r : 0;
	}
	switch (off & ~7u) {
	case GICR_TYPER: /* Affinity, Processor_Number (the vCPU id), Last */
		typer = (t->mpidr & 0xffffff) << 32 | ((t->mpidr >> 32) & 0xff) << 56 |
			(u64)(t->id & 0xffff) << 8 | (last ? GICR_TYPER_LAST : 0);
		return typer >> ((off & 4) * 8);
	default:
		break;
	}
	switch (off) {
	case GICR_IIDR:
		return GIC_IIDR_SLAT;
	case GICR_WAKER: /* the sleep handshake completes at once */
		if (write)
			cpu->asleep = val & GICR_WAKER_PS;
		return cpu->asleep ? GICR_WAKER_PS | GICR_WAKER_CA : 0;
	case GICX_PIDR2:
		return GIC_PIDR2_ARCHV3;
	default:
		return 0; /* GICR_CTLR (no LPIs) and the rest: RAZ/WI */
	}
}

/* Kick every vCPU that may now have something to take (after a write). */
void slat_vgic_kick_all(struct slat_vm *vm)
{
	struct slat_kvm_vcpu *t;
	unsigned long i;

	xa_for_each (&vm->kvcpus, i, t)
		slat_vgic_kick(t);
}

static bool vgic_mmio(struct slat_kvm_vcpu *v, struct slat_irqchip *c, struct hc_run *hr)
{
	struct slat_vm *vm = v->vc->vm;
	u64 gpa = hr->u.mmio.gpa, val = hr->u.mmio.data, out = 0;
	unsigned long idx;
	unsigned int len = hr->u.mmio.len;
	bool write = hr->u.mmio.is_write, raised = false, legal;
	struct slat_kvm_vcpu *t;

	legal = (len == 1 || len == 2 || len == 4 || len == 8) && !(gpa & (len - 1));
	if (c->v2 && gpa - c->dist_base < VGIC_V2_DIST_SIZE) {
		xa_lock(&vm->kvcpus);
		if (legal)
			out = slat_vgic_v2_dist_access(v, c, gpa - c->dist_base, len, write, val,
						       &raised);
	} else if (c->v2) {
		return false; /* no redistributors; the CPU interface is Slat's */
	} else if (gpa - c->dist_base < VGIC_DIST_SIZE) {
		xa_lock(&vm->kvcpus);
		if (legal)
			out = dist_access(c, gpa - c->dist_base, len, write, val, &raised);
	} else if (gpa >= c->redist_base) {
		idx = (gpa - c->redist_base) / VGIC_REDIST_SIZE;
		xa_lock(&vm->kvcpus);
		t = idx < U32_MAX && (!c->redist_count || idx < c->redist_count)
			? xa_load(&vm->kvcpus, idx)
			: NULL;
		if (!t) {
			xa_unlock(&vm->kvcpus);
			return false; /* past the last redistributor: the VMM's */
		}
		if (legal)
			out = redist_access(
			    c, t, !xa_find_after(&vm->kvcpus, &idx, ULONG_MAX, XA_PRESENT),
			    (gpa - c->redist_base) % VGIC_REDIST_SIZE, len, write, val, &raised);
	} else {
		return false;
	}
	if (raised)
		slat_vgic_kick_all(vm);
	xa_unlock(&vm->kvcpus);
	if (!legal)
		pr_info_once("slat: GIC access of %u bytes at 0x%llx: RAZ/WI\n", len, gpa);
	if (!write)
		hr->u.mmio.data = len == 8 ? out : out & ((1ull << (8 * len)) - 1);
	return true;
}

/* ---- SGIs ---- */

static void vgic_sgi(struct slat_kvm_vcpu *v, u64 val)
{
	struct slat_vm *vm = v->vc->vm;
	u32 intid = SGI1R_INTID(val);
	u64 aff =
	    ((val >> 48) & 0xff) << 32 | ((val >> 32) & 0xff) << 16 | ((val >> 16) & 0xff) << 8;
	unsigned int rs = (val >> 44) & 0xf, b;
	struct slat_kvm_vcpu *t;
	unsigned long i;

	xa_lock(&vm->kvcpus);
	if (val & SGI1R_IRM) {
		xa_for_each (&vm->kvcpus, i, t) {
			if (t == v)
				continue;
			vgic_cpu(t)->priv[intid].latch = true;
			slat_vgic_kick(t);
		}
	} else {
		for (b = 0; b < 16; b++) {
			if (!(val >> b & 1) || !(t = vcpu_at(vm, aff | (rs * 16 + b))))
				continue;
			vgic_cpu(t)->priv[intid].latch = true;
			slat_vgic_kick(t);
		}
	}
	xa_unlock(&vm->kvcpus);
}

/* ---- WFI ---- */

static bool vgic_wake_now(struct slat_kvm_vcpu *v, struct slat_irqchip *c, const struct hc_run *hr)
{
	struct slat_vgic_cpu *cpu = vgic_cpu(v);
	struct slat_vm *vm = v->vc->vm;
	bool wake = false;
	u32 intid;

	if (!dist_on(c))
		return false;
	xa_lock(&vm->kvcpus);
	cpu->priv[VGIC_VTIMER_INTID].line = vtimer_level(vm, hr);
	for (intid = 0; intid < VGIC_NR_PRIVATE && !wake; intid++)
		wake = vgic_irq_pending(&cpu->priv[intid]) && cpu->priv[intid].enabled;
	for (intid = VGIC_NR_PRIVATE; intid < c->nr_irqs && !wake; intid++) {
		struct vgic_irq *irq = &c->spi[intid - VGIC_NR_PRIVATE];

		wake = vgic_irq_pending(irq) && irq->enabled && spi_target(vm, irq) == v;
	}
	xa_unlock(&vm->kvcpus);
	return wake;
}

/*
 * WFI waits for an interrupt for this vCPU: a pending one, or its timer's
 * deadline when the timer could interrupt (enabled and unmasked, its PPI
 * enabled, the distributor on). An expired timer that cannot interrupt wakes
 * nothing, as in KVM.
 */
static void vgic_wfi(struct slat_kvm_vcpu *v, struct slat_irqchip *c, const struct hc_run *hr)
{
	u64 ctl = hr->vgic.vtimer_ctl, now, ns;
	bool timer = (ctl & CNTV_CTL_ENABLE) && !(ctl & CNTV_CTL_IMASK) &&
		     READ_ONCE(vgic_cpu(v)->priv[VGIC_VTIMER_INTID].enabled) && dist_on(c);

	if (!timer) {
		wait_event_interruptible(v->psci_wq, vgic_wake_now(v, c, hr));
		return;
	}
	now = counter_now(v->vc->vm);
	if (hr->vgic.vtimer_cval <= now)
		return; /* expired meanwhile: the next flush delivers it */
	/* At most an hour per wait (a far deadline cannot overflow the ns count);
	 * the next WFI waits again. */
	ns = mul_u64_u64_div_u64(
	    min_t(u64, hr->vgic.vtimer_cval - now, (u64)arch_timer_get_cntfrq() * VGIC_WFI_MAX_S),
	    NSEC_PER_SEC, arch_timer_get_cntfrq());
	wait_event_interruptible_hrtimeout(v->psci_wq, vgic_wake_now(v, c, hr),
					   ns_to_ktime(ns ? ns : 1));
}

int slat_vgic_exit(struct slat_kvm_vcpu *v, struct hc_run *hr)
{
	struct slat_irqchip *c = vgic_of(v);
	struct xarray *xa = &v->vc->vm->kvcpus;

	if (!c)
		return SLAT_KVM_GENERIC;
	xa_lock(xa);
	vgic_sync(v, c, hr);
	xa_unlock(xa);
	switch (hr->reason) {
	case HC_EXIT_MMIO:
		return vgic_mmio(v, c, hr) ? SLAT_KVM_REENTER : SLAT_KVM_GENERIC;
	case HC_EXIT_SYSREG:
		if (hr->u.sysreg.id == HC_SYSREG_ICC_SGI1R && !c->v2)
			vgic_sgi(v, hr->u.sysreg.data);
		else /* group 0 and Secure SGIs: one security state, group 1 only;
		      * a GICv2 guest has no such registers (GICD_SGIR) */
			pr_info_once("slat: guest SGI register %#x ignored\n", hr->u.sysreg.id);
		return SLAT_KVM_REENTER;
	case HC_EXIT_HALT:
		if (!vgic_wake_now(v, c, hr))
			vgic_wfi(v, c, hr);
		return SLAT_KVM_REENTER;
	default:
		return SLAT_KVM_GENERIC;
	}
}

/* ---- save and restore: the register groups of KVM's arm-vgic-v3.rst ---- */

static const struct vgic_region dist_regions[] = {
    {GICD_CTLR, 16, 0}, /* CTLR, TYPER, IIDR, TYPER2 */
    {GICD_STATUSR, 4, 0},	{GICX_IGROUPR, 0x80, 1},   {GICX_ISENABLER, 0x80, 1},
    {GICX_ICENABLER, 0x80, 1},	{GICX_ISPENDR, 0x80, 1},   {GICX_ICPENDR, 0x80, 1},
    {GICX_ISACTIVER, 0x80, 1},	{GICX_ICACTIVER, 0x80, 1}, {GICX_IPRIORITYR, 0x400, 8},
    {GICD_ITARGETSR, 0x400, 8}, {GICX_ICFGR, 0x100, 2},	   {GICD_IGRPMODR, 0x80, 1},
    {GICD_IROUTER, 0x2000, 64}, {GICX_IDREGS, 48, 0},
};

static const struct vgic_region redist_regions[] = {
    {GICR_CTLR, 4, 0},
    {GICR_IIDR, 4, 0},
    {GICR_TYPER, 8, 0},
    {GICD_STATUSR, 4, 0}, /* GICR_STATUSR: the same offset */
    {GICR_WAKER, 4, 0},
    {GICR_PROPBASER, 8, 0},
    {GICR_PENDBASER, 8, 0},
    {GICR_INVLPIR, 8, 0},
    {GICR_INVALLR, 8, 0},
    {GICR_SYNCR, 4, 0},
    {GICX_IDREGS, 48, 0},
    {GICR_SGI_FRAME + GICX_IGROUPR, 4, 0},
    {GICR_SGI_FRAME + GICX_ISENABLER, 4, 0},
    {GICR_SGI_FRAME + GICX_ICENABLER, 4, 0},
    {GICR_SGI_FRAME + GICX_ISPENDR, 4, 0},
    {GICR_SGI_FRAME + GICX_ICPENDR, 4, 0},
    {GICR_SGI_FRAME + GICX_ISACTIVER, 4, 0},
    {GICR_SGI_FRAME + GICX_ICACTIVER, 4, 0},
    {GICR_SGI_FRAME + GICX_IPRIORITYR, 32, 0},
    {GICR_SGI_FRAME + GICX_ICFGR, 8, 0},
    {GICR_SGI_FRAME + GICD_IGRPMODR, 4, 0},
    {GICR_SGI_FRAME + GICR_NSACR, 4, 0},
};

/* KVM's check: an aligned 32-bit access inside a block, to an INTID that exists. */
bool slat_vgic_region_ok(const struct vgic_region *r, size_t n, u32 off, u32 nr_irqs)
{
	size_t i;

	if (off & 3)
		return false;
	for (i = 0; i < n; i++)
		if (off >= r[i].off && off - r[i].off < r[i].len)
			return !r[i].bpi || (off - r[i].off) * 8 / r[i].bpi < nr_irqs;
	return false;
}

/*
 * ISPENDR and ICPENDR from user space (KVM's uaccess): the pending latch
 * alone, without the line level (LEVEL_INFO carries that); an ISPENDR write
 * sets each latch to its bit, set or clear; ICPENDR reads 0 and ignores
 * writes. `off` in the frame (the distributor's, or the SGI frame).
 */
static u32 user_pending(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 off, bool write,
			u32 val, bool *raised)
{
	u32 first = (off - GICX_ISPENDR) * 8, out = 0, i;

	if (off >= GICX_ICPENDR || (!cpu && first < VGIC_NR_PRIVATE))
		return 0;
	for (i = 0; i < 32; i++) {
		struct vgic_irq *irq = irq_of(c, cpu, first + i);

		if (!irq)
			continue;
		if (!write) {
			out |= (u32)irq->latch << i;
			continue;
		}
		irq->latch = val >> i & 1;
		*raised |= irq->latch;
	}
	return out;
}

/* KVM's user access where no register is: reads 0, writes ignored (HAS: -ENXIO). */
int slat_vgic_user_raz_wi(bool write, u32 *val)
{
	if (!write)
		*val = 0;
	return 0;
}

/* Under the lock: one distributor register from user space (vCPU 0's view). */
static int user_dist(struct slat_irqchip *c, u32 off, bool write, u32 *val, bool *raised)
{
	u32 now;

	if (!slat_vgic_region_ok(dist_regions, ARRAY_SIZE(dist_regions), off, c->nr_irqs))
		return slat_vgic_user_raz_wi(write, val);
	if (off >= GICX_ISPENDR && off < GICX_ISACTIVER) {
		now = user_pending(c, NULL, off, write, *val, raised);
		if (!write)
			*val = now;
		return 0;
	}
	if (off == GICD_STATUSR) { /* KVM: reads all ones, writes ignored */
		if (!write)
			*val = ~0u;
		return 0;
	}
	now = (u32)dist_access(c, off, 4, false, 0, raised);
	if (write && (off == GICD_IIDR || off == GICD_TYPER2))
		return *val == now ? 0 : -EINVAL; /* KVM: another value is -EINVAL */
	if (!write)
		*val = now;
	else if (off != GICD_TYPER)
		dist_access(c, off, 4, true, *val, raised);
	return 0;
}

/* Under the lock: one register of vCPU `t`'s redistributor from user space. */
static int user_redist(struct slat_vm *vm, struct slat_irqchip *c, struct slat_kvm_vcpu *t, u32 off,
		       bool write, u32 *val, bool *raised)
{
	unsigned long idx = t->id;
	bool last = !xa_find_after(&vm->kvcpus, &idx, ULONG_MAX, XA_PRESENT);
	u32 sgi = off - GICR_SGI_FRAME;

	if (!slat_vgic_region_ok(redist_regions, ARRAY_SIZE(redist_regions), off, c->nr_irqs))
		return slat_vgic_user_raz_wi(write, val);
	if (off >= GICR_SGI_FRAME && sgi >= GICX_ISPENDR && sgi < GICX_ISACTIVER) {
		u32 now = user_pending(c, vgic_cpu(t), sgi, write, *val, raised);

		if (!write)
			*val = now;
		return 0;
	}
	if (!write)
		*val = (u32)redist_access(c, t, last, off, 4, false, 0, raised);
	else
		redist_access(c, t, last, off, 4, true, *val, raised);
	return 0;
}

/*
 * GRP_LEVEL_INFO: 32 line levels from `intid` (a multiple of 32, else
 * -EINVAL), of level-triggered interrupts only on reads; a write sets the
 * line of any type, SGIs and INTIDs past the last excepted, as KVM does.
 */
static int user_level(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 intid, bool write,
		      u32 *val, bool *raised)
{
	u32 i, out = 0;

	if (intid % 32)
		return -EINVAL;
	for (i = 0; i < 32; i++) {
		struct vgic_irq *irq;

		if (intid + i < 16 || intid + i >= c->nr_irqs)
			continue;
		irq = irq_of(c, cpu, intid + i);
		if (!irq)
			continue;
		if (!write) {
			out |= (u32)(!irq->edge && irq->line) << i;
			continue;
		}
		irq->line = *val >> i & 1;
		*raised |= irq->line;
	}
	if (!write)
		*val = out;
	return 0;
}

/* ---- the CPU interface's registers (GRP_CPU_SYSREGS) ---- */

/* The attribute's system register (KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK). */
#define ICC_ATTR(op0, op1, crn, crm, op2)                                                          \
	((op0) << 14 | (op1) << 11 | (crn) << 7 | (crm) << 3 | (op2))
#define ICC_PMR	    ICC_ATTR(3, 0, 4, 6, 0)
#define ICC_BPR0    ICC_ATTR(3, 0, 12, 8, 3)
#define ICC_AP0R(n) ICC_ATTR(3, 0, 12, 8, 4 + (n))
#define ICC_AP1R(n) ICC_ATTR(3, 0, 12, 9, (n))
#define ICC_BPR1    ICC_ATTR(3, 0, 12, 12, 3)
#define ICC_CTLR    ICC_ATTR(3, 0, 12, 12, 4)
#define ICC_SRE	    ICC_ATTR(3, 0, 12, 12, 5)
#define ICC_IGRPEN0 ICC_ATTR(3, 0, 12, 12, 6)
#define ICC_IGRPEN1 ICC_ATTR(3, 0, 12, 12, 7)
/* ICH_VMCR_EL2 fields */
#define VMCR_PMR_SHIFT	24
#define VMCR_BPR0_SHIFT 21
#define VMCR_BPR1_SHIFT 18
#define VMCR_EOIM	(1ull << 9)
#define VMCR_CBPR	(1ull << 4)
#define VMCR_ENG1	(1ull << 1)
#define VMCR_ENG0	(1ull << 0)
/* ICC_CTLR_EL1 fields, and where ICH_VTR_EL2 has the same facts */
#define CTLR_CBPR	 (1ull << 0)
#define CTLR_EOIMODE	 (1ull << 1)
#define CTLR_PRIBITS(v)	 (((v) >> 8) & 7)
#define CTLR_IDBITS(v)	 (((v) >> 11) & 7)
#define CTLR_SEIS_A3V(v) (((v) >> 14) & 3)
#define VTR_PRIBITS(v)	 (((v) >> 29) & 7)
#define VTR_IDBITS(v)	 (((v) >> 23) & 7)
#define VTR_SEIS_A3V(v)	 ((((v) >> 22) & 1) | (((v) >> 21) & 1) << 1)
#define ICC_SRE_EL1_VAL	 7ull /* SRE, DFB, DIB: as KVM reports them */

static bool icc_known(u32 reg)
{
	switch (reg) {
	case ICC_PMR:
	case ICC_BPR0:
	case ICC_AP0R(0)... ICC_AP0R(3):
	case ICC_AP1R(0)... ICC_AP1R(3):
	case ICC_BPR1:
	case ICC_CTLR:
	case ICC_SRE:
	case ICC_IGRPEN0:
	case ICC_IGRPEN1:
		return true;
	default:
		return false;
	}
}

/* The highest active-priority register index the CPU has (KVM: -EINVAL past it). */
static unsigned int icc_max_apr(const struct hc_regs_arm64 *r)
{
	unsigned int bits = VTR_PRIBITS(r->ich_vtr) + 1;

	return bits >= 7 ? 3 : bits == 6 ? 1 : 0;
}

static u64 vmcr_field(u64 vmcr, unsigned int shift, u64 mask)
{
	return vmcr >> shift & mask;
}

static void vmcr_put(u64 *vmcr, unsigned int shift, u64 mask, u64 val)
{
	*vmcr = (*vmcr & ~(mask << shift)) | (val & mask) << shift;
}

/* An ICC register from Slat's copy of the guest's interface (KVM's mapping). */
static int icc_get(const struct hc_regs_arm64 *r, u32 reg, u64 *val)
{
	u64 vmcr = r->ich_vmcr, bpr0 = vmcr_field(vmcr, VMCR_BPR0_SHIFT, 7);

	switch (reg) {
	case ICC_PMR:
		*val = vmcr_field(vmcr, VMCR_PMR_SHIFT, 0xff);
		return 0;
	case ICC_BPR0:
		*val = bpr0;
		return 0;
	case ICC_BPR1: /* with CBPR BPR0's value plus one, at most 7 */
		*val =
		    (vmcr & VMCR_CBPR) ? min(bpr0 + 1, 7ull) : vmcr_field(vmcr, VMCR_BPR1_SHIFT, 7);
		return 0;
	case ICC_CTLR:
		*val = VTR_PRIBITS(r->ich_vtr) << 8 | VTR_IDBITS(r->ich_vtr) << 11 |
		       (u64)VTR_SEIS_A3V(r->ich_vtr) << 14 | ((vmcr & VMCR_CBPR) ? CTLR_CBPR : 0) |
		       ((vmcr & VMCR_EOIM) ? CTLR_EOIMODE : 0);
		return 0;
	case ICC_SRE:
		*val = ICC_SRE_EL1_VAL;
		return 0;
	case ICC_IGRPEN0:
		*val = !!(vmcr & VMCR_ENG0);
		return 0;
	case ICC_IGRPEN1:
		*val = !!(vmcr & VMCR_ENG1);
		return 0;
	default: /* the active priorities */
		if ((reg & 3) > icc_max_apr(r))
			return -EINVAL;
		*val = reg >= ICC_AP1R(0) ? r->ich_ap1r[reg & 3] : r->ich_ap0r[reg & 3];
		return 0;
	}
}

static int icc_set(struct hc_regs_arm64 *r, u32 reg, u64 val)
{
	u64 *vmcr = &r->ich_vmcr;

	switch (reg) {
	case ICC_PMR:
		vmcr_put(vmcr, VMCR_PMR_SHIFT, 0xff, val);
		return 0;
	case ICC_BPR0:
		vmcr_put(vmcr, VMCR_BPR0_SHIFT, 7, val);
		return 0;
	case ICC_BPR1: /* ignored while CBPR ties it to BPR0, as in KVM */
		if (!(*vmcr & VMCR_CBPR))
			vmcr_put(vmcr, VMCR_BPR1_SHIFT, 7, val);
		return 0;
	case ICC_CTLR: /* more priority or INTID bits than the CPU has, or
			* other SEIS / A3V: a state this CPU cannot take */
		if (CTLR_PRIBITS(val) > VTR_PRIBITS(r->ich_vtr) ||
		    CTLR_IDBITS(val) > VTR_IDBITS(r->ich_vtr) ||
		    CTLR_SEIS_A3V(val) != VTR_SEIS_A3V(r->ich_vtr))
			return -EINVAL;
		*vmcr = (*vmcr & ~(VMCR_CBPR | VMCR_EOIM)) | ((val & CTLR_CBPR) ? VMCR_CBPR : 0) |
			((val & CTLR_EOIMODE) ? VMCR_EOIM : 0);
		return 0;
	case ICC_SRE:
		return (val & 1) ? 0 : -EINVAL; /* the interface is always on */
	case ICC_IGRPEN0:
		*vmcr = (val & 1) ? *vmcr | VMCR_ENG0 : *vmcr & ~VMCR_ENG0;
		return 0;
	case ICC_IGRPEN1:
		*vmcr = (val & 1) ? *vmcr | VMCR_ENG1 : *vmcr & ~VMCR_ENG1;
		return 0;
	default:
		if ((reg & 3) > icc_max_apr(r))
			return -EINVAL;
		if (reg >= ICC_AP1R(0))
			r->ich_ap1r[reg & 3] = (u32)val;
		else
			r->ich_ap0r[reg & 3] = (u32)val;
		return 0;
	}
}

/*
 * One register of vCPU `t`'s CPU interface through Slat's register page:
 * `fn` reads it into *val or writes *val. KVM refuses while a vCPU is in an
 * ioctl (-EBUSY); here the target's own lock says so.
 */
int slat_vgic_cpuif_access(struct slat_kvm_vcpu *t, slat_vgic_cpuif_fn fn, u32 reg, u64 *val,
			   bool set)
{
	struct hc_regs_arm64 *r;
	int rc;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (!mutex_trylock(&t->vc->lock)) {
		kfree(r);
		return -EBUSY;
	}
	rc = slat_vcpu_regs_k(t->vc, r, false);
	if (!rc)
		rc = fn(r, reg, val, set);
	if (!rc && set) {
		r->flags |= HC_REGS_ARM64_GIC | HC_REGS_ARM64_KEEP_PENDING;
		rc = slat_vcpu_regs_k(t->vc, r, true);
	}
	mutex_unlock(&t->vc->lock);
	kfree(r);
	return rc;
}

static int icc_access(struct hc_regs_arm64 *r, u32 reg, u64 *val, bool set)
{
	return set ? icc_set(r, reg, *val) : icc_get(r, reg, val);
}

static long user_icc(struct slat_kvm_vcpu *t, u32 reg, u64 __user *up, bool set)
{
	u64 val = 0;
	int rc;

	if (set && get_user(val, up))
		return -EFAULT;
	rc = slat_vgic_cpuif_access(t, icc_access, reg, &val, set);
	if (!rc && !set)
		rc = put_user(val, up);
	return rc;
}

/* The vCPU an attribute names: vCPU 0 for the distributor, else by affinity. */
static struct slat_kvm_vcpu *attr_vcpu(struct slat_vm *vm, const struct kvm_device_attr *a)
{
	u64 v = (a->attr & KVM_DEV_ARM_VGIC_V3_MPIDR_MASK) >> KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT;

	if (a->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS)
		return xa_load(&vm->kvcpus, 0);
	/* Aff3 in bits 31:24 of the attribute's field, MPIDR bits 39:32 */
	return vcpu_at(vm, (v & 0xffffff) | (v >> 24 & 0xff) << 32);
}

static bool level_info_attr(u64 attr)
{
	return ((attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK) >>
		KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT) == VGIC_LEVEL_INFO_LINE_LEVEL;
}

/* KVM_HAS_DEVICE_ATTR of the register groups: 0, -EINVAL (no such vCPU) or -ENXIO. */
static long state_has(struct slat_vm *vm, struct slat_irqchip *c, const struct kvm_device_attr *a)
{
	u32 off = a->attr & KVM_DEV_ARM_VGIC_OFFSET_MASK;

	if (a->group == KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO)
		return level_info_attr(a->attr) ? 0 : -ENXIO;
	if (!attr_vcpu(vm, a))
		return -EINVAL;
	switch (a->group) {
	case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
		return slat_vgic_region_ok(dist_regions, ARRAY_SIZE(dist_regions), off, c->nr_irqs)
			   ? 0
			   : -ENXIO;
	case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
		return slat_vgic_region_ok(redist_regions, ARRAY_SIZE(redist_regions), off,
					   c->nr_irqs)
			   ? 0
			   : -ENXIO;
	default:
		return icc_known(a->attr & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK) ? 0 : -ENXIO;
	}
}

/*
 * KVM_GET/SET_DEVICE_ATTR of the register groups, with KVM's answers: no
 * vCPU at the attribute's affinity -EINVAL, a VGIC not yet initialised
 * -EBUSY, an offset without a register -ENXIO, a LEVEL_INFO other than the
 * line level or an INTID not a multiple of 32 -EINVAL.
 */
static long state_access(struct slat_vm *vm, struct slat_irqchip *c, struct kvm_device_attr *a,
			 bool set)
{
	u32 __user *up32 = u64_to_user_ptr(a->addr);
	u32 off = a->attr & KVM_DEV_ARM_VGIC_OFFSET_MASK, val = 0;
	struct slat_kvm_vcpu *t;
	bool raised = false;
	int rc;

	xa_lock(&vm->kvcpus);
	t = attr_vcpu(vm, a);
	xa_unlock(&vm->kvcpus);
	if (!t)
		return -EINVAL;
	if (a->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS) {
		if (!READ_ONCE(c->ready))
			return -EBUSY;
		if (!icc_known(a->attr & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK))
			return -ENXIO;
		return user_icc(t, a->attr & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK,
				u64_to_user_ptr(a->addr), set);
	}
	if (set && get_user(val, up32))
		return -EFAULT;
	if (!READ_ONCE(c->ready))
		return -EBUSY;
	xa_lock(&vm->kvcpus);
	switch (a->group) {
	case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
		rc = user_dist(c, off, set, &val, &raised);
		break;
	case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
		rc = user_redist(vm, c, t, off, set, &val, &raised);
		break;
	default: /* LEVEL_INFO */
		rc = level_info_attr(a->attr)
			 ? user_level(c, vgic_cpu(t),
				      a->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK, set, &val,
				      &raised)
			 : -EINVAL;
		break;
	}
	if (raised)
		slat_vgic_kick_all(vm);
	xa_unlock(&vm->kvcpus);
	if (!rc && !set)
		rc = put_user(val, up32);
	return rc;
}

/* ---- the device ---- */

/* KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION's value (api.rst): count, base, flags, index. */
#define RDIST_INDEX(v) ((v)&0xfffull)
#define RDIST_FLAGS(v) (((v) >> 12) & 0xfull)
#define RDIST_BASE(v)  ((v)&GENMASK_ULL(51, 16))
#define RDIST_COUNT(v) ((v) >> 52)

/* KVM's vgic_check_iorange past its "already set" test: 64 KiB aligned base
 * and size, no wrap (-EINVAL), inside the VM's IPA size (-E2BIG). */
static long vgic_check_range(const struct slat_vm *vm, u64 addr, u64 size)
{
	if ((addr | size) & (SZ_64K - 1))
		return -EINVAL;
	if (addr + size < addr)
		return -EINVAL;
	if (vm->gpa_limit && (addr >= vm->gpa_limit || addr + size > vm->gpa_limit))
		return -E2BIG;
	return 0;
}

/*
 * A redistributor region: its frames from `base`, one per vCPU in id order,
 * as the legacy REDIST attribute lays them out but `count` of them. Slat
 * keeps one region: index 0 (KVM takes further ones at the next index; a
 * second region is refused with -EINVAL, the answer KVM gives an index out
 * of turn). Mixing it with the legacy attribute is -EINVAL, as in KVM.
 */
static long vgic_redist_region(struct slat_vm *vm, struct slat_irqchip *c, u64 __user *up, bool set)
{
	u64 a, size;
	long rc;

	if (get_user(a, up))
		return -EFAULT;
	if (!set) {
		if (RDIST_INDEX(a) || !c->redist_count)
			return -ENOENT;
		return put_user(c->redist_base | (u64)c->redist_count << 52, up);
	}
	if (c->mapped)
		return -EBUSY;
	if (!RDIST_COUNT(a) || RDIST_FLAGS(a))
		return -EINVAL;
	size = (u64)RDIST_COUNT(a) * VGIC_REDIST_SIZE;
	if (RDIST_BASE(a) + size < RDIST_BASE(a))
		return -EINVAL; /* wraps */
	if (c->redist_base != VGIC_ADDR_UNSET)
		return -EINVAL; /* a second region, or after the legacy attribute */
	if (RDIST_INDEX(a))
		return -EINVAL; /* the first region is index 0 */
	rc = vgic_check_range(vm, RDIST_BASE(a), size);
	if (rc)
		return rc;
	c->redist_base = RDIST_BASE(a);
	c->redist_count = RDIST_COUNT(a);
	return 0;
}

/* The legacy REDIST frame range KVM checks: one pair of frames per vCPU made so far. */
static u64 vgic_legacy_redist_size(struct slat_vm *vm)
{
	struct slat_kvm_vcpu *t;
	unsigned long i;
	u64 n = 0;

	xa_lock(&vm->kvcpus);
	xa_for_each (&vm->kvcpus, i, t)
		n++;
	xa_unlock(&vm->kvcpus);
	return n * VGIC_REDIST_SIZE;
}

/*
 * The legacy REDIST base in KVM's order (vgic_v3_alloc_redist_region with a
 * count of 0): wrapping -EINVAL; beside a region -EINVAL, twice -EEXIST;
 * overlapping the distributor -EINVAL; then vgic_check_range.
 */
static long vgic_legacy_redist(struct slat_vm *vm, struct slat_irqchip *c, u64 a)
{
	u64 size = vgic_legacy_redist_size(vm);
	long rc;

	if (a + size < a)
		return -EINVAL;
	if (c->redist_base != VGIC_ADDR_UNSET)
		return c->redist_count ? -EINVAL : -EEXIST;
	if (c->dist_base != VGIC_ADDR_UNSET && a < c->dist_base + VGIC_DIST_SIZE &&
	    c->dist_base < a + size)
		return -EINVAL;
	rc = vgic_check_range(vm, a, size);
	if (!rc)
		c->redist_base = a;
	return rc;
}

static long vgic_set_addr(struct slat_vm *vm, struct slat_irqchip *c, u64 attr, u64 __user *up,
			  bool set)
{
	u64 a;
	long rc;

	if (attr == KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION)
		return vgic_redist_region(vm, c, up, set);
	if (attr != KVM_VGIC_V3_ADDR_TYPE_DIST && attr != KVM_VGIC_V3_ADDR_TYPE_REDIST)
		return -ENXIO;
	if (!set)
		return put_user(attr == KVM_VGIC_V3_ADDR_TYPE_DIST ? c->dist_base : c->redist_base,
				up);
	if (get_user(a, up))
		return -EFAULT;
	if (c->mapped)
		return -EBUSY; /* fixed once a vCPU has run (after CTRL_INIT still free) */
	if (attr == KVM_VGIC_V3_ADDR_TYPE_REDIST)
		return vgic_legacy_redist(vm, c, a);
	if (c->dist_base != VGIC_ADDR_UNSET)
		return -EEXIST;
	rc = vgic_check_range(vm, a, VGIC_DIST_SIZE);
	if (!rc)
		c->dist_base = a;
	return rc;
}

static long vgic_attr(struct slat_vm *vm, unsigned int cmd, struct kvm_device_attr *a)
{
	struct slat_irqchip *c = vm->irqchip;
	u32 __user *up32 = u64_to_user_ptr(a->addr);
	bool set = cmd == KVM_SET_DEVICE_ATTR, has = cmd == KVM_HAS_DEVICE_ATTR;
	u32 n;

	switch (a->group) {
	case KVM_DEV_ARM_VGIC_GRP_ADDR:
		if (c->v2)
			return slat_vgic_v2_addr(vm, c, a, cmd);
		if (has)
			return a->attr == KVM_VGIC_V3_ADDR_TYPE_DIST ||
				       a->attr == KVM_VGIC_V3_ADDR_TYPE_REDIST ||
				       a->attr == KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION
				   ? 0
				   : -ENXIO;
		return vgic_set_addr(vm, c, a->attr, u64_to_user_ptr(a->addr), set);
	case KVM_DEV_ARM_VGIC_GRP_NR_IRQS:
		if (has)
			return 0;
		if (!set)
			return put_user(c->nr_irqs, up32);
		if (get_user(n, up32))
			return -EFAULT;
		if (n < 64 || n > VGIC_NR_IRQS_SET_MAX || n % 32)
			return -EINVAL;
		if (c->ready)
			return n == c->nr_irqs ? 0 : -EBUSY;
		c->nr_irqs = n;
		return 0;
	case KVM_DEV_ARM_VGIC_GRP_CTRL:
		if (a->attr == KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES && !c->v2)
			return set || has ? 0 : -ENXIO; /* no ITS, no LPIs: nothing to save */
		if (a->attr != KVM_DEV_ARM_VGIC_CTRL_INIT)
			return -ENXIO;
		if (has)
			return 0;
		if (!set)
			return -ENXIO;
		WRITE_ONCE(c->ready, true);
		return 0;
	case KVM_DEV_ARM_VGIC_GRP_CPU_REGS: /* the GICv2's only */
		if (!c->v2 || !slat_kvm_a64_state_ok())
			return -ENXIO;
		return slat_vgic_v2_state(vm, c, a, cmd);
	case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
		if (c->v2 && slat_kvm_a64_state_ok())
			return slat_vgic_v2_state(vm, c, a, cmd);
		fallthrough;
	case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
	case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
	case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
		/* GICv3 state (ABI 1.12 keeps the CPU interface) */
		if (c->v2 || !slat_kvm_a64_state_ok())
			return -ENXIO;
		return has ? state_has(vm, c, a) : state_access(vm, c, a, set);
	default:
		return -ENXIO; /* the ITS: not offered */
	}
}

static long vgic_dev_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct slat_vm *vm = f->private_data;
	struct kvm_device_attr a;
	long rc;

	switch (cmd) {
	case KVM_SET_DEVICE_ATTR:
	case KVM_GET_DEVICE_ATTR:
	case KVM_HAS_DEVICE_ATTR:
		if (copy_from_user(&a, (void __user *)arg, sizeof(a)))
			return -EFAULT;
		if (a.flags)
			return -EINVAL;
		mutex_lock(&vm->lock);
		rc = vgic_attr(vm, cmd, &a);
		mutex_unlock(&vm->lock);
		return rc;
	default:
		return -ENOTTY;
	}
}

static int vgic_dev_release(struct inode *inode, struct file *f)
{
	slat_vm_put(f->private_data);
	return 0;
}

static const struct file_operations vgic_dev_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = vgic_dev_ioctl,
    .release = vgic_dev_release,
    .llseek = noop_llseek,
};

static struct slat_irqchip *vgic_new(bool v2)
{
	struct slat_irqchip *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	/* Zeroed: every SPI routed to affinity 0.0.0.0 (vCPU 0), all disabled;
	 * on a GICv2 to no CPU (ITARGETSR 0, as KVM resets it). */
	c->dist_base = c->redist_base = c->cpu_base = VGIC_ADDR_UNSET;
	c->nr_irqs = VGIC_NR_IRQS_DEF;
	c->v2 = v2;
	return c;
}

/*
 * Under vm->lock: the VGIC becomes the VM's. A GICv2 refuses a VM that has a
 * vCPU it cannot number (KVM: more than 8 vCPUs, -E2BIG); under the kvcpus
 * lock, as slat_vgic_vcpu_added looks.
 */
static int vgic_install(struct slat_vm *vm, struct slat_irqchip *c)
{
	unsigned long first = VGIC_V2_MAX_CPUS;
	int rc = 0;

	xa_lock(&vm->kvcpus);
	if (c->v2 && xa_find(&vm->kvcpus, &first, ULONG_MAX, XA_PRESENT))
		rc = -E2BIG;
	if (!rc)
		WRITE_ONCE(vm->irqchip, c);
	xa_unlock(&vm->kvcpus);
	return rc;
}

/*
 * KVM_CREATE_DEVICE: one GICv3 or GICv2 per VM (-EEXIST), before any vCPU has
 * run; the type the machine does not offer -ENODEV; KVM_CREATE_DEVICE_TEST
 * only asks. The fd holds a VM reference; the VGIC itself lives as long as
 * the VM.
 */
long slat_vgic_create_device(struct slat_kvm_vm *kvm, void __user *up)
{
	struct kvm_create_device cd;
	struct slat_vm *vm = kvm->vm;
	struct slat_irqchip *c;
	struct file *file;
	int fd, rc;

	if (copy_from_user(&cd, up, sizeof(cd)))
		return -EFAULT;
	if (!slat_vgic_type_offered(cd.type))
		return -ENODEV;
	if (cd.flags & ~KVM_CREATE_DEVICE_TEST)
		return -EINVAL;
	if (cd.flags & KVM_CREATE_DEVICE_TEST)
		return 0;
	c = vgic_new(cd.type == KVM_DEV_TYPE_ARM_VGIC_V2);
	if (!c)
		return -ENOMEM;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		kfree(c);
		return fd;
	}
	kref_get(&vm->ref); /* the file's, dropped at its release */
	file = anon_inode_getfile(c->v2 ? "kvm-arm-vgic-v2" : "kvm-arm-vgic-v3", &vgic_dev_fops, vm,
				  O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		slat_vm_put(vm);
		kfree(c);
		return PTR_ERR(file);
	}
	/* Published only with its fd sure to come: nothing can fail after. */
	mutex_lock(&vm->lock);
	rc = vm->irqchip ? -EEXIST : vgic_install(vm, c);
	mutex_unlock(&vm->lock);
	if (rc) {
		fput(file);
		put_unused_fd(fd);
		kfree(c);
		return rc;
	}
	fd_install(fd, file);
	cd.fd = fd;
	if (copy_to_user(up, &cd, sizeof(cd)))
		return -EFAULT; /* the fd stays, as in KVM */
	return 0;
}
