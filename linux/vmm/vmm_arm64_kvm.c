// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's arm64 VM through the standard KVM API: memory slots, the vCPUs
// (KVM_ARM_VCPU_INIT with PSCI 0.2; all but vCPU 0 start powered off and
// wait for the guest's PSCI CPU_ON), the in-kernel GICv3 (created after the
// vCPUs, as KVM requires, and initialized before the first KVM_RUN), and
// vCPU 0's boot registers through KVM_SET_ONE_REG (core registers only).
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
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

void create_vm(void)
{
	open_kvm_vm(); // type 0: the default IPA size
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

// The GICv3: distributor and redistributor addresses, 64 SPIs, then INIT
// (after which KVM_IRQ_LINE works and the vCPUs may run).
static void create_vgic(void)
{
	struct kvm_create_device d = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};
	uint64_t dist = GPA_GICD, redist = GPA_GICR;
	uint32_t nr_irqs = GIC_NR_IRQS;

	kvm_ioctl(vm.vm_fd, KVM_CREATE_DEVICE, &d, "KVM_CREATE_DEVICE (vGICv3)");
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist,
		  "vGIC distributor address");
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST, &redist,
		  "vGIC redistributor address");
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs, "vGIC NR_IRQS");
	vgic_attr((int)d.fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL,
		  "vGIC CTRL_INIT");
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
