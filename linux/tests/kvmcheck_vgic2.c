// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the in-kernel GICv2 section (over kvmcheck_vgic.h).
#include "kvmcheck_vgic.h"

// ---- the in-kernel GICv2 (KVM_DEV_TYPE_ARM_VGIC_V2) -----------------------------
// On a GICv2 machine (no GICv3 to offer): the device's attributes and
// refusals, then the GICv3 section's guests in their GICv2 form: the
// distributor with banked SGI/PPI registers, GICD_ITARGETSR and GICD_SGIR,
// the memory-mapped CPU interface (on Slat served by Slat on GICV, ABI 1.7).
// The SGI between vCPUs goes from vCPU 1 to vCPU 0, so that its source (1)
// shows in vCPU 0's GICC_IAR.

void check_vgic2_device(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};
	struct kvm_run *run;
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0), vcpu[9];

	expect("vgic2: KVM_CREATE_DEVICE VGIC_V3 on a GICv2 machine",
	       ioctl(vm, KVM_CREATE_DEVICE, &cd), ENODEV);
	int dev = gic2_create(vm);
	expect("vgic2: KVM_CREATE_DEVICE VGIC_V2", dev, 0);
	cd.type = KVM_DEV_TYPE_ARM_VGIC_V2;
	expect("vgic2: a second VGIC_V2 on the VM", ioctl(vm, KVM_CREATE_DEVICE, &cd), EEXIST);
	expect("vgic2: DIST address 0x08000800 (not 4 KiB aligned)",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA + 0x800), EINVAL);
	expect("vgic2: DIST address 0x08000000",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA), 0);
	expect("vgic2: DIST address set twice",
	       gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_DIST, GICD_GPA + 0x1000), EEXIST);
	expect("vgic2: the GICv3 REDIST address type",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICR_GPA), ENXIO);
	expect("vgic2: CPU address 0x08010000", gic_addr(dev, KVM_VGIC_V2_ADDR_TYPE_CPU, GICC_GPA),
	       0);
	expect("vgic2: NR_IRQS 96", gic_nr_irqs(dev, GIC_NR_IRQS), 0);
	// GICv2 has 8 CPU interfaces: the ninth vCPU is refused.
	for (int i = 0; i < 8; i++)
		vcpu[i] = psci_vcpu(vm, i, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	check("vgic2: 8 vCPUs", vcpu[7] >= 0, vcpu[7], 0);
	expect("vgic2: a ninth vCPU", ioctl(vm, KVM_CREATE_VCPU, 8), EINVAL);
	expect("vgic2: CTRL_INIT", gic_init(dev), 0);
	for (int i = 0; i < 8; i++)
		if (vcpu[i] >= 0)
			close(vcpu[i]);
	close(dev);
	close(vm);
}

// One vCPU's side of the GICv2: VBAR_EL1, x19 its results, x23 the CPU
// interface, GICD_CTLR Enable, `enable` in its banked GICD_ISENABLER0,
// GICC_PMR 0xff, GICC_CTLR Enable (group 0, the only one a GICv2 guest
// without security has).
static void gic2_up(struct code *c, uint64_t res, uint32_t enable)
{
	mov64(c, 19, res);
	mov64(c, 23, GICC_GPA);
	mov64(c, 0, VEC_GPA);
	emit(c, MSR(VBAR_EL1, 0));
	emit(c, ISB);
	w32(c, GICD_GPA + 0x0, 1);	  // GICD_CTLR
	w32(c, GICD_GPA + 0x100, enable); // GICD_ISENABLER0 (this vCPU's)
	w32(c, GICC_GPA + 0x4, 0xff);	  // GICC_PMR
	w32(c, GICC_GPA + 0x0, 1);	  // GICC_CTLR
	emit(c, ISB);
}

// GICD_SGIR = val (TargetListFilter 25:24, CPUTargetList 23:16, INTID 3:0).
static void sgir(struct code *c, uint32_t val)
{
	w32(c, GICD_GPA + 0xf00, val);
	emit(c, DSB_SY);
}

