// SPDX-License-Identifier: GPL-2.0
/*
 * The GICv2 of /dev/kvm on arm64 (KVM_DEV_TYPE_ARM_VGIC_V2, Slat's ABI 1.7):
 * when it is offered, its two addresses (KVM's
 * Documentation/virt/kvm/devices/arm-vgic.rst) and its 4 KiB distributor,
 * from the GICv2 architecture specification (Arm IHI 0048B, chapter 4). The
 * interrupts' state, the list registers, the timer and WFI are
 * slat_kvm_vgic.c's, shared with the GICv3; the guest's CPU interface is
 * Slat's (it performs those accesses on the GICV frame at EL2).
 *
 * The GICv2 CPU interface number of a vCPU is its id (below 8). An SPI goes
 * to the lowest-numbered vCPU of its GICD_ITARGETSR mask, to none when the
 * mask is 0, as in KVM (vgic_target_oracle: ffs of the targets).
 */
#include <linux/bitfield.h>
#include <linux/bitops.h>
#include <linux/uaccess.h>
#include <asm/sysreg.h>

#include "slat_kvm_vgic.h"

/* GICD registers (offsets in the 4 KiB frame, IHI 0048B table 4-1). */
#define GICD_CTLR	 0x000
#define GICD_TYPER	 0x004
#define GICD_IIDR	 0x008
#define GICD_IGROUPR	 0x080
#define GICD_ISENABLER	 0x100
#define GICD_ICENABLER	 0x180
#define GICD_ISPENDR	 0x200
#define GICD_ICPENDR	 0x280
#define GICD_ISACTIVER	 0x300
#define GICD_ICACTIVER	 0x380
#define GICD_IPRIORITYR	 0x400
#define GICD_ITARGETSR	 0x800
#define GICD_ICFGR	 0xc00
#define GICD_SGIR	 0xf00
#define GICD_CPENDSGIR	 0xf10
#define GICD_SPENDSGIR	 0xf20
#define GICD_ICPIDR2	 0xfe8
#define GICD_CTLR_EN	 1u		       /* Enable (no Security Extensions) */
#define GICD_SGIR_INTID	 0xfu		       /* SGIINTID 3:0 */
#define GIC_PIDR2_ARCHV2 0x2b		       /* ArchRev 2, JEDEC Arm (as GIC-400) */
#define GIC_IIDR_SLAT	 (0x53u << 24 | 0x43b) /* the GICv3's: product 'S', Arm */

/* ---- availability ---- */

/*
 * Slat's ABI 1.7 and a primary that does not drive a GICv3 through system
 * registers (ID_AA64PFR0_EL1.GIC 0, or ICC_SRE_EL1.SRE 0): then it has the
 * memory-mapped CPU interface and Slat the GICv2 virtual one.
 */
bool slat_vgic_v2_offered(void)
{
	u64 pfr0 = read_sysreg_s(SYS_ID_AA64PFR0_EL1);

	if ((slat_hv_version & 0xffff) < 7)
		return false;
	if (!((pfr0 >> 24) & 0xf)) /* ICC_SRE_EL1 exists only with the field */
		return true;
	return !(read_sysreg_s(SYS_ICC_SRE_EL1) & 1);
}

/* ---- vCPUs (under the kvcpus lock) ---- */

static struct slat_vgic_cpu *v2_cpu(struct slat_kvm_vcpu *v)
{
	return v->arch;
}

u8 slat_vgic_v2_cpus(struct slat_vm *vm)
{
	unsigned int i;
	u8 m = 0;

	for (i = 0; i < VGIC_V2_MAX_CPUS; i++)
		if (xa_load(&vm->kvcpus, i))
			m |= (u8)BIT(i);
	return m;
}

struct slat_kvm_vcpu *slat_vgic_v2_spi_target(struct slat_vm *vm, const struct vgic_irq *irq)
{
	int cpu = vgic_v2_spi_cpu((u8)irq->route);

	return cpu < 0 ? NULL : xa_load(&vm->kvcpus, cpu);
}

