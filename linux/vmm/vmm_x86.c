// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm on x86_64: where the devices are, port I/O (COM1, PIT channel 2
// and the CMOS clock, the i8042's reset line, the ACPI sleep registers),
// system events and the register dumps (the VM itself: vmm_x86_kvm.c).
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vmm.h"
#include "vmm_x86_layout.h"

const char arch_kernel_usage[] = "bzImage";
const bool arch_has_gic = false; // no --gic: the interrupts are the APICs'

// RAM from 0; COM1 on IRQ 4 (= GSI 4); the disk's and the virtio console's
// registers in the MMIO hole.
void arch_init(void)
{
	vm.ram_base = 0;
	vm.virtio_base = GPA_VIRTIO_BLK;
	vm.uart_irq = COM1_IRQ;
	vm.virtio_irq = VIRTIO_BLK_GSI;
	vm.console_base = GPA_VIRTIO_CON;
	vm.console_irq = VIRTIO_CON_GSI;
	vm.irq_kind = "GSI";
}

// KVM_IRQ_LINE: the in-kernel I/O APIC's pin GSI follows LEVEL.
void set_irq_line(uint32_t gsi, bool level)
{
	struct kvm_irq_level l = {.irq = gsi, .level = level};

	if (ioctl(vm.vm_fd, KVM_IRQ_LINE, &l) < 0)
		die("KVM_IRQ_LINE %u failed", gsi);
}

static void sleep_control_write(uint8_t val)
{
	unsigned type = (val >> 2) & 7;

	if (!(val & 0x20)) // SLP_EN
		return;
	if (type == SLEEP_TYPE_S5)
		vm_end(EXIT_POWEROFF, "guest powered off (ACPI S5)");
	fprintf(stderr, "slat-vmm: guest asked for sleep type %u, not offered; ignored\n", type);
}

// One port access of SIZE bytes at DATA: the devices, else all ones / ignored.
static void port_io(uint16_t port, bool write, uint8_t *data, unsigned size)
{
	if (port >= PORT_COM1 && port < PORT_COM1 + 8 &&
	    uart_access(port - PORT_COM1, write, data, size))
		return;
	if (legacy_io(port, write, data, size))
		return;
	if (write && port == PORT_I8042_CMD && size == 1 && *data == I8042_RESET)
		vm_end(EXIT_RESET, "guest reset (i8042 0xfe)");
	if (write && port == PORT_SLEEP_CONTROL && size == 1) {
		sleep_control_write(*data);
		return;
	}
	if (!write && port == PORT_SLEEP_STATUS && size == 1) {
		*data = 0;
		return;
	}
	__atomic_add_fetch(&vm.port_count[port], 1, __ATOMIC_RELAXED);
	if (write) {
		__atomic_add_fetch(&vm.port_writes, 1, __ATOMIC_RELAXED);
	} else {
		memset(data, 0xff, size);
		__atomic_add_fetch(&vm.port_reads, 1, __ATOMIC_RELAXED);
	}
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool write = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size)
		port_io(run->io.port, write, data, run->io.size);
}

bool arch_exit(struct vcpu *v)
{
	if (v->run->exit_reason != KVM_EXIT_IO)
		return false;
	handle_io(v);
	return true;
}

bool arch_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size)
{
	return virtio_blk_mmio(addr, write, data, size) ||
	       virtio_console_mmio(addr, write, data, size);
}

void arch_system_event(struct vcpu *v)
{
	switch (v->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		vm_end(EXIT_POWEROFF, "guest powered off (system event)");
	case KVM_SYSTEM_EVENT_RESET:
		vm_end(EXIT_RESET, "guest reset (system event)");
	default:
		vcpu_fail(v, "KVM_EXIT_SYSTEM_EVENT of an unknown type");
	}
}

static uint32_t lapic_reg(const struct kvm_lapic_state *l, unsigned off)
{
	uint32_t v;

	memcpy(&v, l->regs + off, 4);
	return v;
}

// The local APIC's timer and pending vectors (what a stuck guest waits for).
static void dump_lapic(struct vcpu *v)
{
	struct kvm_lapic_state l;
	struct kvm_mp_state mp;

	if (ioctl(v->fd, KVM_GET_LAPIC, &l) < 0)
		return;
	if (ioctl(v->fd, KVM_GET_MP_STATE, &mp) < 0)
		mp.mp_state = ~0u;
	fprintf(stderr,
		"  mp_state %u lapic: svr %x lvtt %x tmict %x tmcct %x tdcr %x isr7 %08x irr7 "
		"%08x irr1 %08x esr %x\n",
		mp.mp_state, lapic_reg(&l, 0xf0), lapic_reg(&l, 0x320), lapic_reg(&l, 0x380),
		lapic_reg(&l, 0x390), lapic_reg(&l, 0x3e0), lapic_reg(&l, 0x170),
		lapic_reg(&l, 0x270), lapic_reg(&l, 0x210), lapic_reg(&l, 0x280));
}

void dump_vcpu(struct vcpu *v)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 || ioctl(v->fd, KVM_GET_SREGS, &s) < 0) {
		fprintf(stderr, "slat-vmm: vcpu %d: registers unreadable: %s\n", v->id,
			strerror(errno));
		return;
	}
	fprintf(stderr,
		"slat-vmm: vcpu %d: rip %016llx rsp %016llx rflags %08llx\n"
		"  rax %016llx rbx %016llx rcx %016llx rdx %016llx\n"
		"  rsi %016llx rdi %016llx rbp %016llx\n"
		"  cr0 %08llx cr2 %016llx cr3 %016llx cr4 %08llx efer %llx\n"
		"  cs %04x base %llx l %d db %d  ss %04x  gdt %llx/%x idt %llx/%x\n",
		v->id, r.rip, r.rsp, r.rflags, r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp,
		s.cr0, s.cr2, s.cr3, s.cr4, s.efer, s.cs.selector, s.cs.base, s.cs.l, s.cs.db,
		s.ss.selector, s.gdt.base, s.gdt.limit, s.idt.base, s.idt.limit);
	dump_lapic(v);
}

// The N ports not emulated the guest used most, with their access counts.
static void print_busiest_ports(int n)
{
	uint32_t done = UINT32_MAX; // counts above this were printed already

	fprintf(stderr, "slat-vmm: busiest of them:");
	for (int k = 0; k < n; k++) {
		uint32_t best = 0;
		int port = -1;

		for (int p = 0; p < 65536; p++)
			if (vm.port_count[p] > best && vm.port_count[p] < done) {
				best = vm.port_count[p];
				port = p;
			}
		if (port < 0)
			break;
		for (int p = 0; p < 65536; p++)
			if (vm.port_count[p] == best)
				fprintf(stderr, " 0x%x %u", p, best);
		done = best;
	}
	fputc('\n', stderr);
}

void arch_verbose_summary(void)
{
	fprintf(stderr,
		"slat-vmm: ports not emulated: %lu reads, %lu writes; MMIO outside RAM: "
		"%lu reads, %lu writes\n",
		vm.port_reads, vm.port_writes, vm.mmio_reads, vm.mmio_writes);
	print_busiest_ports(5);
}
