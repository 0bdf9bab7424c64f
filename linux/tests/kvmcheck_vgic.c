// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the in-kernel GICv3 section (and check_vgic, which
// runs it, or the GICv2 one of kvmcheck_vgic2.c on a machine without a GICv3).
#define _GNU_SOURCE // pthread_timedjoin_np
#include "kvmcheck_vgic.h"

// ---- the in-kernel GICv3 (KVM_DEV_TYPE_ARM_VGIC_V3) ------------------------------
// The device's attributes and refusals; then a 1-vCPU guest that brings the
// GIC up itself (distributor, its redistributor, the CPU interface) and takes
// SGI 3 (its own ICC_SGI1R_EL1), SPI 40 (the VMM's KVM_IRQ_LINE while it waits
// in WFI) and PPI 27 (its virtual timer), each exactly once and in that
// order, and reports GICD_TYPER, GICD_PIDR2 and GICR_TYPER; then SGI 5 from
// vCPU 0 to vCPU 1 waiting in WFI. The guest's IRQ handler acknowledges
// (ICC_IAR1_EL1), records the INTID, masks the timer when it is 27, ends the
// interrupt (ICC_EOIR1_EL1) and returns with IRQs masked, so a line still
// high is not taken twice: the guest's wait loop unmasks them only around
// its WFI. Every guest wait is bounded by a count, every KVM_RUN by alarm().

// The code must end before what follows it in the guest's memory.
void fits(const struct code *c, unsigned bytes)
{
	if (c->n * 4 > bytes) {
		say("vgic: guest code of %u bytes does not fit in %u", c->n * 4, bytes);
		abort();
	}
}

// *(u32 *)addr = val, through x1 and x2.
void w32(struct code *c, uint64_t addr, uint64_t val)
{
	mov64(c, 1, addr);
	mov64(c, 2, val);
	emit(c, STR_W(2, 1, 0));
}

// The guest's result `off` (x19 + off) = x<rt>.
void gres(struct code *c, unsigned rt, unsigned off)
{
	emit(c, STR_X(rt, 19, off));
}

// An MMIO write of `val` to `gpa`: the VMM's exit.
void tell(struct code *c, uint64_t gpa, uint64_t val)
{
	mov64(c, 1, gpa);
	mov64(c, 2, val);
	emit(c, STR_X(2, 1, 0));
}

// Waits until the guest has taken `want` interrupts: IRQs masked, the count
// checked, WFI (woken by a pending interrupt even while masked), IRQs
// unmasked (the interrupt is taken), again; at most 1000 times, then the
// wait's bit in GR_WAIT_TO. Leaves IRQs masked.
void wait_irqs(struct code *c, unsigned want, unsigned bit)
{
	mov64(c, 9, 1000);
	unsigned loop = c->n;
	emit(c, DAIFSET_I);
	emit(c, LDR_X(10, 19, GR_COUNT));
	emit(c, CMP_X(10, want));
	unsigned done = fwd(c);
	emit(c, SUBS_XI(9, 9, 1));
	unsigned gave_up = fwd(c);
	emit(c, WFI);
	emit(c, DAIFCLR_I);
	emit(c, ISB);
	emit(c, b_back(c, loop));
	land_bcond(c, gave_up, COND_EQ);
	emit(c, LDR_X(10, 19, GR_WAIT_TO));
	mov64(c, 11, 1u << bit);
	emit(c, ORR_XR(10, 10, 11));
	gres(c, 10, GR_WAIT_TO);
	land_bcond(c, done, COND_HS);
}

// IRQs unmasked for a while (a spin of 20000): an interrupt that should not
// be pending any more would be taken here and counted.
void grace(struct code *c)
{
	mov64(c, 9, 20000);
	emit(c, DAIFCLR_I);
	emit(c, ISB);
	unsigned loop = c->n;
	emit(c, SUBS_XI(9, 9, 1));
	emit(c, bne_back(c, loop));
	emit(c, DAIFSET_I);
}

