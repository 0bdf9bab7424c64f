// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's arm64 VM through the standard KVM API: memory slots, the vCPUs
// (KVM_ARM_VCPU_INIT with PSCI 0.2; all but vCPU 0 start powered off and
// wait for the guest's PSCI CPU_ON), the in-kernel GIC (created after the
// vCPUs, as KVM requires, and initialized before the first KVM_RUN), and
// vCPU 0's boot registers through KVM_SET_ONE_REG (core registers only).
//
// The GIC is a GICv3 or, with --gic v2 or with --gic auto on a KVM without a
// vGICv3 (a host whose GIC is a GICv2), a GICv2: its distributor where the
// GICv3's is, its CPU interface at GPA_GICC, at most GICV2_VCPU_MAX vCPUs.
// The choice is made once the VM exists (KVM_CREATE_DEVICE_TEST asks the
// KVM) and before the device tree, which describes it, is written.
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm.h"
#include "vmm_arm64_layout.h"

static void kvm_ioctl(int fd, unsigned long req, void *arg, const char *name)
{
	if (ioctl(fd, req, arg) < 0)
		die("%s failed", name);
}

static const char *gic_why; // how vm.gic was chosen, for the GIC's start line

// Whether the KVM can create a vGIC of TYPE (KVM_CREATE_DEVICE_TEST only asks):
// false when it has none (ENODEV); any other failure ends the VMM.
static bool kvm_has_vgic(uint32_t type, const char *name)
{
	struct kvm_create_device d = {.type = type, .flags = KVM_CREATE_DEVICE_TEST};

	if (ioctl(vm.vm_fd, KVM_CREATE_DEVICE, &d) == 0)
		return true;
	if (errno != ENODEV)
		die("KVM_CREATE_DEVICE_TEST (%s) failed", name);
	return false;
}

// vm.gic from --gic to the GIC the VM gets. auto: a GICv3 when the KVM has
// one, else a GICv2. A GIC asked for that the KVM does not have, or more
// vCPUs than a GICv2 serves, is a bad argument for this KVM (status 2; the
// kernel's and the device tree's start lines wait for the choice).
static void choose_gic(void)
{
	if (vm.gic == GIC_V3) {
		if (!kvm_has_vgic(KVM_DEV_TYPE_ARM_VGIC_V3, "vGICv3"))
			usage_error("--gic v3: this KVM has no vGICv3 (KVM_CREATE_DEVICE_TEST: "
				    "no such device)");
		gic_why = "--gic v3";
	} else if (vm.gic == GIC_V2) {
		if (!kvm_has_vgic(KVM_DEV_TYPE_ARM_VGIC_V2, "vGICv2"))
			usage_error("--gic v2: this KVM has no vGICv2 (KVM_CREATE_DEVICE_TEST: "
				    "no such device)");
		gic_why = "--gic v2";
	} else if (kvm_has_vgic(KVM_DEV_TYPE_ARM_VGIC_V3, "vGICv3")) {
		vm.gic = GIC_V3;
		gic_why = "--gic auto";
	} else {
		if (!kvm_has_vgic(KVM_DEV_TYPE_ARM_VGIC_V2, "vGICv2")) {
			errno = 0;
			die("this KVM has neither a vGICv3 nor a vGICv2");
		}
		vm.gic = GIC_V2;
		gic_why = "--gic auto: the KVM has no vGICv3";
		if (vm.ncpus > GICV2_VCPU_MAX)
			usage_error("--cpus %d: this KVM has only a GICv2, which serves at most %d "
				    "vCPUs",
				    vm.ncpus, GICV2_VCPU_MAX);
	}
}

void create_vm(void)
{
	open_kvm_vm(); // type 0: the default IPA size
	choose_gic();
	arm64_write_fdt();
	set_memory_slots();
}

