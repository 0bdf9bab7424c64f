// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the GICv3's save and restore (KVM's arm-vgic-v3.rst,
// as QEMU's migration uses it) and the VM's virtual counter: the register
// groups' attributes and their refusals, a pending SPI and a line level that
// survive a GET on one VM and a SET on another, the CPU interface's registers
// kept per vCPU, and KVM_REG_ARM_TIMER_CNT written on vCPU 0 and seen by
// vCPU 1 (its ONE_REG and the count its guest reads).
#include "kvmcheck_vgic.h"

#define ICC(op0, op1, crn, crm, op2)                                                               \
	((uint64_t)(op0) << 14 | (op1) << 11 | (crn) << 7 | (crm) << 3 | (op2))
#define A_PMR	  ICC(3, 0, 4, 6, 0)
#define A_AP0R(n) ICC(3, 0, 12, 8, 4 + (n))
#define A_CTLR	  ICC(3, 0, 12, 12, 4)
#define A_SRE	  ICC(3, 0, 12, 12, 5)
#define A_IGRPEN1 ICC(3, 0, 12, 12, 7)
#define A_IAR1	  ICC(3, 0, 12, 12, 0) // no such attribute (KVM: -ENXIO)
#define MPIDR_ID  (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM64_SYSREG | (3ull << 14) | 5)
#define SPI_EDGE  41u // SPI_INTID (40) stays level-triggered

static long attr(int dev, unsigned cmd, uint32_t group, uint64_t a, void *val)
{
	struct kvm_device_attr d = {.group = group, .attr = a, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(dev, cmd, &d);
}

static long dist(int dev, bool set, uint32_t off, uint32_t *val)
{
	return attr(dev, set ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
		    KVM_DEV_ARM_VGIC_GRP_DIST_REGS, off, val);
}

static uint64_t level_attr(uint64_t mpidr_field, uint32_t intid)
{
	return mpidr_field << 32 |
	       (uint64_t)VGIC_LEVEL_INFO_LINE_LEVEL << KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT |
	       intid;
}

static long level(int dev, bool set, uint32_t intid, uint32_t *val)
{
	return attr(dev, set ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
		    KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO, level_attr(0, intid), val);
}

// The attribute's affinity field of a vCPU (Aff3 in bits 31:24).
static uint64_t aff_field(int vcpu)
{
	uint64_t m = 0;

	one_reg(vcpu, MPIDR_ID, &m, false);
	return (m & 0xffffff) | (m >> 32 & 0xff) << 24;
}

static long icc(int dev, bool set, uint64_t aff, uint64_t reg, uint64_t *val)
{
	return attr(dev, set ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
		    KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, aff << 32 | reg, val);
}

static void no_code(uint8_t *mem)
{
	(void)mem;
}

// The attributes that exist and those that do not, as KVM answers them.
static void check_state_attrs(struct gic_vm *g)
{
	uint64_t aff1 = aff_field(g->vcpu[1]);
	uint32_t v = 0;

	expect("vgic state: HAS DIST_REGS GICD_CTLR (QEMU's migration test)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0, NULL), 0);
	expect("vgic state: HAS DIST_REGS at 0x2 (unaligned)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 2, NULL), ENXIO);
	expect("vgic state: HAS DIST_REGS at 0x1000 (no register)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x1000, NULL),
	       ENXIO);
	expect("vgic state: HAS DIST_REGS GICD_ISPENDR2 (INTIDs 64..95 of 96)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x208, NULL), 0);
	expect("vgic state: HAS DIST_REGS GICD_ISPENDR3 (INTIDs 96.. past the last)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x20c, NULL),
	       ENXIO);
	// GET and SET where HAS says -ENXIO: KVM reads 0 and ignores writes.
	v = 1;
	expect("vgic state: GET DIST_REGS GICD_ISPENDR3", dist(g->dev, false, 0x20c, &v), 0);
	check("vgic state: GICD_ISPENDR3 reads 0", v == 0, v, 0);
	expect("vgic state: HAS REDIST_REGS GICR_ISPENDR0 of vCPU 1",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
		    aff1 << 32 | 0x10200, NULL),
	       0);
	expect("vgic state: HAS REDIST_REGS of an affinity without a vCPU (Aff0 9)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
		    9ull << 32 | 0x10200, NULL),
	       EINVAL);
	v = 1;
	expect("vgic state: GET REDIST_REGS at 0x10040 (no register)",
	       attr(g->dev, KVM_GET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, 0x10040, &v), 0);
	check("vgic state: REDIST_REGS at 0x10040 reads 0", v == 0, v, 0);
	expect("vgic state: HAS CPU_SYSREGS ICC_PMR_EL1",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, A_PMR, NULL), 0);
	expect("vgic state: HAS CPU_SYSREGS ICC_IAR1_EL1 (not state)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, A_IAR1, NULL),
	       ENXIO);
	expect("vgic state: HAS LEVEL_INFO line level",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO, level_attr(0, 32),
		    NULL),
	       0);
	expect("vgic state: HAS LEVEL_INFO of another kind (1)",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO,
		    1ull << KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT, NULL),
	       ENXIO);
	expect("vgic state: GET LEVEL_INFO from INTID 33 (not a multiple of 32)",
	       level(g->dev, false, 33, &v), EINVAL);
	expect("vgic state: HAS CTRL SAVE_PENDING_TABLES",
	       attr(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
		    KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES, NULL),
	       0);
	expect("vgic state: SET CTRL SAVE_PENDING_TABLES (no ITS: nothing to save)",
	       attr(g->dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
		    KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES, NULL),
	       0);
}

