// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's VM through the KVM API: memory slots, the in-kernel irqchip, the
// vCPUs with their CPUID, MSRs and the boot state of vCPU 0.
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm_para.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm.h"
#include "vmm_x86_layout.h"

#define MSR_MTRR_DEF_TYPE 0x2ff
#define MTRR_DEF_WB	  0xc06 // MTRRs enabled, fixed-range enabled, default WB
#define MSR_TSC_AUX	  0xc0000103

static int kvm_ioctl(int fd, unsigned long req, void *arg, const char *name)
{
	int r = ioctl(fd, req, arg);

	if (r < 0)
		die("%s failed", name);
	return r;
}

static void mask_pics(void);

void create_vm(void)
{
	open_kvm_vm();
	if (ioctl(vm.vm_fd, KVM_SET_TSS_ADDR, TSS_ADDR) < 0)
		die("KVM_SET_TSS_ADDR failed");
	set_memory_slots();
	kvm_ioctl(vm.vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP");
	mask_pics();
}

// Linux's KVM_CREATE_IRQCHIP also makes two 8259s, whose output reaches vCPU
// 0 through its LINT0 (KVM resets it to ExtINT, and a guest without a PIC
// leaves it so): mask them, as a guest of a hardware-reduced platform never
// will. Slat has no 8259 (-EINVAL): nothing to mask.
static void mask_pics(void)
{
	for (uint32_t chip = KVM_IRQCHIP_PIC_MASTER; chip <= KVM_IRQCHIP_PIC_SLAVE; chip++) {
		struct kvm_irqchip c = {.chip_id = chip};

		if (ioctl(vm.vm_fd, KVM_GET_IRQCHIP, &c) < 0)
			return;
		c.chip.pic.imr = 0xff;
		kvm_ioctl(vm.vm_fd, KVM_SET_IRQCHIP, &c, "KVM_SET_IRQCHIP (8259 mask)");
	}
}

static void get_supported_cpuid(void)
{
	for (unsigned n = 64;; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

		if (!c)
			die("out of memory");
		c->nent = n;
		if (ioctl(vm.kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			vm.cpuid = c;
			return;
		}
		free(c);
		if (errno != E2BIG || n >= 4096)
			die("KVM_GET_SUPPORTED_CPUID failed");
	}
}

// Whether KVM keeps MSR INDEX for the guest (KVM_GET_MSR_INDEX_LIST).
static bool kvm_keeps_msr(uint32_t index)
{
	struct kvm_msr_list probe = {.nmsrs = 0}, *l;
	bool found = false;

	if (ioctl(vm.kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return false;
	l = calloc(1, sizeof(*l) + probe.nmsrs * sizeof(l->indices[0]));
	if (!l)
		die("out of memory");
	l->nmsrs = probe.nmsrs;
	if (ioctl(vm.kvm_fd, KVM_GET_MSR_INDEX_LIST, l) == 0)
		for (uint32_t i = 0; i < l->nmsrs; i++)
			found |= l->indices[i] == index;
	free(l);
	return found;
}

// MTRRs on with write-back as the default type, as firmware leaves them: a
// guest (and a hypervisor that honours guest MTRRs) otherwise sees all memory
// uncached. A KVM without these MSRs (Slat) keeps its own choice.
static bool set_boot_msrs(struct vcpu *v)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[1];
	} m = {.hdr.nmsrs = 1, .e = {{.index = MSR_MTRR_DEF_TYPE, .data = MTRR_DEF_WB}}};

	return ioctl(v->fd, KVM_SET_MSRS, &m) == 1;
}

// KVM's paravirtual features the VM gets (CPUID 0x40000001 EAX): kvmclock
// only. Those that wait for a hypercall (PV spinlocks' KVM_HC_KICK_CPU, PV
// IPIs, PV TLB flush, sched yield, async page faults) stay out: under nested
// SVM emulated by QEMU a vCPU halted in kvm_wait() with interrupts off was
// never kicked, and they are KVM's, not the hardware's, to offer.
#define KVM_PV_OFFERED                                                                             \
	((1u << KVM_FEATURE_CLOCKSOURCE) | (1u << KVM_FEATURE_NOP_IO_DELAY) |                      \
	 (1u << KVM_FEATURE_CLOCKSOURCE2) | (1u << KVM_FEATURE_CLOCKSOURCE_STABLE_BIT))

// The supported CPUID with this vCPU's APIC ID in every field that holds one,
// the hypervisor bit (without it Linux does not look for KVM's leaves, so
// finds no kvmclock), and the TSC-deadline timer when KVM has it (KVM leaves
// both out of the supported table: the first is the VMM's to set, the second
// a capability). Features whose MSRs this KVM does not keep are taken out:
// MTRRs when MTRRdefType cannot be set, RDTSCP and RDPID without TSC_AUX (a
// guest writes it unchecked while bringing up a CPU: a #GP there is a triple
// fault).
static void set_vcpu_cpuid(struct vcpu *v, bool mtrr)
{
	size_t sz = sizeof(*vm.cpuid) + vm.cpuid->nent * sizeof(vm.cpuid->entries[0]);
	struct kvm_cpuid2 *c = malloc(sz);
	bool deadline = ioctl(vm.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0;
	bool tsc_aux = kvm_keeps_msr(MSR_TSC_AUX);
	uint32_t id = (uint32_t)v->id;

	if (!c)
		die("out of memory");
	memcpy(c, vm.cpuid, sz);
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x00ffffffu) | id << 24;
			e->ecx |= 1u << 31; // a hypervisor: look at leaves 0x40000000+
			if (deadline)
				e->ecx |= 1u << 24;
			if (!mtrr)
				e->edx &= ~(1u << 12); // MTRR
			break;
		case 7:
			if (e->index == 0 && !tsc_aux)
				e->ecx &= ~(1u << 22); // RDPID
			break;
		case 0x80000001:
			if (!tsc_aux)
				e->edx &= ~(1u << 27); // RDTSCP
			break;
		case 0xb:
		case 0x1f:
			e->edx = id; // x2APIC ID
			break;
		case 0x8000001e:
			e->eax = id; // extended APIC ID (AMD)
			break;
		case KVM_CPUID_FEATURES:
			e->eax &= KVM_PV_OFFERED;
			break;
		}
	}
	kvm_ioctl(v->fd, KVM_SET_CPUID2, c, "KVM_SET_CPUID2");
	free(c);
}

