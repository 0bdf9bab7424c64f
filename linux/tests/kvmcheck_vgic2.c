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