static struct vgic_irq *spi_of(struct slat_irqchip *c, u32 intid)
{
	if (intid < VGIC_NR_PRIVATE || intid >= c->nr_irqs || intid >= VGIC_INTID_LIMIT)
		return NULL;
	return &c->spi[intid - VGIC_NR_PRIVATE];
}

/* ---- the distributor ---- */

/* ITLinesNumber 4:0; CPUNumber 7:5, the highest vCPU id (0-7). */
static u32 v2_typer(struct slat_irqchip *c, struct slat_vm *vm)
{
	u8 cpus = slat_vgic_v2_cpus(vm);

	return (c->nr_irqs / 32 - 1) | (cpus ? fls(cpus) - 1 : 0) << 5;
}

/*
 * GICD_ITARGETSR, a byte per INTID: 0-31 read as the accessing vCPU's own
 * bit (read-only); an SPI's CPU mask is writable, kept to existing vCPUs.
 */
static u64 targets_access(struct slat_kvm_vcpu *v, struct slat_irqchip *c, u32 first,
			  unsigned int len, bool write, u64 val, bool *raised)
{
	u8 present = slat_vgic_v2_cpus(v->vc->vm);
	u64 out = 0;
	unsigned int i;

	for (i = 0; i < len; i++) {
		struct vgic_irq *irq = spi_of(c, first + i);
		u8 m = (u8)(val >> (8 * i)) & present;

		if (first + i < VGIC_NR_PRIVATE)
			out |= (u64)BIT(v->id) << (8 * i);
		if (!irq)
			continue;
		if (write && m != (u8)irq->route && vgic_irq_pending(irq))
			*raised = true;
		if (write)
			irq->route = m;
		out |= (u64)(u8)irq->route << (8 * i);
	}
	return write ? 0 : out;
}

/* GICD_SGIR (write-only): the SGI pending from the writer on each target. */
static void sgir_write(struct slat_kvm_vcpu *v, u32 val)
{
	struct slat_vm *vm = v->vc->vm;
	u8 targets = vgic_v2_sgir_targets(val, v->id, slat_vgic_v2_cpus(vm));
	struct slat_kvm_vcpu *t;
	unsigned int i;

	for (i = 0; i < VGIC_V2_MAX_CPUS; i++) {
		if (!(targets >> i & 1) || !(t = xa_load(&vm->kvcpus, i)))
			continue;
		vgic_v2_sgi_raise(&v2_cpu(t)->priv[val & GICD_SGIR_INTID], (u8)BIT(v->id));
		slat_vgic_kick(t);
	}
}

/*
 * GICD_CPENDSGIR / SPENDSGIR: a byte per SGI of the accessing vCPU, a bit per
 * source vCPU; a 1 written clears / sets that source's pending state.
 */
static u64 sgi_pend_access(struct slat_vgic_cpu *cpu, u32 first, unsigned int len, bool set_reg,
			   bool write, u64 val, bool *raised)
{
	u64 out = 0;
	unsigned int i;

	for (i = 0; i < len && first + i < VGIC_V2_NR_SGIS; i++) {
		struct vgic_irq *irq = &cpu->priv[first + i];
		u8 b = (u8)(val >> (8 * i));

		if (!write) {
			out |= (u64)irq->src << (8 * i);
			continue;
		}
		if (!set_reg) {
			vgic_v2_sgi_clear(irq, b);
			continue;
		}
		if (b & ~irq->src)
			*raised = true;
		vgic_v2_sgi_raise(irq, b);
	}
	return out;
}

static u64 ctlr_access(struct slat_irqchip *c, bool write, u64 val, bool *raised)
{
	if (write) {
		c->ctlr = (u32)val & GICD_CTLR_EN;
		*raised = c->ctlr;
	}
	return c->ctlr;
}

/*
 * One access by vCPU `v` (its own lrs synced): INTIDs 0-31 are its banked
 * private interrupts, through the registers the GICv3's frames share.
 */
