// SPDX-License-Identifier: Apache-2.0
//
// arm64's exit decode (arch/arm64/exit_reason.c): which exit reason each EL2
// vector and ESR_EL2 exception class is counted under. The exit summary's
// figures rest on it, one count per exit.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

// Pure C with no system register access: compiled here as is (it is not
// part of the hosted library, which has no arm64 back end).
#include "arch/arm64/exit_reason.c"

static uint64_t esr(unsigned ec, uint64_t iss)
{
	return ((uint64_t)ec << ESR_EC_SHIFT) | ESR_IL | iss;
}

static void lower_a64_sync_by_class(void **state)
{
	const uint64_t k = ARM64_TRAP_LOWER_A64_SYNC;

	assert_int_equal(arm64_exit_reason(k, esr(EC_SMC64, 0)), EXIT_FIRMWARE_CALL);
	assert_int_equal(arm64_exit_reason(k, esr(EC_HVC64, 0)), EXIT_HYPERCALL);
	assert_int_equal(arm64_exit_reason(k, esr(EC_DABT_LOW, ISS_DABT_WNR | 0x7)),
			 EXIT_SLAT_FAULT);
	assert_int_equal(arm64_exit_reason(k, esr(EC_IABT_LOW, 0x7)), EXIT_SLAT_FAULT);
	assert_int_equal(arm64_exit_reason(k, esr(EC_SYSREG, 0x1234)), EXIT_SYSREG);
	assert_int_equal(arm64_exit_reason(k, esr(EC_WFX, 1)), EXIT_WAIT); // WFE
	assert_int_equal(arm64_exit_reason(k, esr(EC_WFX, 0)), EXIT_WAIT); // WFI
}

// Aborts taken at the current EL, unknown and unlisted classes are not
// second-level faults or calls: they are counted as "other".
static void other_classes_are_other(void **state)
{
	const uint64_t k = ARM64_TRAP_LOWER_A64_SYNC;
	unsigned listed[] = {EC_SMC64, EC_HVC64, EC_DABT_LOW, EC_IABT_LOW, EC_SYSREG, EC_WFX};
	unsigned others = 0;

	for (unsigned ec = 0; ec < 64; ec++) {
		bool is_listed = false;
		for (unsigned i = 0; i < sizeof(listed) / sizeof(listed[0]); i++)
			is_listed |= listed[i] == ec;
		if (is_listed)
			continue;
		assert_int_equal(arm64_exit_reason(k, esr(ec, 0)), EXIT_OTHER);
		others++;
	}
	assert_int_equal(others, 64 - 6);
	assert_int_equal(arm64_exit_reason(k, esr(EC_DABT_CUR, 0)), EXIT_OTHER);
	assert_int_equal(arm64_exit_reason(k, esr(EC_IABT_CUR, 0)), EXIT_OTHER);
}

// Only the AArch64 synchronous vector carries a meaningful ESR_EL2: IRQ,
// FIQ, SError and every AArch32 vector are "other" whatever ESR_EL2 holds.
static void other_vectors_are_other(void **state)
{
	for (uint64_t k = ARM64_TRAP_LOWER_A64_SYNC + 1; k < ARM64_TRAP_KINDS; k++) {
		assert_int_equal(arm64_exit_reason(k, esr(EC_SMC64, 0)), EXIT_OTHER);
		assert_int_equal(arm64_exit_reason(k, esr(EC_DABT_LOW, 0)), EXIT_OTHER);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(lower_a64_sync_by_class),
	    cmocka_unit_test(other_classes_are_other),
	    cmocka_unit_test(other_vectors_are_other),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