// The vector table at VEC_GPA: the IRQ entry of the current EL with SP_ELx
// (+0x280) is the handler; every other entry reports its offset (an MMIO
// write to MMIO_BAD) after storing ESR_EL1 and ELR_EL1. GICv3 acknowledges
// and ends through ICC_IAR1_EL1 / ICC_EOIR1_EL1; GICv2 (`v2`) through its
// CPU interface's GICC_IAR / GICC_EOIR, x23 its base. The INTIDs recorded
// are the acknowledge's whole value (GICv2: an SGI's source CPU in 12:10).
void write_vectors_for(uint8_t *mem, bool v2)
{
	for (unsigned v = 0; v < 16; v++) {
		struct code c = {(uint32_t *)(mem + VEC_GPA + v * 0x80), 0};

		if (v == 5) { // 0x280
			emit(&c, v2 ? LDR_W(20, 23, GICC_IAR) : MRS(20, ICC_IAR1_EL1));
			emit(&c, CMP_X(20, 1023));
			unsigned real = fwd(&c);
			emit(&c, LDR_X(21, 19, GR_SPURIOUS)); // spurious: no EOI
			emit(&c, ADD_XI(21, 21, 1));
			emit(&c, STR_X(21, 19, GR_SPURIOUS));
			emit(&c, ERET);
			land_bcond(&c, real, COND_NE);
			emit(&c, CMP_X(20, VTIMER_INTID));
			unsigned not_timer = fwd(&c);
			emit(&c, movz(21, 3, 0)); // CNTV_CTL: ENABLE | IMASK
			emit(&c, MSR(CNTV_CTL_EL0, 21));
			emit(&c, ISB);
			land_bcond(&c, not_timer, COND_NE);
			emit(&c, LDR_X(21, 19, GR_COUNT));
			emit(&c, CMP_X(21, 16));
			unsigned full = fwd(&c);
			emit(&c, ADD_XR(22, 19, 21, 3));
			emit(&c, STR_X(20, 22, GR_INTIDS));
			land_bcond(&c, full, COND_HS);
			emit(&c, ADD_XI(21, 21, 1));
			emit(&c, STR_X(21, 19, GR_COUNT));
			emit(&c, v2 ? STR_W(20, 23, GICC_EOIR) : MSR(ICC_EOIR1_EL1, 20));
			emit(&c, MRS(21, SPSR_EL1)); // return with IRQs masked
			emit(&c, movz(22, 0x80, 0));
			emit(&c, ORR_XR(21, 21, 22));
			emit(&c, MSR(SPSR_EL1, 21));
			emit(&c, ERET);
			continue;
		}
		emit(&c, MRS(20, ESR_EL1));
		emit(&c, STR_X(20, 19, GR_BAD));
		emit(&c, MRS(20, ELR_EL1));
		emit(&c, STR_X(20, 19, GR_BAD + 8));
		mov64(&c, 21, MMIO_BAD);
		mov64(&c, 20, v * 0x80);
		emit(&c, STR_X(20, 21, 0));
		emit(&c, 0x14000000u); // b .
	}
}

static void write_vectors(uint8_t *mem)
{
	write_vectors_for(mem, false);
}

// One vCPU's side of the GIC: VBAR_EL1, GICD_CTLR = ARE | EnableGrp1, its
// redistributor awake (GICR_WAKER.ProcessorSleep cleared, ChildrenAsleep
// polled at most 100000 times), group 1 for its SGIs and PPIs, `enable` in
// GICR_ISENABLER0, ICC_SRE_EL1 read (GR_SRE), ICC_PMR_EL1 0xff and
// ICC_IGRPEN1_EL1 1. x19 = its results.
static void gic_up(struct code *c, unsigned vcpu, uint64_t res, uint32_t enable)
{
	uint64_t rd = GICR_GPA + vcpu * GICR_STRIDE, sgi = rd + 0x10000;

	mov64(c, 19, res);
	mov64(c, 0, VEC_GPA);
	emit(c, MSR(VBAR_EL1, 0));
	emit(c, ISB);
	w32(c, GICD_GPA + 0x0, 0x12); // GICD_CTLR
	w32(c, rd + 0x14, 0);	      // GICR_WAKER
	mov64(c, 9, 100000);
	unsigned poll = c->n;
	emit(c, LDR_W(10, 1, 0));
	unsigned awake = fwd(c);
	emit(c, SUBS_XI(9, 9, 1));
	emit(c, bne_back(c, poll));
	emit(c, movz(10, 1, 0));
	gres(c, 10, GR_WAKER_TO);
	land_tbz(c, awake, 10, 2);
	w32(c, sgi + 0x80, 0xffffffff); // GICR_IGROUPR0
	w32(c, sgi + 0x100, enable);	// GICR_ISENABLER0
	emit(c, MRS(0, ICC_SRE_EL1));
	gres(c, 0, GR_SRE);
	emit(c, movz(0, 0xff, 0));
	emit(c, MSR(ICC_PMR_EL1, 0));
	emit(c, movz(0, 1, 0));
	emit(c, MSR(ICC_IGRPEN1_EL1, 0));
	emit(c, ISB);
}