// On `a`: SPI 40 level-triggered with its line high, SPI 41 edge-triggered
// and latched pending. Their state read there and written into `b`, as
// QEMU's save and load do (ICFGR, the line levels, then ISPENDR).
static void check_pending_round_trip(struct gic_vm *a, struct gic_vm *b)
{
	struct kvm_irq_level line = {
	    .irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT | SPI_INTID, .level = 1};
	uint32_t cfg = 1u << (2 * (SPI_EDGE - 32) + 1), pend = 1u << (SPI_EDGE - 32), v;
	uint32_t got_cfg = 0, got_pend = 0, got_lvl = 0;

	expect("vgic state: GICD_ICFGR2: SPI 41 edge", dist(a->dev, true, 0xc08, &cfg), 0);
	expect("vgic state: KVM_IRQ_LINE SPI 40 high", ioctl(a->vm, KVM_IRQ_LINE, &line), 0);
	expect("vgic state: GICD_ISPENDR1: SPI 41 pending", dist(a->dev, true, 0x204, &pend), 0);
	expect("vgic state: GET GICD_ICFGR2", dist(a->dev, false, 0xc08, &got_cfg), 0);
	expect("vgic state: GET LEVEL_INFO 32", level(a->dev, false, 32, &got_lvl), 0);
	expect("vgic state: GET GICD_ISPENDR1", dist(a->dev, false, 0x204, &got_pend), 0);
	check("vgic state: the line levels: SPI 40's alone", got_lvl == 1u << (SPI_INTID - 32),
	      got_lvl, 1u << (SPI_INTID - 32));
	check("vgic state: ISPENDR from user space: the latch alone (SPI 41, not 40's line)",
	      got_pend == pend, got_pend, pend);
	v = 1;
	expect("vgic state: GET GICD_ICPENDR1", dist(a->dev, false, 0x284, &v), 0);
	check("vgic state: ICPENDR from user space reads 0", v == 0, v, 0);

	expect("vgic state: SET GICD_ICFGR2 on the second VM", dist(b->dev, true, 0xc08, &got_cfg),
	       0);
	expect("vgic state: SET LEVEL_INFO 32 on the second VM", level(b->dev, true, 32, &got_lvl),
	       0);
	expect("vgic state: SET GICD_ISPENDR1 on the second VM",
	       dist(b->dev, true, 0x204, &got_pend), 0);
	v = 0;
	level(b->dev, false, 32, &v);
	check("vgic state: the second VM's line levels", v == got_lvl, v, got_lvl);
	v = 0;
	dist(b->dev, false, 0x204, &v);
	check("vgic state: the second VM's pending latches", v == got_pend, v, got_pend);
	v = 0;
	dist(b->dev, false, 0xc08, &v);
	check("vgic state: the second VM's ICFGR2", v == got_cfg, v, got_cfg);
	// A user ISPENDR write sets every latch to its bit: 0 clears.
	v = 0;
	expect("vgic state: SET GICD_ISPENDR1 0", dist(b->dev, true, 0x204, &v), 0);
	v = 1;
	dist(b->dev, false, 0x204, &v);
	check("vgic state: ISPENDR 0 from user space clears the latch", v == 0, v, 0);
}