// The GICv3 section's 1-vCPU guest in GICv2 form.
static void write_gic2_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors_for(mem, true);
	gic2_up(&c, GRES_GPA, 1u << VTIMER_INTID | 1u << SGI_SELF);
	w32(&c, GICD_GPA + 0x800 + SPI_INTID, 1);	   // GICD_ITARGETSR10: SPI 40 to CPU 0
	w32(&c, GICD_GPA + 0x104, 1u << (SPI_INTID - 32)); // GICD_ISENABLER1
	sgir(&c, 2u << 24 | SGI_SELF);			   // to itself (filter 2)
	guest_sgi_spi_timer(&c);
	mov64(&c, 1, GICD_GPA + 0x800); // GICD_ITARGETSR0: SGIs 0-3, this CPU's bit
	emit(&c, LDR_W(0, 1, 0));
	gres(&c, 0, GR_RTYPER);
	grace(&c);
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
	emit(&c, 0x14000000u);
	fits(&c, VEC_GPA);
}

// vCPU 0 (the waiter) enables SGI 5, says "ready" (MMIO_GPA + 0x10, 1),
// waits, says "got" (2); vCPU 1 (at ENTRY1) sends SGI 5 to CPU 0 through
// GICD_SGIR's target list and says "sent" (MMIO_GPA, 5).
static void write_sgi2_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors_for(mem, true);
	gic2_up(&c, GRES_GPA, 1u << SGI_OTHER);
	tell(&c, MMIO_GPA + 0x10, 1);
	wait_irqs(&c, 1, 0);
	grace(&c);
	tell(&c, MMIO_GPA + 0x10, 2);
	emit(&c, 0x14000000u);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	gic2_up(&c1, GRES_GPA + GRES1_OFF, 0);
	sgir(&c1, 1u << 16 | SGI_OTHER); // filter 0, CPU 0
	grace(&c1);
	tell(&c1, MMIO_GPA, SGI_OTHER);
	emit(&c1, 0x14000000u);
	fits(&c, ENTRY1);
	fits(&c1, VEC_GPA - ENTRY1);
}

void check_vgic2_guest(int kvm)
{
	struct gic_vm g;

	if (!gic_vm_make(kvm, &g, 1, write_gic2_guest, true)) {
		check("vgic2: 1-vCPU VM with the GIC set up", false, errno, 0);
		return;
	}
	run_gic_guest(&g, "vgic2");
	check("vgic2: first GICC_IAR: SGI 3 from CPU 0 (GICD_SGIR to itself)",
	      gr(&g, GR_INTIDS) == SGI_SELF, gr(&g, GR_INTIDS), SGI_SELF);
	check("vgic2: second GICC_IAR: SPI 40 (KVM_IRQ_LINE)", gr(&g, GR_INTIDS + 8) == SPI_INTID,
	      gr(&g, GR_INTIDS + 8), SPI_INTID);
	check("vgic2: third GICC_IAR: PPI 27 (the virtual timer)",
	      gr(&g, GR_INTIDS + 16) == VTIMER_INTID, gr(&g, GR_INTIDS + 16), VTIMER_INTID);
	uint64_t v = gr(&g, GR_TYPER);
	check("vgic2: GICD_TYPER ITLinesNumber 2 (96 IRQs), CPUNumber 0 (1 vCPU)", (v & 0xff) == 2,
	      v & 0xff, 2);
	v = gr(&g, GR_RTYPER) & 0xffffffff;
	check("vgic2: GICD_ITARGETSR0 reads this CPU's bit for SGIs 0-3", v == 0x01010101, v,
	      0x01010101);
	gic_vm_free(&g, 1);
}