static void sgi1r(struct code *c, uint64_t val)
{
	mov64(c, 0, val);
	emit(c, MSR(ICC_SGI1R_EL1, 0));
	emit(c, ISB);
}

// After the guest's SGI 3 to itself, alike on both GICs: (a) it waits for
// it, (b) says "ready" (MMIO 1) for the VMM's SPI 40, waits for it, says
// "seen" (2), (c) arms its virtual timer and waits for PPI 27; then keeps
// GICD_TYPER.
void guest_sgi_spi_timer(struct code *c)
{
	wait_irqs(c, 1, 0);
	tell(c, MMIO_GPA, 1);
	wait_irqs(c, 2, 1);
	tell(c, MMIO_GPA, 2);
	emit(c, MRS(0, CNTVCT_EL0));
	mov64(c, 1, 0x10000);
	emit(c, ADD_XR(0, 0, 1, 0));
	emit(c, MSR(CNTV_CVAL_EL0, 0));
	emit(c, movz(0, 1, 0)); // ENABLE
	emit(c, MSR(CNTV_CTL_EL0, 0));
	emit(c, ISB);
	wait_irqs(c, 3, 2);
	mov64(c, 1, GICD_GPA);
	emit(c, LDR_W(0, 1, 0x4)); // GICD_TYPER
	gres(c, 0, GR_TYPER);
}

// The 1-vCPU guest: (a) SGI 3 to itself, (b) SPI 40 from the VMM (MMIO
// "ready" 1 before its wait, "seen" 2 after), (c) its virtual timer, (d) the
// ID registers; a grace period with IRQs unmasked; PSCI SYSTEM_OFF.
static void write_gic_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors(mem);
	gic_up(&c, 0, GRES_GPA, 1u << VTIMER_INTID | 1u << SGI_SELF);
	w32(&c, GICD_GPA + 0x84, 0xffffffff);		   // GICD_IGROUPR1: SPIs 32..63 group 1
	mov64(&c, 1, GICD_GPA + 0x6000 + 8 * SPI_INTID);   // GICD_IROUTER40: Aff 0.0.0.0
	emit(&c, STR_X(31, 1, 0));			   // (xzr)
	w32(&c, GICD_GPA + 0x104, 1u << (SPI_INTID - 32)); // GICD_ISENABLER1
	// (a)
	sgi1r(&c, (uint64_t)SGI_SELF << 24 | 1); // TargetList bit 0, Aff3.2.1 = 0
	guest_sgi_spi_timer(&c);
	// (d)
	mov64(&c, 1, GICD_GPA + 0xffe8); // GICD_PIDR2
	emit(&c, LDR_W(0, 1, 0));
	gres(&c, 0, GR_PIDR2);
	mov64(&c, 1, GICR_GPA + 0x8); // GICR_TYPER (64 bits)
	emit(&c, LDR_X(0, 1, 0));
	gres(&c, 0, GR_RTYPER);
	grace(&c);
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
	emit(&c, 0x14000000u);
	fits(&c, VEC_GPA);
}

// The 2-vCPU guest: vCPU 1 (at ENTRY1) brings up its side with SGI 5
// enabled, says "ready" (MMIO_GPA + 0x10, 1), waits, says "got" (2); vCPU 0
// sends SGI 5 to Aff0 = 1 and says "sent" (MMIO_GPA, 5).
static void write_sgi_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	write_vectors(mem);
	gic_up(&c, 0, GRES_GPA, 0);
	sgi1r(&c, (uint64_t)SGI_OTHER << 24 | 1u << 1); // TargetList bit 1: Aff0 1
	grace(&c);
	tell(&c, MMIO_GPA, SGI_OTHER);
	emit(&c, 0x14000000u);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	gic_up(&c1, 1, GRES_GPA + GRES1_OFF, 1u << SGI_OTHER);
	tell(&c1, MMIO_GPA + 0x10, 1);
	wait_irqs(&c1, 1, 0);
	grace(&c1);
	tell(&c1, MMIO_GPA + 0x10, 2);
	emit(&c1, 0x14000000u);
	fits(&c, ENTRY1);
	fits(&c1, VEC_GPA - ENTRY1);
}

