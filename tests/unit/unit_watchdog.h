// SPDX-License-Identifier: Apache-2.0
//
// Per-test watchdog of the cmocka unit tests. The hosted build force-includes
// this header into every tests/unit/test_*.c (mk/hosted.mk), so no test can
// forget it: each cmocka test runs under an alarm, and a test that does not
// finish in time (a deadlock, a lost wake-up) fails with its name instead of
// hanging the run. tests/run.sh also puts a `timeout` around each binary.
//
// UNIT_TEST_TIMEOUT (seconds, environment) overrides the default.
#ifndef SLAT_TESTS_UNIT_WATCHDOG_H
#define SLAT_TESTS_UNIT_WATCHDOG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

// Runs the group with every test under an armed alarm (unit_watchdog.c).
int unit_run_group_tests(const char *group, const struct CMUnitTest *tests, size_t n,
			 CMFixtureFunction setup, CMFixtureFunction teardown);

#define _cmocka_run_group_tests unit_run_group_tests

#endif