void check_vgic2_sgi(int kvm)
{
	struct gic_vm g;
	struct sgi_waiter w;
	pthread_t t;

	if (!sgi_vm_make(kvm, &g, write_sgi2_guest, true, "vgic2"))
		return;
	alarm(60);
	check("vgic2: vCPU 0 enables SGI 5",
	      run_to_tell(g.vcpu[0], g.run[0], g.mem, GRES_GPA, MMIO_GPA + 0x10, 1),
	      g.run[0]->exit_reason, KVM_EXIT_MMIO);
	w = (struct sgi_waiter){g.vcpu[0], g.run[0], g.mem, false, GRES_GPA};
	pthread_create(&t, NULL, sgi_waiter_run, &w);
	struct timespec ts = {0, 100 * 1000 * 1000}; // vCPU 0 is in its WFI by then
	nanosleep(&ts, NULL);
	check("vgic2: vCPU 1 sends SGI 5 to CPU 0 (GICD_SGIR target list)",
	      run_to_tell(g.vcpu[1], g.run[1], g.mem, GRES_GPA + GRES1_OFF, MMIO_GPA, SGI_OTHER),
	      g.run[1]->exit_reason, KVM_EXIT_MMIO);
	int joined = join_waiter(t);
	alarm(0);
	uint64_t n0 = gr(&g, GR_COUNT), iar = gr(&g, GR_INTIDS);
	check("vgic2: vCPU 0 woken from WFI by the SGI", joined == 0 && w.got, n0, 1);
	check("vgic2: vCPU 0 took exactly 1 interrupt", n0 == 1, n0, 1);
	check("vgic2: ... GICC_IAR 0x405: SGI 5 from CPU 1", iar == (1u << 10 | SGI_OTHER), iar,
	      1u << 10 | SGI_OTHER);
	check("vgic2: vCPU 1 took none", gr(&g, GRES1_OFF + GR_COUNT) == 0,
	      gr(&g, GRES1_OFF + GR_COUNT), 0);
	if (joined == 0)
		gic_vm_free(&g, 2);
}

// ---- save and restore: GRP_DIST_REGS / GRP_CPU_REGS (KVM's arm-vgic.rst) -------
// What QEMU's kvm-arm-gic writes at every machine reset and reads and
// writes on migration: the vCPU id in attribute bits 39:32, the register's
// offset in 31:0; the distributor's private registers banked per vCPU, the
// CPU interface's (GICC_PMR as GICH_VMCR's 5-bit VMPriMask) per vCPU.
#define GR2_PMR	    0x130u // the guest's GICC_PMR, GICC_BPR and GICC_CTLR
#define GR2_BPR	    0x138u
#define GR2_CTLR    0x140u
#define V2_CPUID(n) ((uint64_t)(n) << KVM_DEV_ARM_VGIC_CPUID_SHIFT)

static long attr2(int dev, unsigned cmd, uint32_t group, uint64_t a, uint32_t *val)
{
	struct kvm_device_attr d = {.group = group, .attr = a, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(dev, cmd, &d);
}

static long dist2(int dev, bool set, unsigned cpu, uint32_t off, uint32_t *val)
{
	return attr2(dev, set ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
		     KVM_DEV_ARM_VGIC_GRP_DIST_REGS, V2_CPUID(cpu) | off, val);
}

static long cpu2(int dev, bool set, unsigned cpu, uint32_t off, uint32_t *val)
{
	return attr2(dev, set ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
		     KVM_DEV_ARM_VGIC_GRP_CPU_REGS, V2_CPUID(cpu) | off, val);
}

// vCPU 0 reads its GICC_PMR, GICC_BPR and GICC_CTLR (as the VMM set them),
// writes GICC_PMR 0xa8 and says so (MMIO_GPA, 7).
static void write_gicc_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};
	static const unsigned regs[][2] = {{0x4, GR2_PMR}, {0x8, GR2_BPR}, {0x0, GR2_CTLR}};

	mov64(&c, 19, GRES_GPA);
	for (unsigned i = 0; i < 3; i++) {
		mov64(&c, 1, GICC_GPA + regs[i][0]);
		emit(&c, LDR_W(0, 1, 0));
		gres(&c, 0, regs[i][1]);
	}
	w32(&c, GICC_GPA + 0x4, 0xa8);
	emit(&c, DSB_SY);
	tell(&c, MMIO_GPA, 7);
	emit(&c, 0x14000000u);
	fits(&c, VEC_GPA);
}

