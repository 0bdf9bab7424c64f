// SPDX-License-Identifier: Apache-2.0
//
// core/vm under concurrency: CPUs that come up at the same time each get
// their own vCPU record (also when several race for the same id), and each
// CPU's exit counts add up while another CPU reads the totals.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/vm.h"
#include "core/vm_arch.h"

#define THREADS 8
#define EXITS	20000

static struct vm vm;
static struct vcpu vcpus[THREADS];
static struct vcpu *got[2 * THREADS];

static void *cpu(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	// Two threads per id: both must land on the same record.
	struct vcpu *v = vm_vcpu_for(&vm, 0x100 + i / 2);
	got[i] = v;
	if (v && (i & 1) == 0) {
		for (int n = 0; n < EXITS; n++)
			vcpu_count_exit(v, EXIT_FIRMWARE_CALL);
	}
	return NULL;
}

static void *reader(void *arg)
{
	uint64_t last = 0;
	for (int n = 0; n < 1000; n++) {
		uint64_t now = vm_exit_total(&vm, EXIT_FIRMWARE_CALL);
		(void)last;
		last = now;
	}
	return NULL;
}

static void test_concurrent_bring_up(void **state)
{
	pthread_t t[2 * THREADS], r;

	vm_init(&vm, 0, "primary", "stage-2", NULL, vcpus, THREADS);
	pthread_create(&r, NULL, reader, NULL);
	for (uintptr_t i = 0; i < 2 * THREADS; i++)
		pthread_create(&t[i], NULL, cpu, (void *)i);
	for (int i = 0; i < 2 * THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_join(r, NULL);

	for (int i = 0; i < 2 * THREADS; i += 2) {
		assert_non_null(got[i]);
		assert_ptr_equal(got[i], got[i + 1]);
		assert_int_equal(got[i]->hw_id, 0x100 + i / 2);
		for (int j = 0; j < i; j += 2)
			assert_ptr_not_equal(got[i], got[j]);
	}
	assert_int_equal(vm_exit_total(&vm, EXIT_FIRMWARE_CALL), (uint64_t)THREADS * EXITS);
}

// vCPU threads of one VM run guests through the hosted contract; one of them
// powers the VM off: every thread returns, exactly one owns the shutdown,
// and every exit made is counted once.
static struct vm run_vm;
static struct vcpu run_vcpus[THREADS];
static int shutdown_owners;

static struct host_exit spin_step(struct vcpu *v, void *ctx)
{
	// vCPU 0 powers off after 1000 entries; the others exit forever.
	bool off = v->index == 0 && v->arch.entries == 1000;

	return (struct host_exit){.reason = EXIT_WAIT, .power_off = off};
}

static void *run_cpu(void *arg)
{
	static const struct host_guest g = {spin_step, NULL};
	struct vcpu *v = vm_vcpu_for(&run_vm, (uintptr_t)arg);

	vcpu_arch_init(v);
	v->arch.guest = &g;
	vcpu_arch_run(v);
	if (vm_begin_shutdown(&run_vm)) // late callers must lose
		__atomic_fetch_add(&shutdown_owners, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_concurrent_run_and_power_off(void **state)
{
	pthread_t t[THREADS];

	vm_init(&run_vm, 1, "sec", "none", NULL, run_vcpus, THREADS);
	vm_arch_init(&run_vm);
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run_cpu, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(shutdown_owners, 0); // vCPU 0's exit owned it already
	uint64_t entries = 0;
	for (int i = 0; i < THREADS; i++) {
		entries += run_vcpus[i].arch.entries;
		assert_int_equal(run_vcpus[i].state, VCPU_STOPPED);
	}
	assert_int_equal(vm_exit_total(&run_vm, EXIT_WAIT), entries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_concurrent_bring_up),
	    cmocka_unit_test(test_concurrent_run_and_power_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
