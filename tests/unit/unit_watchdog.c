// SPDX-License-Identifier: Apache-2.0
//
// The per-test watchdog of the cmocka unit tests (see unit_watchdog.h). Kept
// out of the header so that test files see no <unistd.h> (arch/x86/cpu.h has
// its own pause()).
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "unit_watchdog.h"

#undef _cmocka_run_group_tests // the real one, below

#define UNIT_WATCHDOG_DEFAULT_S 120

static const struct CMUnitTest *unit_wd_tests;
static size_t unit_wd_next;
static const char *unit_wd_name = "(group setup)";
static unsigned unit_wd_seconds;

static void unit_wd_write(const char *s)
{
	ssize_t n = write(2, s, strlen(s));
	(void)n;
}

// Async-signal-safe: write(2) and _exit only.
static void unit_wd_fire(int sig)
{
	(void)sig;
	unit_wd_write("[  FAILED  ] ");
	unit_wd_write(unit_wd_name);
	unit_wd_write(": TIMEOUT, the test did not finish in time (hang or deadlock?)\n");
	_exit(99); // not 124: that is tests/run.sh's `timeout` killing the binary
}

static void unit_wd_arm(const char *name)
{
	unit_wd_name = name;
	alarm(unit_wd_seconds);
}

static int unit_wd_setup(void **state)
{
	const struct CMUnitTest *t = &unit_wd_tests[unit_wd_next++];

	unit_wd_arm(t->name);
	return t->setup_func ? t->setup_func(state) : 0;
}

static int unit_wd_teardown(void **state)
{
	const struct CMUnitTest *t = &unit_wd_tests[unit_wd_next - 1];
	int r = t->teardown_func ? t->teardown_func(state) : 0;

	alarm(0);
	return r;
}

// cmocka runs the tests in array order, calling the per-test setup right
// before each: that is where the alarm is armed.
int unit_run_group_tests(const char *group, const struct CMUnitTest *tests, size_t n,
			 CMFixtureFunction setup, CMFixtureFunction teardown)
{
	struct CMUnitTest *wrapped = calloc(n, sizeof(*wrapped));
	const char *env = getenv("UNIT_TEST_TIMEOUT");
	int r;

	if (!wrapped)
		return 1;
	unit_wd_seconds = env && atoi(env) > 0 ? (unsigned)atoi(env) : UNIT_WATCHDOG_DEFAULT_S;
	unit_wd_tests = tests;
	unit_wd_next = 0;
	for (size_t i = 0; i < n; i++) {
		wrapped[i] = tests[i];
		wrapped[i].setup_func = unit_wd_setup;
		wrapped[i].teardown_func = unit_wd_teardown;
	}
	signal(SIGALRM, unit_wd_fire);
	unit_wd_arm("(group setup)");
	r = _cmocka_run_group_tests(group, wrapped, n, setup, teardown);
	alarm(0);
	free(wrapped);
	return r;
}