static void check_v2_attrs(struct gic_vm *g)
{
	uint32_t v = 1;

	expect("vgic2 state: HAS DIST_REGS GICD_CTLR of vCPU 0",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0, NULL), 0);
	expect("vgic2 state: HAS DIST_REGS GICD_SPENDSGIR3 of vCPU 1",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS,
		     V2_CPUID(1) | 0xf2c, NULL),
	       0);
	expect(
	    "vgic2 state: HAS DIST_REGS of vCPU 9 (none)",
	    attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, V2_CPUID(9), NULL),
	    EINVAL);
	expect("vgic2 state: HAS DIST_REGS GICD_ISPENDR3 (INTIDs 96.. past the last)",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x20c, NULL),
	       ENXIO);
	expect("vgic2 state: HAS DIST_REGS GICD_ICPIDR2 (not KVM's)",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0xfe8, NULL),
	       ENXIO);
	expect("vgic2 state: GET DIST_REGS GICD_ICPIDR2", dist2(g->dev, false, 0, 0xfe8, &v), 0);
	check("vgic2 state: ... reads 0", v == 0, v, 0);
	expect("vgic2 state: HAS CPU_REGS GICC_APR3 of vCPU 1",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CPU_REGS, V2_CPUID(1) | 0xdc,
		     NULL),
	       0);
	expect("vgic2 state: HAS CPU_REGS GICC_IAR (not state)",
	       attr2(g->dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CPU_REGS, 0xc, NULL), ENXIO);
	expect("vgic2 state: GET CPU_REGS of vCPU 2 (none)", cpu2(g->dev, false, 2, 0x4, &v),
	       EINVAL);
	expect("vgic2 state: GET GICD_TYPER", dist2(g->dev, false, 0, 0x4, &v), 0);
	check("vgic2 state: GICD_TYPER 0x22 (96 IRQs, 2 CPU interfaces: QEMU checks both)",
	      v == 0x22, v, 0x22);
	expect("vgic2 state: GET GICD_IIDR", dist2(g->dev, false, 0, 0x8, &v), 0);
	expect("vgic2 state: SET GICD_IIDR to its own value", dist2(g->dev, true, 0, 0x8, &v), 0);
	v ^= 0x1000000;
	expect("vgic2 state: SET GICD_IIDR to another product", dist2(g->dev, true, 0, 0x8, &v),
	       EINVAL);
}

// The distributor: banked enables, an SGI's sources, shared targets.
static void check_v2_dist(struct gic_vm *g)
{
	uint32_t v = 1u << VTIMER_INTID, src = 0x02u << 8; // SGI 5 from CPU 1

	expect("vgic2 state: SET GICD_ISENABLER0 of vCPU 1 (PPI 27)",
	       dist2(g->dev, true, 1, 0x100, &v), 0);
	expect("vgic2 state: GET GICD_ISENABLER0 of vCPU 1", dist2(g->dev, false, 1, 0x100, &v), 0);
	check("vgic2 state: ... SGIs and PPI 27 enabled", v == (0xffffu | 1u << VTIMER_INTID), v,
	      0xffffu | 1u << VTIMER_INTID);
	expect("vgic2 state: GET GICD_ISENABLER0 of vCPU 0", dist2(g->dev, false, 0, 0x100, &v), 0);
	check("vgic2 state: ... its SGIs only (banked)", v == 0xffff, v, 0xffff);
	expect("vgic2 state: SET GICD_SPENDSGIR1 of vCPU 0: SGI 5 from CPU 1",
	       dist2(g->dev, true, 0, 0xf24, &src), 0);
	expect("vgic2 state: GET GICD_CPENDSGIR1 of vCPU 0", dist2(g->dev, false, 0, 0xf14, &v), 0);
	check("vgic2 state: ... SGI 5's source CPU 1", v == src, v, src);
	expect("vgic2 state: GET GICD_ISPENDR0 of vCPU 0", dist2(g->dev, false, 0, 0x200, &v), 0);
	check("vgic2 state: ... SGI 5 pending", v == 1u << SGI_OTHER, v, 1u << SGI_OTHER);
	expect("vgic2 state: GET GICD_SPENDSGIR1 of vCPU 1", dist2(g->dev, false, 1, 0xf24, &v), 0);
	check("vgic2 state: ... none (banked)", v == 0, v, 0);
	v = 1u << SGI_OTHER;
	expect("vgic2 state: SET GICD_ICPENDR0 of vCPU 0 (SGI 5)",
	       dist2(g->dev, true, 0, 0x280, &v), 0);
	expect("vgic2 state: GET GICD_SPENDSGIR1 of vCPU 0", dist2(g->dev, false, 0, 0xf24, &v), 0);
	check("vgic2 state: ... every source dropped, as KVM", v == 0, v, 0);
	v = 0x02; // SPI 40 to CPU 1
	expect("vgic2 state: SET GICD_ITARGETSR10 (SPI 40 to CPU 1)",
	       dist2(g->dev, true, 0, 0x800 + SPI_INTID, &v), 0);
	expect("vgic2 state: GET GICD_ITARGETSR10 through vCPU 1",
	       dist2(g->dev, false, 1, 0x800 + SPI_INTID, &v), 0);
	check("vgic2 state: ... CPU 1's bit", v == 0x02, v, 0x02);
	expect("vgic2 state: GET GICD_ITARGETSR0 of vCPU 1", dist2(g->dev, false, 1, 0x800, &v), 0);
	check("vgic2 state: ... CPU 1's bit for SGIs 0-3", v == 0x02020202, v, 0x02020202);
}

