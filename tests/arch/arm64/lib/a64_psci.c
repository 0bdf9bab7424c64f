// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/lib/a64_psci.c - PSCI calls on the conduit the firmware
 * names in the FADT: QEMU virt uses HVC without EL2 (the bare run) and SMC
 * with EL2 (under Slat), so the payloads never name it in a verdict.
 */
#include "tests/arch/arm64/lib/a64.h"

static bool use_hvc;

bool a64_psci_init(void)
{
	unsigned flags = a64_fadt_arm_flags();
	use_hvc = (flags & 2) != 0;
	ta_info("FADT ARM boot flags 0x%x: PSCI conduit %s", flags, use_hvc ? "HVC" : "SMC");
	return (flags & 1) != 0;
}

int64_t a64_psci(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	return use_hvc ? a64_hvc(fn, a1, a2, a3) : a64_smc(fn, a1, a2, a3);
}

bool a64_psci_uses_hvc(void)
{
	return use_hvc;
}