u64 slat_vgic_v2_dist_access(struct slat_kvm_vcpu *v, struct slat_irqchip *c, u32 off,
			     unsigned int len, bool write, u64 val, bool *raised)
{
	bool hit;
	u64 r;

	switch (off) {
	case GICD_CTLR:
		return ctlr_access(c, write, val, raised);
	case GICD_TYPER:
		return write ? 0 : v2_typer(c, v->vc->vm);
	case GICD_IIDR:
		return GIC_IIDR_SLAT;
	case GICD_SGIR:
		if (write && len == 4)
			sgir_write(v, (u32)val);
		return 0;
	case GICD_ICPIDR2:
		return GIC_PIDR2_ARCHV2;
	default:
		break;
	}
	if (off >= GICD_IGROUPR && off < GICD_ISENABLER)
		return 0; /* every interrupt group 0: RAZ/WI */
	if (off >= GICD_ITARGETSR && off < GICD_ICFGR)
		return targets_access(v, c, off - GICD_ITARGETSR, len, write, val, raised);
	if (off >= GICD_CPENDSGIR && off < GICD_SPENDSGIR + VGIC_V2_NR_SGIS)
		return sgi_pend_access(v2_cpu(v), (off - GICD_CPENDSGIR) % VGIC_V2_NR_SGIS, len,
				       off >= GICD_SPENDSGIR, write, val, raised);
	r = slat_vgic_common_access(c, v2_cpu(v), off, len, write, val, &hit, raised);
	return hit ? r : 0; /* everything else RAZ/WI */
}

/* ---- the device's addresses ---- */

/*
 * KVM's order (vgic_check_iorange): set twice -EEXIST, not 4 KiB aligned or
 * wrapping -EINVAL, past the VM's IPA size -E2BIG; and, as for the GICv3,
 * -EBUSY once a vCPU has run.
 */
long slat_vgic_v2_addr(struct slat_vm *vm, struct slat_irqchip *c, const struct kvm_device_attr *a,
		       unsigned int cmd)
{
	u64 __user *up = u64_to_user_ptr(a->addr);
	u64 *slot, size, addr;

	if (a->attr == KVM_VGIC_V2_ADDR_TYPE_DIST) {
		slot = &c->dist_base;
		size = VGIC_V2_DIST_SIZE;
	} else if (a->attr == KVM_VGIC_V2_ADDR_TYPE_CPU) {
		slot = &c->cpu_base;
		size = VGIC_V2_CPU_SIZE;
	} else {
		return -ENXIO;
	}
	if (cmd == KVM_HAS_DEVICE_ATTR)
		return 0;
	if (cmd == KVM_GET_DEVICE_ATTR)
		return put_user(*slot, up);
	if (get_user(addr, up))
		return -EFAULT;
	if (c->mapped)
		return -EBUSY;
	if (*slot != VGIC_ADDR_UNSET)
		return -EEXIST;
	if ((addr & (SZ_4K - 1)) || addr + size < addr)
		return -EINVAL;
	if (vm->gpa_limit && addr + size > vm->gpa_limit)
		return -E2BIG;
	*slot = addr;
	return 0;
}

/* KVM checks both at the first run (vgic_v2_map_resources). */
int slat_vgic_v2_check_addrs(const struct slat_irqchip *c)
{
	u64 d = c->dist_base, cpu = c->cpu_base;

	if (d == VGIC_ADDR_UNSET || cpu == VGIC_ADDR_UNSET)
		return -ENXIO;
	if (d + VGIC_V2_DIST_SIZE > cpu && cpu + VGIC_V2_CPU_SIZE > d)
		return -EINVAL; /* the frames overlap */
	return 0;
}

/* ---- save and restore: GRP_DIST_REGS and GRP_CPU_REGS (KVM's arm-vgic.rst) ---- */

/* The registers KVM's GICv2 device has (vgic-mmio-v2.c); elsewhere RAZ/WI. */
static const struct vgic_region v2_dist_regions[] = {
    {GICD_CTLR, 12, 0}, /* CTLR, TYPER, IIDR */
    {GICD_IGROUPR, 0x80, 1},   {GICD_ISENABLER, 0x80, 1},   {GICD_ICENABLER, 0x80, 1},
    {GICD_ISPENDR, 0x80, 1},   {GICD_ICPENDR, 0x80, 1},	    {GICD_ISACTIVER, 0x80, 1},
    {GICD_ICACTIVER, 0x80, 1}, {GICD_IPRIORITYR, 0x400, 8}, {GICD_ITARGETSR, 0x400, 8},
    {GICD_ICFGR, 0x100, 2},    {GICD_SGIR, 4, 0},	    {GICD_CPENDSGIR, 16, 0},
    {GICD_SPENDSGIR, 16, 0},
};