// The CPU interface: set before the run, seen by the guest; the guest's
// GICC_PMR read back after it.
static void check_v2_cpuif(struct gic_vm *g)
{
	uint32_t pmr = 0x1e, bpr = 3, ctlr = 1, v = 0;
	uint64_t pc = CODE_GPA;

	expect("vgic2 state: SET GICC_PMR of vCPU 0 (VMPriMask 0x1e)",
	       cpu2(g->dev, true, 0, 0x4, &pmr), 0);
	expect("vgic2 state: SET GICC_BPR of vCPU 0", cpu2(g->dev, true, 0, 0x8, &bpr), 0);
	expect("vgic2 state: SET GICC_CTLR of vCPU 0 (EnableGrp0)",
	       cpu2(g->dev, true, 0, 0x0, &ctlr), 0);
	expect("vgic2 state: GET GICC_PMR of vCPU 1", cpu2(g->dev, false, 1, 0x4, &v), 0);
	check("vgic2 state: ... 0 (per vCPU)", v == 0, v, 0);
	expect("vgic2 state: GET GICC_IIDR of vCPU 0", cpu2(g->dev, false, 0, 0xfc, &v), 0);
	check("vgic2 state: ... architecture version 2", (v >> 16 & 0xf) == 2, v >> 16 & 0xf, 2);
	one_reg(g->vcpu[0], CORE(regs.pc), &pc, true);
	alarm(60);
	check("vgic2 state: the guest reads its CPU interface",
	      run_to_tell(g->vcpu[0], g->run[0], g->mem, GRES_GPA, MMIO_GPA, 7),
	      g->run[0]->exit_reason, KVM_EXIT_MMIO);
	alarm(0);
	check("vgic2 state: the guest's GICC_PMR 0xf0", gr(g, GR2_PMR) == 0xf0, gr(g, GR2_PMR),
	      0xf0);
	check("vgic2 state: the guest's GICC_BPR 3", gr(g, GR2_BPR) == 3, gr(g, GR2_BPR), 3);
	check("vgic2 state: the guest's GICC_CTLR 1", gr(g, GR2_CTLR) == 1, gr(g, GR2_CTLR), 1);
	expect("vgic2 state: GET GICC_PMR of vCPU 0 after the guest's 0xa8",
	       cpu2(g->dev, false, 0, 0x4, &v), 0);
	check("vgic2 state: ... 0x15 (0xa8 >> 3)", v == 0x15, v, 0x15);
}

void check_vgic2_state(int kvm)
{
	struct gic_vm g;

	if (!gic_vm_make(kvm, &g, 2, write_gicc_guest, true)) {
		check("vgic2 state: 2-vCPU VM with the GIC set up", false, errno, 0);
		return;
	}
	check_v2_attrs(&g);
	check_v2_dist(&g);
	check_v2_cpuif(&g);
	gic_vm_free(&g, 2);
}
