// SPDX-License-Identifier: Apache-2.0
//
// arm64 exception -> core exit reason (see exit_reason.h).
#include "arch/arm64/exit_reason.h"

#include "arch/arm64/el2_regs.h"

enum exit_reason arm64_exit_reason(uint64_t kind, uint64_t esr)
{
	if (kind != ARM64_TRAP_LOWER_A64_SYNC)
		return EXIT_OTHER;
	switch (esr_ec(esr)) {
	case EC_SMC64:
		return EXIT_FIRMWARE_CALL;
	case EC_HVC64:
		return EXIT_HYPERCALL;
	case EC_DABT_LOW:
	case EC_IABT_LOW:
		return EXIT_SLAT_FAULT;
	case EC_SYSREG:
		return EXIT_SYSREG;
	case EC_WFX:
		return EXIT_WAIT;
	default:
		return EXIT_OTHER;
	}
}