static long vgic_attr(int dev, unsigned cmd, uint32_t group, uint64_t attr, void *val)
{
	struct kvm_device_attr a = {.group = group, .attr = attr, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(dev, cmd, &a);
}

long gic_addr(int dev, uint64_t type, uint64_t gpa)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_ADDR, type, &gpa);
}

long gic_nr_irqs(int dev, uint32_t n)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &n);
}

long gic_init(int dev)
{
	return vgic_attr(dev, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
			 KVM_DEV_ARM_VGIC_CTRL_INIT, NULL);
}

static int gic_create(int vm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};

	return ioctl(vm, KVM_CREATE_DEVICE, &cd) ? -1 : (int)cd.fd;
}

int gic2_create(int vm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V2};

	return ioctl(vm, KVM_CREATE_DEVICE, &cd) ? -1 : (int)cd.fd;
}

// KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION (count 63:52, base 51:16, flags 15:12,
// index 11:0), as QEMU uses it when offered: count 0 or flags refused, index
// 0 first, read back whole, the legacy REDIST refused beside it; a region
// that does not exist reads -ENOENT. Slat keeps one region (a second is
// -EINVAL; KVM takes it).
static uint64_t rdist(uint64_t count, uint64_t base, uint64_t flags, uint64_t index)
{
	return count << 52 | base | flags << 12 | index;
}

static void check_redist_region(int kvm)
{
	int vm = ioctl(kvm, KVM_CREATE_VM, 0), dev = gic_create(vm);
	const uint64_t t = KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION;
	uint64_t v = 0;

	expect("vgic: HAS REDIST_REGION",
	       vgic_attr(dev, KVM_HAS_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_ADDR, t, NULL), 0);
	v = rdist(0, 0, 0, 0);
	expect("vgic: GET REDIST_REGION 0 before any",
	       vgic_attr(dev, KVM_GET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_ADDR, t, &v), ENOENT);
	expect("vgic: REDIST_REGION with count 0", gic_addr(dev, t, rdist(0, GICR_GPA, 0, 0)),
	       EINVAL);
	expect("vgic: REDIST_REGION with flags", gic_addr(dev, t, rdist(2, GICR_GPA, 1, 0)),
	       EINVAL);
	expect("vgic: REDIST_REGION index 1 first", gic_addr(dev, t, rdist(2, GICR_GPA, 0, 1)),
	       EINVAL);
	expect("vgic: REDIST_REGION 0: 2 frames", gic_addr(dev, t, rdist(2, GICR_GPA, 0, 0)), 0);
	v = 0;
	expect("vgic: GET REDIST_REGION 0",
	       vgic_attr(dev, KVM_GET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_ADDR, t, &v), 0);
	check("vgic: REDIST_REGION 0 reads back count and base", v == rdist(2, GICR_GPA, 0, 0), v,
	      rdist(2, GICR_GPA, 0, 0));
	expect("vgic: legacy REDIST beside a region",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICR_GPA + 0x100000), EINVAL);
	if (on_slat()) // KVM takes further regions
		expect("vgic: a second REDIST_REGION (Slat keeps one)",
		       gic_addr(dev, t, rdist(2, GICR_GPA + 0x100000, 0, 1)), EINVAL);
	close(dev);
	close(vm);
}

