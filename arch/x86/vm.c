// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's records on x86 and the x86 implementation of core's arch
// contract (core/vm_arch.h). The VM and vCPU records are core's; their x86
// parts (arch/x86/inc/vm_arch_types.h) hold what the shared exit layer and
// the back ends keep. The back end's VM-wide operations (struct x86_vm_ops:
// run, SLAT figures, teardown, kick) do the hardware-specific work.
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/vm_arch.h"

struct vm x86_primary;
static struct vcpu x86_primary_vcpus[X86_MAX_CPUS];

int x86_vm_init(const char *slat_name, const struct x86_vm_ops *ops, const struct region *slat,
		uint64_t tsc_start, uint64_t tsc_hz, const struct x86_power_ports *power)
{
	struct vm *vm = &x86_primary;

	vm_init(vm, 0, "primary", slat_name, slat, x86_primary_vcpus, X86_MAX_CPUS);
	vm->arch.ops = ops;
	vm->arch.tsc_start = tsc_start;
	vm->arch.tsc_hz = tsc_hz;
	vm->arch.power = *power;
	return vm_arch_init(vm);
}

int vm_arch_init(struct vm *vm)
{
	const struct x86_vm_ops *ops = vm->arch.ops;

	if (!ops || !ops->run || !ops->mm_counts || !ops->teardown) {
		log_err("x86: vm %s: the back end's VM operations are incomplete\n", vm->name);
		return -1;
	}
	return 0;
}

void vcpu_arch_init(struct vcpu *v)
{
	memset(&v->arch, 0, sizeof(v->arch));
	v->arch.mbox_state = X86_MBOX_RUNNING;
	v->arch.apic_dfr = 0xffffffffu; // the APIC's reset value: flat model
}

struct vcpu *x86_vcpu_for_apic(uint32_t apic_id)
{
	struct vcpu *v = vm_vcpu_find(&x86_primary, apic_id);

	if (v)
		return v;
	// Only the CPU with this APIC ID claims its record, so nothing else can
	// see the record between the claim and the arch part's initialisation.
	v = vm_vcpu_for(&x86_primary, apic_id);
	if (v)
		vcpu_arch_init(v);
	return v;
}

void vcpu_arch_run(struct vcpu *v)
{
	v->vm->arch.ops->run(v);
}

void vm_arch_teardown(struct vm *vm, struct vm_teardown_counts *out)
{
	*out = (struct vm_teardown_counts){0};
	vm->arch.ops->teardown(&out->pages_freed, &out->invalidations);
}

void vm_arch_mm_counts(const struct vm *vm, struct slat_mm_counts *out)
{
	vm->arch.ops->mm_counts(out);
}

uint64_t vm_arch_uptime_us(const struct vm *vm)
{
	uint64_t t = rdtsc() - vm->arch.tsc_start;

	if (!vm->arch.tsc_hz)
		return 0;
	// Split to keep t * 10^6 from overflowing.
	return (t / vm->arch.tsc_hz) * 1000000 + (t % vm->arch.tsc_hz) * 1000000 / vm->arch.tsc_hz;
}

__attribute__((noreturn)) void x86_park(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}
