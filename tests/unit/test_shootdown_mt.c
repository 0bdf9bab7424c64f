// SPDX-License-Identifier: Apache-2.0
//
// The x86 primary SLAT's shootdown protocol (arch/x86/slat_shoot.c) with
// threads standing in for CPUs (also built under ThreadSanitizer):
//  - a CPU outside guest mode is neither kicked nor waited for, and flushes
//    exactly once at its next entry;
//  - a CPU in guest mode is kicked, waited for until it exits, and its next
//    entry flushes; one that never exits is reported late, with exactly one
//    kick plus one per `rekick` polls;
//  - under churn (a CPU exiting and entering as fast as it can while another
//    shoots down thousands of times), no CPU is ever reported late (a CPU
//    caught between its two entry stores is entering with the new
//    generation: the flake of t_x86_svm_secondary), and no CPU ever runs in
//    guest mode on a generation older than a finished shootdown.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "arch/x86/slat_shoot.c"

static uint32_t thread_failures;
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__atomic_fetch_add(&thread_failures, 1, __ATOMIC_RELAXED);                 \
	} while (0)

static uint64_t now_ns(void *ctx)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void relax(void *ctx)
{
	sched_yield();
}

// Kicks are counted per CPU and raise the CPU's kick flag.
static uint32_t kicks[X86_SHOOT_CPUS];
static uint32_t kick_flag[X86_SHOOT_CPUS];

static void kick(void *ctx, unsigned cpu)
{
	__atomic_fetch_add(&kicks[cpu], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&kick_flag[cpu], 1, __ATOMIC_RELEASE);
}

static const struct x86_shoot_wait wait_10s = {
    .now = now_ns, .kick = kick, .relax = relax, .ticks = 10000000000ull, .rekick = 0};

static struct x86_shoot shoot;

static int reset(void **state)
{
	memset(&shoot, 0, sizeof(shoot));
	memset(kicks, 0, sizeof(kicks));
	memset(kick_flag, 0, sizeof(kick_flag));
	thread_failures = 0;
	return 0;
}

static void test_cpu_outside_guest_is_not_waited_for(void **state)
{
	x86_shoot_enter(&shoot, 1);
	x86_shoot_exit(&shoot, 1); // CPU 1 in host mode

	struct x86_shoot_result r = x86_shoot_run(&shoot, 0, &wait_10s);

	assert_int_equal(r.gen, 1);
	assert_int_equal(r.kicked_mask, 0);
	assert_int_equal(r.late_mask, 0);
	assert_int_equal(r.polls, 0);
	assert_int_equal(kicks[1], 0);
	assert_true(x86_shoot_enter(&shoot, 1));  // flushes for generation 1 ...
	x86_shoot_exit(&shoot, 1);		  // ...
	assert_false(x86_shoot_enter(&shoot, 1)); // ... once
}

static void test_self_is_not_kicked(void **state)
{
	x86_shoot_enter(&shoot, 0);
	x86_shoot_enter(&shoot, 0); // acked generation 0
	struct x86_shoot_result r = x86_shoot_run(&shoot, 0, &wait_10s);

	assert_int_equal(r.kicked_mask, 0);
	assert_int_equal(kicks[0], 0);
}

static void test_out_of_range_cpu_is_ignored(void **state)
{
	x86_shoot_exit(&shoot, X86_SHOOT_CPUS);
	assert_false(x86_shoot_enter(&shoot, X86_SHOOT_CPUS));
	struct x86_shoot_result r = x86_shoot_run(&shoot, 0, &wait_10s);
	assert_int_equal(r.kicked_mask, 0);
}