static void check_vgic_device(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3,
				       .flags = KVM_CREATE_DEVICE_TEST};
	struct kvm_run *run;
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);

	if (vm < 0) {
		check("vGIC device VM", false, errno, 0);
		return;
	}
	expect("vgic: KVM_CREATE_DEVICE VGIC_V3 with KVM_CREATE_DEVICE_TEST",
	       ioctl(vm, KVM_CREATE_DEVICE, &cd), 0);
	int dev = gic_create(vm);
	expect("vgic: KVM_CREATE_DEVICE VGIC_V3", dev, 0);
	cd.flags = 0;
	expect("vgic: a second VGIC_V3 on the VM", ioctl(vm, KVM_CREATE_DEVICE, &cd), EEXIST);
	expect("vgic: KVM_HAS_DEVICE_ATTR of an unknown group (99)",
	       vgic_attr(dev, KVM_HAS_DEVICE_ATTR, 99, 0, NULL), ENXIO);
	expect("vgic: NR_IRQS 48", gic_nr_irqs(dev, 48), EINVAL);
	expect("vgic: NR_IRQS 1056", gic_nr_irqs(dev, 1056), EINVAL);
	expect("vgic: DIST address 0x08001000 (not 64 KiB aligned)",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA + 0x1000), EINVAL);
	expect("vgic: DIST address 0x08000000", gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA),
	       0);
	expect("vgic: DIST address set twice",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, GICD_GPA + 0x10000), EEXIST);
	expect("vgic: NR_IRQS 96", gic_nr_irqs(dev, GIC_NR_IRQS), 0);
	int vcpu = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	expect("vgic: CTRL_INIT", gic_init(dev), 0);
	// KVM's range checks (vgic_check_iorange) against the VM's 40-bit IPA space,
	// and the legacy REDIST frames (one pair per vCPU) against the distributor.
	expect("vgic: REDIST address at the IPA limit (1 << 40)",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, 1ull << 40), E2BIG);
	expect("vgic: REDIST frames crossing the IPA limit",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, (1ull << 40) - 0x10000), E2BIG);
	expect("vgic: REDIST frames over the distributor",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICD_GPA), EINVAL);
	// Until a vCPU runs the addresses may still be set; no vCPU may be added.
	expect("vgic: REDIST address first set after CTRL_INIT",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_REDIST, GICR_GPA), 0);
	expect("vgic: KVM_CREATE_VCPU after CTRL_INIT", ioctl(vm, KVM_CREATE_VCPU, 1), EBUSY);
	if (vcpu >= 0)
		close(vcpu);
	close(dev);
	close(vm);

	// KVM's bound on NR_IRQS is 1023: 992 is the largest multiple of 32.
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	dev = gic_create(vm);
	expect("vgic: NR_IRQS 1024", gic_nr_irqs(dev, 1024), EINVAL);
	expect("vgic: NR_IRQS 992", gic_nr_irqs(dev, 992), 0);
	expect("vgic: DIST address at the IPA limit (1 << 40)",
	       gic_addr(dev, KVM_VGIC_V3_ADDR_TYPE_DIST, 1ull << 40), E2BIG);
	close(dev);
	close(vm);
	check_redist_region(kvm);
}

bool gic_vm_make(int kvm, struct gic_vm *g, unsigned nvcpu, void (*write)(uint8_t *), bool v2)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);

	memset(g, 0xff, sizeof(*g));
	g->vm = ioctl(kvm, KVM_CREATE_VM, 0);
	g->mem = mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->vm < 0 || g->mem == MAP_FAILED)
		return false;
	write(g->mem);
	if (region(g->vm, 0, 0, 0, SLOT_SZ, g->mem))
		return false;
	g->dev = v2 ? gic2_create(g->vm) : gic_create(g->vm);
	if (g->dev < 0 ||
	    gic_addr(g->dev, v2 ? KVM_VGIC_V2_ADDR_TYPE_DIST : KVM_VGIC_V3_ADDR_TYPE_DIST,
		     GICD_GPA) ||
	    gic_addr(g->dev, v2 ? KVM_VGIC_V2_ADDR_TYPE_CPU : KVM_VGIC_V3_ADDR_TYPE_REDIST,
		     v2 ? GICC_GPA : GICR_GPA) ||
	    gic_nr_irqs(g->dev, GIC_NR_IRQS))
		return false;
	for (unsigned i = 0; i < nvcpu; i++) {
		g->vcpu[i] = psci_vcpu(g->vm, i, 1u << KVM_ARM_VCPU_PSCI_0_2, &g->run[i], sz);
		if (g->vcpu[i] < 0)
			return false;
	}
	return gic_init(g->dev) == 0;
}

void gic_vm_free(struct gic_vm *g, unsigned nvcpu)
{
	for (unsigned i = 0; i < nvcpu; i++)
		close(g->vcpu[i]);
	close(g->dev);
	close(g->vm);
	munmap(g->mem, SLOT_SZ);
}

