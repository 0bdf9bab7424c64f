// SPDX-License-Identifier: Apache-2.0
//
// Base layer of the SLAT engine, first floor: internal assertions
// (S2_ASSERT). Calls nothing in mm/; every other file may call it.
#include "mm/s2_internal.h"

void (*s2_assert_hook)(const char *expr, const char *file, int line);

void s2_assert_fail(const char *expr, const char *file, int line)
{
	if (s2_assert_hook) {
		s2_assert_hook(expr, file, line);
		return;
	}
	__builtin_trap();
}
