// SPDX-License-Identifier: Apache-2.0
//
// VM and vCPU records, exit statistics and the exit summary (see vm.h).
#include "core/vm.h"

#include "core/log.h"
#include "core/mem.h"

static const char *const exit_names[EXIT_REASONS] = {
    [EXIT_FIRMWARE_CALL] = "firmware-call",
    [EXIT_HYPERCALL] = "hypercall",
    [EXIT_SLAT_FAULT] = "slat-fault",
    [EXIT_SYSREG] = "sysreg",
    [EXIT_IO] = "io",
    [EXIT_CPUID] = "cpuid",
    [EXIT_WAIT] = "wait",
    [EXIT_INTERRUPT] = "interrupt",
    [EXIT_OTHER] = "other",
    [EXIT_MMIO] = "mmio",
};

const char *exit_reason_name(enum exit_reason r)
{
	return (unsigned)r < EXIT_REASONS ? exit_names[r] : "invalid";
}

void vm_init(struct vm *vm, unsigned id, const char *name, const char *slat_name,
	     const struct region *hidden, struct vcpu *vcpus, unsigned max_vcpus)
{
	memset(vm, 0, sizeof(*vm));
	if (vcpus) // secondary VMs keep their vCPUs elsewhere (core/hv_vm.c)
		memset(vcpus, 0, sizeof(*vcpus) * max_vcpus);
	for (unsigned i = 0; i < max_vcpus; i++) {
		vcpus[i].vm = vm;
		vcpus[i].index = i;
		vcpus[i].hw_id = VCPU_HW_ID_FREE;
		vcpus[i].state = VCPU_FREE;
	}
	vm->id = id;
	vm->name = name;
	vm->slat_name = slat_name;
	vm->state = VM_RUNNING;
	if (hidden)
		vm->hidden = *hidden;
	vm->vcpus = vcpus;
	vm->max_vcpus = max_vcpus;
}

struct vcpu *vm_vcpu_find(struct vm *vm, uint64_t hw_id)
{
	for (unsigned i = 0; i < vm->max_vcpus; i++) {
		if (__atomic_load_n(&vm->vcpus[i].hw_id, __ATOMIC_ACQUIRE) == hw_id)
			return &vm->vcpus[i];
	}
	return NULL;
}

struct vcpu *vm_vcpu_for(struct vm *vm, uint64_t hw_id)
{
	struct vcpu *v = vm_vcpu_find(vm, hw_id);

	if (v || hw_id == VCPU_HW_ID_FREE)
		return v;
	// Claim the first free slot. A slot, once claimed, is never released, and
	// a CPU that loses the race for a slot to the same id takes that slot, so
	// one id never ends up in two records.
	for (unsigned i = 0; i < vm->max_vcpus; i++) {
		uint64_t expected = VCPU_HW_ID_FREE;
		if (__atomic_compare_exchange_n(&vm->vcpus[i].hw_id, &expected, hw_id, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&vm->vcpus[i].state, VCPU_CREATED, __ATOMIC_RELEASE);
			return &vm->vcpus[i];
		}
		if (expected == hw_id)
			return &vm->vcpus[i];
	}
	return NULL;
}

void vcpu_set_running(struct vcpu *v)
{
	int created = VCPU_CREATED;

	__atomic_store_n(&v->entered, true, __ATOMIC_RELEASE);
	__atomic_compare_exchange_n(&v->state, &created, VCPU_RUNNING, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
}

bool vcpu_has_run(const struct vcpu *v)
{
	return __atomic_load_n(&v->entered, __ATOMIC_ACQUIRE);
}

bool vm_begin_shutdown(struct vm *vm)
{
	int running = VM_RUNNING;
	bool first = __atomic_compare_exchange_n(&vm->state, &running, VM_SHUTTING_DOWN, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);

	// Idempotent: every caller (winner or not) leaves every claimed record
	// STOPPED, so no vCPU is reported running in the summary.
	for (unsigned i = 0; i < vm->max_vcpus; i++) {
		if (__atomic_load_n(&vm->vcpus[i].hw_id, __ATOMIC_ACQUIRE) != VCPU_HW_ID_FREE)
			__atomic_store_n(&vm->vcpus[i].state, VCPU_STOPPED, __ATOMIC_RELEASE);
	}
	return first;
}

bool vm_is_shutting_down(const struct vm *vm)
{
	return __atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) != VM_RUNNING;
}

uint64_t vm_exit_total(const struct vm *vm, enum exit_reason r)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < vm->max_vcpus; i++)
		sum += __atomic_load_n(&vm->vcpus[i].exits[r], __ATOMIC_RELAXED);
	return sum;
}

static unsigned vm_vcpus_used(const struct vm *vm)
{
	unsigned n = 0;

	for (unsigned i = 0; i < vm->max_vcpus; i++)
		n += __atomic_load_n(&vm->vcpus[i].hw_id, __ATOMIC_RELAXED) != VCPU_HW_ID_FREE;
	return n;
}

// "  3 (vcpu0 2, vcpu1 1)" into buf.
static void format_per_vcpu(const struct vm *vm, enum exit_reason r, char *buf, size_t size)
{
	size_t len = 0;

	for (unsigned i = 0; i < vm->max_vcpus && len < size; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		if (__atomic_load_n(&v->hw_id, __ATOMIC_RELAXED) == VCPU_HW_ID_FREE)
			continue;
		len += log_snprintf(
		    buf + len, size - len, "%svcpu%u %llu", len ? ", " : "", i,
		    (unsigned long long)__atomic_load_n(&v->exits[r], __ATOMIC_RELAXED));
	}
	if (!len && size)
		buf[0] = '\0';
}

void vm_print_exit_summary(const struct vm *vm, const struct exit_summary *s)
{
	uint64_t total = 0;
	char per[160];

	for (unsigned r = 0; r < EXIT_REASONS; r++)
		total += vm_exit_total(vm, (enum exit_reason)r);
	log_info("slat: exit summary: vm %s %s after %llu.%06llu s uptime, %u vCPUs\n", vm->name,
		 s->event, (unsigned long long)(s->uptime_us / 1000000),
		 (unsigned long long)(s->uptime_us % 1000000), vm_vcpus_used(vm));
	log_info("slat: exits: %llu total\n", (unsigned long long)total);
	for (unsigned r = 0; r < EXIT_REASONS; r++) {
		uint64_t n = vm_exit_total(vm, (enum exit_reason)r);
		if (!n)
			continue;
		format_per_vcpu(vm, (enum exit_reason)r, per, sizeof(per));
		log_info("slat: exits: %-14s %llu (%s)\n", exit_names[r], (unsigned long long)n,
			 per);
	}
	log_info("slat: %s: %llu table pages (max %llu), %llu invalidations, %llu cache "
		 "maintenance ops\n",
		 vm->slat_name, (unsigned long long)s->live.table_pages,
		 (unsigned long long)s->live.table_pages_max,
		 (unsigned long long)s->live.invalidations, (unsigned long long)s->live.cmos);
	log_info("slat: %s teardown: %llu table pages freed, %llu invalidations\n", vm->slat_name,
		 (unsigned long long)s->teardown_pages,
		 (unsigned long long)s->teardown_invalidations);
}

static struct log_once fault_logged;

bool vm_fault_first_report(uint64_t page)
{
	return log_once_first(&fault_logged, page);
}