static void set_reg(struct vcpu *v, uint64_t id, uint64_t val, const char *name)
{
	struct kvm_one_reg r = {.id = id, .addr = (uint64_t)(uintptr_t)&val};

	if (ioctl(v->fd, KVM_SET_ONE_REG, &r) < 0)
		die("KVM_SET_ONE_REG %s failed", name);
}

static void vgic_attr(int fd, uint32_t group, uint64_t attr, void *val, const char *name)
{
	struct kvm_device_attr a = {
	    .group = group,
	    .attr = attr,
	    .addr = (uint64_t)(uintptr_t)val,
	};

	kvm_ioctl(fd, KVM_SET_DEVICE_ATTR, &a, name);
}

// The GIC vm.gic names: the distributor's address and the redistributors'
// (GICv3) or the CPU interface's (GICv2), 64 SPIs, then INIT (after which
// KVM_IRQ_LINE works and the vCPUs may run).
static void create_vgic(void)
{
	bool v2 = vm.gic == GIC_V2;
	struct kvm_create_device d = {
	    .type = v2 ? KVM_DEV_TYPE_ARM_VGIC_V2 : KVM_DEV_TYPE_ARM_VGIC_V3,
	};
	uint64_t dist = GPA_GICD, redist = GPA_GICR, cpuif = GPA_GICC;
	uint32_t nr_irqs = GIC_NR_IRQS;

	kvm_ioctl(vm.vm_fd, KVM_CREATE_DEVICE, &d,
		  v2 ? "KVM_CREATE_DEVICE (vGICv2)" : "KVM_CREATE_DEVICE (vGICv3)");
	if (v2) {
		vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V2_ADDR_TYPE_DIST, &dist,
			  "vGIC distributor address");
		vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V2_ADDR_TYPE_CPU, &cpuif,
			  "vGIC CPU interface address");
	} else {
		vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist,
			  "vGIC distributor address");
		vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST,
			  &redist, "vGIC redistributor address");
	}
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs, "vGIC NR_IRQS");
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL,
		  "vGIC CTRL_INIT");
	if (v2)
		fprintf(stderr, "slat-vmm: GICv2: distributor 0x%llx, CPU interface 0x%llx (%s)\n",
			(unsigned long long)GPA_GICD, (unsigned long long)GPA_GICC, gic_why);
	else
		fprintf(stderr, "slat-vmm: GICv3: distributor 0x%llx, redistributors 0x%llx (%s)\n",
			(unsigned long long)GPA_GICD, (unsigned long long)GPA_GICR, gic_why);
}

static void init_vcpu(struct vcpu *v, const struct kvm_vcpu_init *target)
{
	struct kvm_vcpu_init init = *target;

	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (v->id > 0)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF; // until PSCI CPU_ON
	kvm_ioctl(v->fd, KVM_ARM_VCPU_INIT, &init, "KVM_ARM_VCPU_INIT");
}

// vCPU 0 at the Image's entry: x0 the device tree, x1..x3 zero (booting.rst).
// KVM's reset state is already EL1h with DAIF masked and the MMU off.
static void set_boot_state(struct vcpu *v)
{
	set_reg(v, CORE_REG(regs.pc), arm64_boot.entry, "pc");
	set_reg(v, CORE_REG(regs.regs[0]), arm64_boot.dtb, "x0");
	set_reg(v, CORE_REG(regs.regs[1]), 0, "x1");
	set_reg(v, CORE_REG(regs.regs[2]), 0, "x2");
	set_reg(v, CORE_REG(regs.regs[3]), 0, "x3");
}

void create_vcpus(void)
{
	struct kvm_vcpu_init target;

	memset(&target, 0, sizeof(target));
	kvm_ioctl(vm.vm_fd, KVM_ARM_PREFERRED_TARGET, &target, "KVM_ARM_PREFERRED_TARGET");
	open_vcpus();
	for (int i = 0; i < vm.ncpus; i++)
		init_vcpu(&vm.vcpus[i], &target);
	create_vgic();
	set_boot_state(&vm.vcpus[0]);
}
