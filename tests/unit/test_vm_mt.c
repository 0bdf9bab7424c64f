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

	vm_init(&vm, "primary", "stage-2", vcpus, THREADS);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_concurrent_bring_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