// A CPU in guest mode until it is kicked; then one exit and one entry.
static uint32_t guest_flushes, guest_left;
static void *guest_until_kicked(void *arg)
{
	while (!__atomic_load_n(&kick_flag[2], __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&guest_left, 1, __ATOMIC_RELEASE); // the exit begins
	x86_shoot_exit(&shoot, 2);
	if (x86_shoot_enter(&shoot, 2))
		__atomic_fetch_add(&guest_flushes, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_cpu_in_guest_is_kicked_and_waited_for(void **state)
{
	pthread_t t;

	guest_flushes = guest_left = 0;
	x86_shoot_enter(&shoot, 2); // in guest mode, generation 0 acknowledged
	assert_int_equal(pthread_create(&t, NULL, guest_until_kicked, NULL), 0);
	struct x86_shoot_result r = x86_shoot_run(&shoot, 0, &wait_10s);
	uint32_t left_at_return = __atomic_load_n(&guest_left, __ATOMIC_ACQUIRE);
	pthread_join(t, NULL);

	assert_int_equal(left_at_return, 1); // waited for the exit

	assert_int_equal(r.kicked_mask, 1u << 2);
	assert_int_equal(r.late_mask, 0);
	assert_int_equal(kicks[2], 1);
	assert_int_equal(guest_flushes, 1);
	assert_int_equal(shoot.cpu[2].acked, r.gen);
}

static void test_cpu_that_never_exits_is_late(void **state)
{
	const struct x86_shoot_wait w = {
	    .now = now_ns, .kick = kick, .relax = relax, .ticks = 50000000ull, .rekick = 64};

	x86_shoot_enter(&shoot, 3); // and never leaves
	x86_shoot_exit(&shoot, 5);
	struct x86_shoot_result r = x86_shoot_run(&shoot, 1, &w);

	assert_int_equal(r.kicked_mask, 1u << 3);
	assert_int_equal(r.late_mask, 1u << 3);
	assert_true(r.polls > 0);
	assert_int_equal(kicks[3], 1 + r.polls / 64); // the first kick, then one per 64 polls
	assert_int_equal(kicks[5], 0);
}

// ---- churn: the entering CPU is never late, and never runs stale ----------------

#define CHURN_SHOOTS 20000
static uint64_t done_gen; // the last finished shootdown
static uint32_t churn_stop;
static uint64_t churn_entries;

static void *churn_cpu(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		x86_shoot_enter(&shoot, cpu);
		// In guest mode: every shootdown finished so far has this entry's
		// generation (or a later one) acknowledged.
		uint64_t done = __atomic_load_n(&done_gen, __ATOMIC_ACQUIRE);
		CHECK(__atomic_load_n(&shoot.cpu[cpu].acked, __ATOMIC_RELAXED) >= done);
		__atomic_store_n(&kick_flag[cpu], 0, __ATOMIC_RELAXED);
		x86_shoot_exit(&shoot, cpu);
		__atomic_fetch_add(&churn_entries, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_churn_never_late_never_stale(void **state)
{
	pthread_t t[2];
	unsigned late = 0, kicked = 0;

	churn_stop = 0;
	done_gen = 0;
	churn_entries = 0;
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn_cpu, (void *)(uintptr_t)(1 + i)),
				 0);
	while (__atomic_load_n(&churn_entries, __ATOMIC_ACQUIRE) < 1000)
		sched_yield(); // both CPUs churning
	for (unsigned n = 0; n < CHURN_SHOOTS; n++) {
		struct x86_shoot_result r = x86_shoot_run(&shoot, 0, &wait_10s);
		late += __builtin_popcount(r.late_mask);
		kicked += __builtin_popcount(r.kicked_mask);
		__atomic_store_n(&done_gen, r.gen, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	print_message("churn: %u shootdowns, %u kicks, %llu entries\n", CHURN_SHOOTS, kicked,
		      (unsigned long long)churn_entries);
	assert_int_equal(late, 0);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(shoot.gen, CHURN_SHOOTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_cpu_outside_guest_is_not_waited_for, reset),
	    cmocka_unit_test_setup(test_self_is_not_kicked, reset),
	    cmocka_unit_test_setup(test_out_of_range_cpu_is_ignored, reset),
	    cmocka_unit_test_setup(test_cpu_in_guest_is_kicked_and_waited_for, reset),
	    cmocka_unit_test_setup(test_cpu_that_never_exits_is_late, reset),
	    cmocka_unit_test_setup(test_churn_never_late_never_stale, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
