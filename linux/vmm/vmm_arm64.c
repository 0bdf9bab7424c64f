// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm on arm64: where the devices are, MMIO dispatch (the UART, the
// virtio-mmio disk and console; the GIC is KVM's), PSCI system events and the register
// dumps (the VM itself: vmm_arm64_kvm.c).
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vmm.h"
#include "vmm_arm64_layout.h"

const char arch_kernel_usage[] = "Image";
const bool arch_has_gic = true; // --gic v2|v3|auto

// RAM from 1 GiB; the UART, the disk and the virtio console on SPIs (their INTIDs are the lines
// set_irq_line() takes).
void arch_init(void)
{
	vm.ram_base = GPA_RAM;
	vm.virtio_base = GPA_VIRTIO_BLK;
	vm.uart_irq = GIC_SPI_BASE + UART_SPI;
	vm.virtio_irq = GIC_SPI_BASE + VIRTIO_SPI;
	vm.console_base = GPA_VIRTIO_CON;
	vm.console_irq = GIC_SPI_BASE + VIRTIO_CON_SPI;
	vm.irq_kind = "SPI INTID";
}

// KVM_IRQ_LINE for an SPI: irq_type SPI, irq_id the INTID (32 and up).
void set_irq_line(uint32_t intid, bool level)
{
	struct kvm_irq_level l = {
	    .irq = (KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT) | intid,
	    .level = level,
	};

	if (ioctl(vm.vm_fd, KVM_IRQ_LINE, &l) < 0)
		die("KVM_IRQ_LINE (SPI INTID %u) failed", intid);
}

bool arch_exit(struct vcpu *v)
{
	(void)v;
	return false; // no exits of arm64's own beyond MMIO and system events
}

bool arch_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size)
{
	if (addr >= GPA_UART && addr < GPA_UART + UART_SIZE)
		return uart_access((unsigned)(addr - GPA_UART), write, data, size);
	return virtio_blk_mmio(addr, write, data, size) ||
	       virtio_console_mmio(addr, write, data, size);
}

// PSCI SYSTEM_OFF and SYSTEM_RESET, which KVM's PSCI turns into system
// events for the VMM.
void arch_system_event(struct vcpu *v)
{
	switch (v->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		vm_end(EXIT_POWEROFF, "guest powered off (PSCI SYSTEM_OFF)");
	case KVM_SYSTEM_EVENT_RESET:
		vm_end(EXIT_RESET, "guest reset (PSCI SYSTEM_RESET)");
	default:
		vcpu_fail(v, "KVM_EXIT_SYSTEM_EVENT of an unknown type");
	}
}

static bool get_reg(struct vcpu *v, uint64_t id, uint64_t *val)
{
	struct kvm_one_reg r = {.id = id, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(v->fd, KVM_GET_ONE_REG, &r) == 0;
}

// The core registers through KVM_GET_ONE_REG (the only register ids slat-vmm
// uses: those a KVM without the system registers' list still has).
void dump_vcpu(struct vcpu *v)
{
	uint64_t pc, pstate, sp, x[4];
	bool ok = get_reg(v, CORE_REG(regs.pc), &pc) &&
		  get_reg(v, CORE_REG(regs.pstate), &pstate) && get_reg(v, CORE_REG(regs.sp), &sp);

	for (int i = 0; ok && i < 4; i++)
		ok = get_reg(v, CORE_REG(regs.regs[i]), &x[i]);
	if (!ok) {
		fprintf(stderr, "slat-vmm: vcpu %d: registers unreadable: %s\n", v->id,
			strerror(errno));
		return;
	}
	fprintf(stderr,
		"slat-vmm: vcpu %d: pc %016llx pstate %08llx sp_el0 %016llx\n"
		"  x0 %016llx x1 %016llx x2 %016llx x3 %016llx\n",
		v->id, (unsigned long long)pc, (unsigned long long)pstate, (unsigned long long)sp,
		(unsigned long long)x[0], (unsigned long long)x[1], (unsigned long long)x[2],
		(unsigned long long)x[3]);
}

void arch_verbose_summary(void)
{
	fprintf(stderr, "slat-vmm: MMIO outside RAM not emulated: %lu reads, %lu writes\n",
		vm.mmio_reads, vm.mmio_writes);
}