/* GICC registers (IHI 0048B table 4-2) */
#define GICC_CTLR 0x00
#define GICC_PMR  0x04
#define GICC_BPR  0x08
#define GICC_ABPR 0x1c
#define GICC_APR  0xd0 /* APR0-3: the GICH_APR's 32 levels in APR0, the rest RAZ/WI */
#define GICC_IIDR 0xfc

static const struct vgic_region v2_cpu_regions[] = {
    {GICC_CTLR, 4, 0}, {GICC_PMR, 4, 0},  {GICC_BPR, 4, 0},
    {GICC_ABPR, 4, 0}, {GICC_APR, 16, 0}, {GICC_IIDR, 4, 0},
};

/*
 * GICH_VMCR (IHI 0048B 5.3.4), which Slat keeps in hc_regs_arm64.ich_vmcr:
 * VMPriMask 31:27 (KVM's ABI shows GICC_PMR as these 5 bits), VMBP 23:21,
 * VMABP 20:18; bits 9 and 4:0 are GICC_CTLR's EOImode, CBPR, FIQEn, AckCtl,
 * EnableGrp1 and EnableGrp0 at the same places.
 */
#define VMCR_CTLR_MASK 0x21full
#define VMCR_PMR_SHIFT 27
#define VMCR_BP_SHIFT  21
#define VMCR_ABP_SHIFT 18
/* GICC_IIDR: ProductID 31:20 ('S'), architecture 2, implementer Arm */
#define GICC_IIDR_SLAT (0x53u << 20 | 2u << 16 | 0x43b)

static int vmcr_field(u64 *vmcr, unsigned int shift, u64 mask, u64 *val, bool set)
{
	if (set)
		*vmcr = (*vmcr & ~(mask << shift)) | (*val & mask) << shift;
	else
		*val = *vmcr >> shift & mask;
	return 0;
}

/* One GICC register from Slat's copy of the vCPU's interface (KVM's mapping). */
static int gicc_access(struct hc_regs_arm64 *r, u32 off, u64 *val, bool set)
{
	switch (off) {
	case GICC_CTLR:
		return vmcr_field(&r->ich_vmcr, 0, VMCR_CTLR_MASK, val, set);
	case GICC_PMR:
		return vmcr_field(&r->ich_vmcr, VMCR_PMR_SHIFT, 0x1f, val, set);
	case GICC_BPR:
		return vmcr_field(&r->ich_vmcr, VMCR_BP_SHIFT, 7, val, set);
	case GICC_ABPR:
		return vmcr_field(&r->ich_vmcr, VMCR_ABP_SHIFT, 7, val, set);
	case GICC_APR:
		if (set)
			r->ich_ap1r[0] = (u32)*val;
		else
			*val = r->ich_ap1r[0];
		return 0;
	default: /* APR1-3 RAZ/WI; GICC_IIDR read only */
		if (!set)
			*val = off == GICC_IIDR ? GICC_IIDR_SLAT : 0;
		return 0;
	}
}

/*
 * A user write of ISPENDR0 / ICPENDR0's SGI bits (the guest's own are
 * ignored there): as KVM, set pends the SGI from the vCPU itself, clear
 * drops every source.
 */
static void user_sgi_pend(struct slat_vgic_cpu *cpu, unsigned int self, bool set, u32 val,
			  bool *raised)
{
	unsigned int i;

	for (i = 0; i < VGIC_V2_NR_SGIS; i++) {
		if (!(val >> i & 1))
			continue;
		if (set)
			vgic_v2_sgi_raise(&cpu->priv[i], (u8)BIT(self));
		else
			vgic_v2_sgi_clear(&cpu->priv[i], 0xff);
		*raised |= set;
	}
}

