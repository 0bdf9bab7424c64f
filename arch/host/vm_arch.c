// SPDX-License-Identifier: Apache-2.0
//
// The hosted implementation of core/vm_arch.h: a vCPU is the calling thread
// running a guest program (arch/host/inc/vm_arch_types.h). Hosted VMs have no
// second-level tables of their own (tests drive the mm/ engine directly), so
// their teardown and SLAT figures are empty.
#include <time.h>

#include "core/vm_arch.h"

void host_handle_exit(struct vcpu *v, const struct host_exit *e);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int vm_arch_init(struct vm *vm)
{
	vm->arch.start_ns = now_ns();
	return 0;
}

void vcpu_arch_init(struct vcpu *vcpu)
{
	vcpu->arch.entries = 0;
}

// The exit entry of the hosted path: count, then apply what the guest asked.
void host_handle_exit(struct vcpu *v, const struct host_exit *e)
{
	vcpu_count_exit(v, (enum exit_reason)e->reason);
	if (e->power_off)
		vm_begin_shutdown(v->vm);
}

static bool vcpu_may_enter(const struct vcpu *v)
{
	return !vm_is_shutting_down(v->vm) &&
	       __atomic_load_n(&v->state, __ATOMIC_ACQUIRE) != VCPU_STOPPED;
}

void vcpu_arch_run(struct vcpu *vcpu)
{
	const struct host_guest *g = vcpu->arch.guest;

	while (g && vcpu_may_enter(vcpu)) {
		vcpu_set_running(vcpu);
		vcpu->arch.entries++;
		struct host_exit e = g->step(vcpu, g->ctx);
		host_handle_exit(vcpu, &e);
	}
}

void vm_arch_teardown(struct vm *vm, struct vm_teardown_counts *out)
{
	*out = (struct vm_teardown_counts){0};
}

void vm_arch_mm_counts(const struct vm *vm, struct slat_mm_counts *out)
{
	*out = (struct slat_mm_counts){0};
}

uint64_t vm_arch_uptime_us(const struct vm *vm)
{
	return (now_ns() - vm->arch.start_ns) / 1000;
}