static void set_segment(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){
	    .base = 0,
	    .limit = 0xffffffff,
	    .selector = sel,
	    .type = type,
	    .present = 1,
	    .dpl = 0,
	    .db = code ? 0 : 1,
	    .s = 1,
	    .l = code ? 1 : 0,
	    .g = 1,
	};
}

// vCPU 0 at startup_64: long mode, paging on the identity tables, flat
// __BOOT_CS/__BOOT_DS, interrupts off, RSI the zero page.
static void set_boot_state(struct vcpu *v)
{
	struct kvm_sregs s;
	struct kvm_regs r = {0};

	kvm_ioctl(v->fd, KVM_GET_SREGS, &s, "KVM_GET_SREGS");
	set_segment(&s.cs, BOOT_CS, 0xb, true);
	set_segment(&s.ds, BOOT_DS, 0x3, false);
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.gdt.base = GPA_GDT;
	s.gdt.limit = 4 * 8 - 1;
	s.idt.base = 0;
	s.idt.limit = 0;
	s.cr3 = GPA_PML4;
	s.cr4 = 1u << 5;					  // PAE
	s.cr0 = (1u << 0) | (1u << 4) | (1u << 5) | (1ull << 31); // PE, ET, NE, PG
	s.efer = (1u << 8) | (1u << 10);			  // LME, LMA
	kvm_ioctl(v->fd, KVM_SET_SREGS, &s, "KVM_SET_SREGS");
	r.rflags = 0x2;
	r.rip = GPA_KERNEL + KERNEL_ENTRY;
	r.rsi = GPA_ZERO_PAGE;
	r.rsp = GPA_STACK_TOP;
	kvm_ioctl(v->fd, KVM_SET_REGS, &r, "KVM_SET_REGS");
}

void create_vcpus(void)
{
	get_supported_cpuid();
	open_vcpus();
	for (int i = 0; i < vm.ncpus; i++) {
		struct vcpu *v = &vm.vcpus[i];

		set_vcpu_cpuid(v, true);
		if (!set_boot_msrs(v))
			set_vcpu_cpuid(v, false); // again before any KVM_RUN: allowed
	}
	set_boot_state(&vm.vcpus[0]);
}