// KVM_RUN to an MMIO write of `val` at `gpa`; says what came instead.
bool run_to_tell(int vcpu, struct kvm_run *run, uint8_t *mem, uint64_t res, uint64_t gpa,
		 uint64_t val)
{
	uint64_t v = 0;
	long r = ioctl(vcpu, KVM_RUN, 0);

	if (r == 0 && mmio_write_exit(run, gpa, &v) && v == val)
		return true;
	if (r < 0)
		say("vgic: KVM_RUN: %s (exit %u)", strerror(errno), run->exit_reason);
	else if (mmio_write_exit(run, MMIO_BAD, &v)) {
		uint64_t esr, elr;
		memcpy(&esr, mem + res + GR_BAD, 8);
		memcpy(&elr, mem + res + GR_BAD + 8, 8);
		say("vgic: guest exception at vector +0x%llx, ESR_EL1 0x%llx, ELR_EL1 0x%llx",
		    (unsigned long long)v, (unsigned long long)esr, (unsigned long long)elr);
	} else
		say("vgic: exit %u (MMIO 0x%llx %s 0x%llx), want the MMIO write 0x%llx at 0x%llx",
		    run->exit_reason, (unsigned long long)run->mmio.phys_addr,
		    run->mmio.is_write ? "write" : "read", (unsigned long long)v,
		    (unsigned long long)val, (unsigned long long)gpa);
	return false;
}

uint64_t gr(const struct gic_vm *g, unsigned off)
{
	uint64_t v;

	memcpy(&v, g->mem + GRES_GPA + off, 8);
	return v;
}

struct spi_raise {
	int vm;
	long ret;
	int err;
};

static void *raise_spi(void *arg)
{
	struct spi_raise *s = arg;
	struct kvm_irq_level l = {.irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT | SPI_INTID,
				  .level = 1};
	struct timespec ts = {0, 100 * 1000 * 1000}; // the guest is in its WFI by then

	nanosleep(&ts, NULL);
	s->ret = ioctl(s->vm, KVM_IRQ_LINE, &l);
	s->err = errno;
	return NULL;
}

// A check's name under `tag` ("vgic" or "vgic2"); one at a time.
static const char *named(const char *tag, const char *what)
{
	static char buf[200];

	snprintf(buf, sizeof(buf), "%s: %s", tag, what);
	return buf;
}