// The CPU interface is per vCPU: PMR and IGRPEN1 set on vCPU 1 read back
// there and not on vCPU 0; ICC_CTLR_EL1 takes its own value back and refuses
// more priority bits than the CPU has; SRE stays on.
static void check_icc(struct gic_vm *g)
{
	uint64_t a0 = aff_field(g->vcpu[0]), a1 = aff_field(g->vcpu[1]), v, ctlr = 0;

	v = 0xf0;
	expect("vgic state: SET ICC_PMR_EL1 0xf0 on vCPU 1", icc(g->dev, true, a1, A_PMR, &v), 0);
	v = 1;
	expect("vgic state: SET ICC_IGRPEN1_EL1 1 on vCPU 1", icc(g->dev, true, a1, A_IGRPEN1, &v),
	       0);
	v = 0;
	expect("vgic state: GET ICC_PMR_EL1 of vCPU 1", icc(g->dev, false, a1, A_PMR, &v), 0);
	check("vgic state: vCPU 1's ICC_PMR_EL1", v == 0xf0, v, 0xf0);
	v = 0;
	icc(g->dev, false, a1, A_IGRPEN1, &v);
	check("vgic state: vCPU 1's ICC_IGRPEN1_EL1", v == 1, v, 1);
	v = 1;
	expect("vgic state: GET ICC_PMR_EL1 of vCPU 0", icc(g->dev, false, a0, A_PMR, &v), 0);
	check("vgic state: vCPU 0's ICC_PMR_EL1 stays 0", v == 0, v, 0);
	expect("vgic state: GET ICC_CTLR_EL1", icc(g->dev, false, a1, A_CTLR, &ctlr), 0);
	v = ctlr | 2; // EOImode
	expect("vgic state: SET ICC_CTLR_EL1 with EOImode", icc(g->dev, true, a1, A_CTLR, &v), 0);
	v = 0;
	icc(g->dev, false, a1, A_CTLR, &v);
	check("vgic state: ICC_CTLR_EL1 EOImode kept", v == (ctlr | 2), v, ctlr | 2);
	if (((ctlr >> 8) & 7) < 6) {
		v = ctlr | 7u << 8;
		expect("vgic state: SET ICC_CTLR_EL1 with 8 priority bits (more than the CPU)",
		       icc(g->dev, true, a1, A_CTLR, &v), EINVAL);
		expect("vgic state: GET ICC_AP0R3_EL1 (past the CPU's priority bits)",
		       icc(g->dev, false, a1, A_AP0R(3), &v), EINVAL);
	}
	v = 0;
	expect("vgic state: SET ICC_SRE_EL1 0", icc(g->dev, true, a1, A_SRE, &v), EINVAL);
	expect("vgic state: GET CPU_SYSREGS of an affinity without a vCPU",
	       icc(g->dev, false, 9, A_PMR, &v), EINVAL);
}

static uint64_t host_count(void)
{
	uint64_t v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static uint64_t host_freq(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}

// KVM_REG_ARM_TIMER_CNT set on vCPU 0 moves the VM's counter: vCPU 1 reads
// it through ONE_REG, and its guest reads it with MRS CNTVCT_EL0 (told by an
// MMIO write), both within 60 s of the value set.
static void check_timer_cnt(struct gic_vm *g)
{
	const uint64_t cnt = 1ull << 44, slack = 60 * host_freq();
	struct code c = {(uint32_t *)g->mem, 0};
	uint64_t v = cnt, pc = CODE_GPA;

	emit(&c, ISB);
	emit(&c, MRS(1, CNTVCT_EL0));
	mov64(&c, 2, MMIO_GPA);
	emit(&c, STR_X(1, 2, 0));
	emit(&c, 0x14000000u); // b .
	if (host_count() > cnt - slack) {
		say("vgic state: the host's count is past 2^44; timer check skipped");
		return;
	}
	expect("vgic state: SET TIMER_CNT 2^44 on vCPU 0",
	       one_reg(g->vcpu[0], KVM_REG_ARM_TIMER_CNT, &v, true), 0);
	v = 0;
	expect("vgic state: GET TIMER_CNT on vCPU 1",
	       one_reg(g->vcpu[1], KVM_REG_ARM_TIMER_CNT, &v, false), 0);
	check("vgic state: vCPU 1's TIMER_CNT follows vCPU 0's write", v >= cnt && v - cnt < slack,
	      v, cnt);
	one_reg(g->vcpu[1], CORE(regs.pc), &pc, true);
	v = 0;
	long r = ioctl(g->vcpu[1], KVM_RUN, 0);
	bool told = r == 0 && mmio_write_exit(g->run[1], MMIO_GPA, &v);
	check("vgic state: vCPU 1's guest tells its CNTVCT_EL0", told, r, 0);
	check("vgic state: vCPU 1's guest counts from 2^44", told && v >= cnt && v - cnt < slack, v,
	      cnt);
}

void check_vgic_state(int kvm)
{
	struct gic_vm a, b;

	if (!gic_vm_make(kvm, &a, 2, no_code, false) || !gic_vm_make(kvm, &b, 2, no_code, false)) {
		check("vgic state: two 2-vCPU GIC VMs", false, errno, 0);
		return;
	}
	check_state_attrs(&a);
	check_pending_round_trip(&a, &b);
	check_icc(&a);
	check_timer_cnt(&b);
	gic_vm_free(&a, 2);
	gic_vm_free(&b, 2);
}
