// SPDX-License-Identifier: Apache-2.0
//
// arm64 system-register access. Registers are named by their generic
// S<op0>_<op1>_C<n>_C<m>_<op2> encodings where the assembler might not know the
// name for the baseline architecture level.
#ifndef SLAT_ARCH_ARM64_SYSREG_H
#define SLAT_ARCH_ARM64_SYSREG_H

#include <stdint.h>

#define SYSREG_ID_AA64PFR0_EL1	"S3_0_C0_C4_0"
#define SYSREG_ID_AA64ISAR0_EL1 "S3_0_C0_C6_0"
#define SYSREG_ID_AA64MMFR0_EL1 "S3_0_C0_C7_0"
#define SYSREG_ID_AA64MMFR1_EL1 "S3_0_C0_C7_1"
#define SYSREG_ID_AA64MMFR2_EL1 "S3_0_C0_C7_2"
#define SYSREG_MIDR_EL1		"S3_0_C0_C0_0"
#define SYSREG_MPIDR_EL1	"S3_0_C0_C0_5"
#define SYSREG_CURRENTEL	"S3_0_C4_C2_2"
#define SYSREG_HCR_EL2		"S3_4_C1_C1_0"

#define read_sysreg(name)                                                                          \
	({                                                                                         \
		uint64_t v_;                                                                       \
		__asm__ volatile("mrs %0, " name : "=r"(v_));                                      \
		v_;                                                                                \
	})

// Field `hi:lo` of `v`.
static inline unsigned sysreg_field(uint64_t v, unsigned hi, unsigned lo)
{
	return (unsigned)((v >> lo) & ((1ull << (hi - lo + 1)) - 1));
}

#endif