// The 1-vCPU guest's run, alike on both GICs: its GIC up and SGI 3 to
// itself, SPI 40 raised while it waits in WFI, its timer's PPI 27, its
// power-off; and the checks of it both share.
void run_gic_guest(struct gic_vm *g, const char *tag)
{
	struct spi_raise s = {.vm = g->vm};
	uint64_t pc = CODE_GPA;
	pthread_t t;

	one_reg(g->vcpu[0], CORE(regs.pc), &pc, true);
	alarm(60); // a guest that waits forever: KVM_RUN ends with EINTR
	check(named(tag, "the guest brings up its GIC, takes SGI 3 and waits for the SPI"),
	      run_to_tell(g->vcpu[0], g->run[0], g->mem, GRES_GPA, MMIO_GPA, 1), gr(g, GR_COUNT),
	      1);
	pthread_create(&t, NULL, raise_spi, &s);
	bool seen = run_to_tell(g->vcpu[0], g->run[0], g->mem, GRES_GPA, MMIO_GPA, 2);
	pthread_join(t, NULL);
	check(named(tag, "KVM_IRQ_LINE SPI 40 level 1 while the guest is in WFI"), s.ret == 0,
	      s.ret ? s.err : 0, 0);
	check(named(tag, "the guest woken from WFI by SPI 40"), seen, gr(g, GR_COUNT), 2);
	struct kvm_irq_level l = {.irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT | SPI_INTID,
				  .level = 0};
	expect(named(tag, "KVM_IRQ_LINE SPI 40 level 0"), ioctl(g->vm, KVM_IRQ_LINE, &l), 0);
	expect(named(tag, "KVM_RUN to the guest's SYSTEM_OFF"), ioctl(g->vcpu[0], KVM_RUN, 0), 0);
	alarm(0);
	check(named(tag, "the guest powers off after its timer interrupt"),
	      g->run[0]->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  g->run[0]->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN,
	      g->run[0]->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	check(named(tag, "no guest wait gave up (bit 0 SGI, 1 SPI, 2 timer)"),
	      gr(g, GR_WAIT_TO) == 0, gr(g, GR_WAIT_TO), 0);
	check(named(tag, "exactly 3 interrupts taken"), gr(g, GR_COUNT) == 3, gr(g, GR_COUNT), 3);
}

static void check_vgic_guest(int kvm)
{
	struct gic_vm g;

	if (!gic_vm_make(kvm, &g, 1, write_gic_guest, false)) {
		check("vgic: 1-vCPU VM with the GIC set up", false, errno, 0);
		return;
	}
	int irq = VTIMER_INTID;

	expect("vgic: SET_DEVICE_ATTR TIMER_CTRL VTIMER 27 before a run",
	       vcpu_attr(g.vcpu[0], KVM_SET_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, &irq),
	       0);
	irq = 15; // an SGI, not a PPI
	expect("vgic: SET_DEVICE_ATTR TIMER_CTRL VTIMER 15",
	       vcpu_attr(g.vcpu[0], KVM_SET_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, &irq),
	       EINVAL);
	run_gic_guest(&g, "vgic");
	irq = VTIMER_INTID;
	expect("vgic: SET_DEVICE_ATTR TIMER_CTRL VTIMER after a run",
	       vcpu_attr(g.vcpu[0], KVM_SET_DEVICE_ATTR, KVM_ARM_VCPU_TIMER_CTRL,
			 KVM_ARM_VCPU_TIMER_IRQ_VTIMER, &irq),
	       EBUSY);
	check("vgic: GICR_WAKER.ChildrenAsleep cleared", gr(&g, GR_WAKER_TO) == 0,
	      gr(&g, GR_WAKER_TO), 0);
	check("vgic: ICC_SRE_EL1 reads SRE | DFB | DIB", gr(&g, GR_SRE) == 7, gr(&g, GR_SRE), 7);
	check("vgic: first INTID: SGI 3 (ICC_SGI1R_EL1 to itself)", gr(&g, GR_INTIDS) == SGI_SELF,
	      gr(&g, GR_INTIDS), SGI_SELF);
	check("vgic: second INTID: SPI 40 (KVM_IRQ_LINE)", gr(&g, GR_INTIDS + 8) == SPI_INTID,
	      gr(&g, GR_INTIDS + 8), SPI_INTID);
	check("vgic: third INTID: PPI 27 (the virtual timer)",
	      gr(&g, GR_INTIDS + 16) == VTIMER_INTID, gr(&g, GR_INTIDS + 16), VTIMER_INTID);
	if (gr(&g, GR_SPURIOUS))
		say("vgic: (%llu spurious acknowledges, INTID 1023)",
		    (unsigned long long)gr(&g, GR_SPURIOUS));
	uint64_t v = gr(&g, GR_TYPER);
	check("vgic: GICD_TYPER.ITLinesNumber 2 (96 IRQs)", (v & 0x1f) == 2, v & 0x1f, 2);
	v = gr(&g, GR_PIDR2);
	check("vgic: GICD_PIDR2.ArchRev 3 (GICv3)", (v >> 4 & 0xf) == 3, v >> 4 & 0xf, 3);
	v = gr(&g, GR_RTYPER);
	check("vgic: GICR_TYPER.Last set (the only vCPU)", (v >> 4 & 1) == 1, v, 1u << 4);
	check("vgic: GICR_TYPER affinity 0.0.0.0, processor number 0",
	      (v >> 32) == 0 && (v >> 8 & 0xffff) == 0, v >> 8, 0);
	say("vgic: GICD_TYPER 0x%llx, GICD_PIDR2 0x%llx, GICR_TYPER 0x%llx",
	    (unsigned long long)gr(&g, GR_TYPER), (unsigned long long)gr(&g, GR_PIDR2),
	    (unsigned long long)gr(&g, GR_RTYPER));
	gic_vm_free(&g, 1);
}

void *sgi_waiter_run(void *arg)
{
	struct sgi_waiter *w = arg;

	w->got = run_to_tell(w->vcpu, w->run, w->mem, w->res, MMIO_GPA + 0x10, 2);
	return NULL;
}

// Joins a waiter's thread within 30 s; one whose vCPU never woke gets
// SIGUSR1 (its KVM_RUN ends with EINTR) and 10 s more. 0: joined.
int join_waiter(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	int joined = pthread_timedjoin_np(t, NULL, &ts);
	if (joined) {
		pthread_kill(t, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		joined = pthread_timedjoin_np(t, NULL, &ts);
	}
	return joined;
}

// The 2-vCPU VM of the SGI checks: vCPU 0 at CODE_GPA, vCPU 1 at ENTRY1.
bool sgi_vm_make(int kvm, struct gic_vm *g, void (*write)(uint8_t *), bool v2, const char *tag)
{
	uint64_t pc = ENTRY1;

	if (!gic_vm_make(kvm, g, 2, write, v2)) {
		check(named(tag, "2-vCPU VM with the GIC set up"), false, errno, 0);
		return false;
	}
	one_reg(g->vcpu[1], CORE(regs.pc), &pc, true);
	pc = CODE_GPA;
	one_reg(g->vcpu[0], CORE(regs.pc), &pc, true);
	return true;
}

static void check_vgic_sgi(int kvm)
{
	struct gic_vm g;
	struct sgi_waiter w;
	pthread_t t;

	if (!sgi_vm_make(kvm, &g, write_sgi_guest, false, "vgic"))
		return;
	alarm(60);
	check("vgic: vCPU 1 brings up its redistributor",
	      run_to_tell(g.vcpu[1], g.run[1], g.mem, GRES_GPA + GRES1_OFF, MMIO_GPA + 0x10, 1),
	      g.run[1]->exit_reason, KVM_EXIT_MMIO);
	w = (struct sgi_waiter){g.vcpu[1], g.run[1], g.mem, false, GRES_GPA + GRES1_OFF};
	pthread_create(&t, NULL, sgi_waiter_run, &w);
	struct timespec ts = {0, 100 * 1000 * 1000}; // vCPU 1 is in its WFI by then
	nanosleep(&ts, NULL);
	check("vgic: vCPU 0 sends SGI 5 to vCPU 1 (ICC_SGI1R_EL1 Aff0 1)",
	      run_to_tell(g.vcpu[0], g.run[0], g.mem, GRES_GPA, MMIO_GPA, SGI_OTHER),
	      g.run[0]->exit_reason, KVM_EXIT_MMIO);
	int joined = join_waiter(t);
	alarm(0);
	uint64_t n1 = gr(&g, GRES1_OFF + GR_COUNT), id1 = gr(&g, GRES1_OFF + GR_INTIDS);
	check("vgic: vCPU 1 woken from WFI by the SGI", joined == 0 && w.got, n1, 1);
	check("vgic: vCPU 1 took exactly 1 interrupt", n1 == 1, n1, 1);
	check("vgic: ... SGI 5", id1 == SGI_OTHER, id1, SGI_OTHER);
	check("vgic: vCPU 0 took none", gr(&g, GR_COUNT) == 0, gr(&g, GR_COUNT), 0);
	check("vgic: no wait of vCPU 1 gave up", gr(&g, GRES1_OFF + GR_WAIT_TO) == 0,
	      gr(&g, GRES1_OFF + GR_WAIT_TO), 0);
	if (joined == 0)
		gic_vm_free(&g, 2);
	// else vCPU 1's thread still holds its fd: leave the VM to exit()
}

// The GIC this machine's KVM offers: GICv3, else GICv2.
void check_vgic(int kvm)
{
	struct kvm_create_device cd = {.type = KVM_DEV_TYPE_ARM_VGIC_V3,
				       .flags = KVM_CREATE_DEVICE_TEST};
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	bool v3 = ioctl(vm, KVM_CREATE_DEVICE, &cd) == 0;

	cd.type = KVM_DEV_TYPE_ARM_VGIC_V2;
	bool v2 = !v3 && ioctl(vm, KVM_CREATE_DEVICE, &cd) == 0;
	close(vm);
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (v3) {
		check("KVM_CAP_MAX_VCPUS >= 64", n >= 64, n, 64);
		check_vgic_device(kvm);
		check_vgic_guest(kvm);
		check_vgic_sgi(kvm);
		check_vgic_state(kvm);
	} else if (v2) {
		say("vgic: no GICv3 here: the GICv2 checks");
		check("vgic2: KVM_CAP_MAX_VCPUS 8 (a GICv2 host)", n == 8, n, 8);
		check_vgic2_device(kvm);
		check_vgic2_guest(kvm);
		check_vgic2_sgi(kvm);
		check_vgic2_state(kvm);
	} else {
		check("vgic: an in-kernel GIC (VGIC_V3 or VGIC_V2)", false, errno, 0);
	}
}
