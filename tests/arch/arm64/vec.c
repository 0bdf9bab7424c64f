// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/vec.c - SVE and SME as EL1 sees them (-cpu max): the
 * largest vector lengths EL1 can select (ZCR_EL1.LEN and SMCR_EL1.LEN all
 * ones, then RDVL / RDSVL), and whether streaming mode runs the full A64
 * instruction set when the CPU has FEAT_SME_FA64 and SMCR_EL1.FA64 asks for
 * it (an Advanced SIMD instruction in streaming mode). "absent" where the CPU
 * lacks the feature.
 */
#include "tests/arch/arm64/lib/a64.h"

#define ZCR_EL1	     "S3_0_C1_C2_0"
#define SMCR_EL1     "S3_0_C1_C2_6"
#define ID_AA64SMFR0 "S3_0_C0_C4_5"
#define CPACR_ZEN    (3ull << 16)
#define CPACR_SMEN   (3ull << 24)
#define SMCR_FA64    (1ull << 31)
#define SVE_ASM	     ".arch_extension sve\n"

static void check_sve(void)
{
	if (!a64_field(a64_mrs(A64_ID_AA64PFR0), 35, 32)) {
		ta_verdict("sve", "absent");
		return;
	}
	uint64_t zcr = a64_mrs(ZCR_EL1), vl = 0;
	a64_msr(ZCR_EL1, 0xf);
	a64_isb();
	a64_exc_arm();
	__asm__ volatile(SVE_ASM "rdvl %0, #1" : "=r"(vl));
	ta_verdict("sve-max-vl", "%llu bytes, exceptions %u", (unsigned long long)vl,
		   a64_exc.count);
	a64_msr(ZCR_EL1, zcr);
	a64_isb();
}

static void check_sme(void)
{
	if (!a64_field(a64_mrs(A64_ID_AA64PFR1), 27, 24)) {
		ta_verdict("sme", "absent");
		return;
	}
	uint64_t smfr0 = a64_mrs(ID_AA64SMFR0);
	bool fa64 = smfr0 >> 63;
	ta_verdict("sme", "present, FA64 %s", fa64 ? "implemented" : "not implemented");

	uint64_t smcr = a64_mrs(SMCR_EL1), svl = 0;
	a64_msr(SMCR_EL1, SMCR_FA64 | 0xf);
	a64_isb();
	a64_exc_arm();
	__asm__ volatile(".inst 0x04bf5820\n" /* RDSVL X0, #1 */
			 "mov %0, x0"
			 : "=r"(svl)::"x0");
	ta_verdict("sme-max-svl", "%llu bytes, exceptions %u", (unsigned long long)svl,
		   a64_exc.count);

	/* Streaming mode, then an Advanced SIMD instruction: legal only with
	 * FA64 in effect at EL1 (and every higher EL that has an SMCR). */
	a64_exc_arm();
	__asm__ volatile(".inst 0xd503437f\n" /* SMSTART SM */
			 ".inst 0x4e208400\n" /* ADD V0.16B, V0.16B, V0.16B */
			 ".inst 0xd503427f\n" /* SMSTOP SM */
			 ::
			     : "v0", "memory");
	if (a64_exc.count)
		ta_verdict("sme-streaming-advsimd", "exception EC 0x%02x ISS 0x%07x",
			   a64_ec(a64_exc.esr), a64_iss(a64_exc.esr));
	else
		ta_verdict("sme-streaming-advsimd", "runs");
	a64_msr(SMCR_EL1, smcr);
	a64_isb();
}

void ta_main(void)
{
	uint64_t cpacr = a64_mrs("cpacr_el1");

	a64_vectors_install();
	a64_msr("cpacr_el1", cpacr | CPACR_ZEN | CPACR_SMEN);
	a64_isb();
	check_sve();
	check_sme();
	a64_msr("cpacr_el1", cpacr);
	a64_isb();
	a64_vectors_restore();
}