/*
 * Under the kvcpus lock: one distributor register as vCPU `t` sees it
 * (its banked SGIs and PPIs), with KVM's user-access differences: GICD_TYPER
 * ignores writes, GICD_IIDR takes only its own value (-EINVAL), and
 * ISPENDR0 / ICPENDR0 reach the SGIs.
 */
static int user_dist(struct slat_kvm_vcpu *t, struct slat_irqchip *c, u32 off, bool write, u32 *val,
		     bool *raised)
{
	if (!slat_vgic_region_ok(v2_dist_regions, ARRAY_SIZE(v2_dist_regions), off, c->nr_irqs))
		return slat_vgic_user_raz_wi(write, val);
	if (write && off == GICD_IIDR)
		return *val == GIC_IIDR_SLAT ? 0 : -EINVAL;
	if (write && off == GICD_TYPER)
		return 0;
	if (write && (off == GICD_ISPENDR || off == GICD_ICPENDR))
		user_sgi_pend(v2_cpu(t), t->id, off == GICD_ISPENDR, *val, raised);
	if (write)
		slat_vgic_v2_dist_access(t, c, off, 4, true, *val, raised);
	else
		*val = (u32)slat_vgic_v2_dist_access(t, c, off, 4, false, 0, raised);
	return 0;
}

static long state_access(struct slat_vm *vm, struct slat_irqchip *c, struct slat_kvm_vcpu *t,
			 const struct kvm_device_attr *a, bool set)
{
	u32 __user *up = u64_to_user_ptr(a->addr);
	u32 off = a->attr & KVM_DEV_ARM_VGIC_OFFSET_MASK, val = 0;
	bool raised = false;
	u64 v64;
	int rc;

	if (set && get_user(val, up))
		return -EFAULT;
	WRITE_ONCE(c->ready, true); /* KVM initialises the VGIC here (vgic_init) */
	if (a->group == KVM_DEV_ARM_VGIC_GRP_CPU_REGS) {
		if (!slat_vgic_region_ok(v2_cpu_regions, ARRAY_SIZE(v2_cpu_regions), off, 0))
			rc = slat_vgic_user_raz_wi(set, &val);
		else {
			v64 = val;
			rc = slat_vgic_cpuif_access(t, gicc_access, off, &v64, set);
			val = (u32)v64;
		}
	} else {
		xa_lock(&vm->kvcpus);
		rc = user_dist(t, c, off, set, &val, &raised);
		if (raised)
			slat_vgic_kick_all(vm);
		xa_unlock(&vm->kvcpus);
	}
	if (!rc && !set)
		rc = put_user(val, up);
	return rc;
}

/*
 * KVM_GET/SET/HAS_DEVICE_ATTR of GRP_DIST_REGS and GRP_CPU_REGS: the vCPU
 * by its id in attribute bits 39:32 (none: -EINVAL, also for HAS), the
 * register by its offset in 31:0; HAS says -ENXIO where KVM has no register,
 * where GET reads 0 and SET does nothing.
 */
long slat_vgic_v2_state(struct slat_vm *vm, struct slat_irqchip *c, struct kvm_device_attr *a,
			unsigned int cmd)
{
	u32 off = a->attr & KVM_DEV_ARM_VGIC_OFFSET_MASK;
	bool cpu_regs = a->group == KVM_DEV_ARM_VGIC_GRP_CPU_REGS;
	struct slat_kvm_vcpu *t;

	t = xa_load(&vm->kvcpus, FIELD_GET(KVM_DEV_ARM_VGIC_CPUID_MASK, a->attr));
	if (!t)
		return -EINVAL;
	if (cmd != KVM_HAS_DEVICE_ATTR)
		return state_access(vm, c, t, a, cmd == KVM_SET_DEVICE_ATTR);
	if (cpu_regs)
		return slat_vgic_region_ok(v2_cpu_regions, ARRAY_SIZE(v2_cpu_regions), off, 0)
			   ? 0
			   : -ENXIO;
	return slat_vgic_region_ok(v2_dist_regions, ARRAY_SIZE(v2_dist_regions), off, c->nr_irqs)
		   ? 0
		   : -ENXIO;
}
