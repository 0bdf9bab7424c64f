// SPDX-License-Identifier: Apache-2.0
//
// arm64's EL2 policy (arch/arm64/el2_policy.c): which HCR_EL2, SMCR_EL2 and
// ICC_SRE values the primary runs under for the ID registers of real CPU
// models (values read from QEMU 7.2's cortex-a72 and max by the exc payload
// of tests/arch/arm64), and the PSCI power_state decode. A bit left out is a
// trap the guest would not have without Slat (issue 13).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

// Pure C with no system register access: compiled here as is.
#include "arch/arm64/el2_policy.c"
#include "core/hcall_abi.h"

// QEMU 7.2 -cpu cortex-a72 (GICv3 machine; the GIC field is 0 on GICv2).
static const struct arm64_id_regs a72 = {.pfr0 = 0x1000222, .pfr1 = 0, .mmfr1 = 0};
// QEMU 7.2 -cpu max,pauth-impdef=on with mte=on, GICv3.
static const struct arm64_id_regs max_mte = {
    .pfr0 = 0x1201001121110222,
    .pfr1 = 0x1000321,
    .mmfr1 = 0x11010211122,
    .isar1 = 0x11111110211102,
    .smfr0 = 1ull << 63,
};

static void cortex_a72_gets_the_base_controls(void **state)
{
	struct arm64_cpu_features f;

	(void)state;
	arm64_features_decode(&a72, &f);
	assert_false(f.has_pauth);
	assert_false(f.has_mte);
	assert_false(f.has_scxtnum);
	assert_true(f.gic_sysregs);
	assert_int_equal(arm64_hcr_el2_for(&f), 0x80080001);
}

static void max_gets_pauth_ata_and_enscxt(void **state)
{
	struct arm64_cpu_features f;

	(void)state;
	arm64_features_decode(&max_mte, &f);
	assert_true(f.has_pauth && f.has_mte && f.has_scxtnum && f.has_sme && f.has_sme_fa64);
	assert_int_equal(arm64_hcr_el2_for(&f), 0x120030080080001ull);
	assert_int_equal(arm64_smcr_el2_for(&f), 0x8000000f);
}

// MTE field 1: the instructions only; no tag registers, so no ATA.
static void mte_instructions_only_gets_no_ata(void **state)
{
	struct arm64_id_regs id = max_mte;
	struct arm64_cpu_features f;

	(void)state;
	id.pfr1 = (id.pfr1 & ~0xf00ull) | 0x100;
	arm64_features_decode(&id, &f);
	assert_false(f.has_mte);
	assert_int_equal(arm64_hcr_el2_for(&f) & HCR_ATA, 0);
}

// CSV2 1 with CSV2_frac 2 (FEAT_CSV2_1p2) also has SCXTNUM.
static void csv2_1p2_gets_enscxt(void **state)
{
	struct arm64_id_regs id = a72;
	struct arm64_cpu_features f;

	(void)state;
	id.pfr0 |= 1ull << 56;
	id.pfr1 |= 2ull << 32;
	arm64_features_decode(&id, &f);
	assert_true(arm64_hcr_el2_for(&f) & HCR_ENSCXT);
}

static void sme_without_fa64_keeps_fa64_clear(void **state)
{
	struct arm64_id_regs id = max_mte;
	struct arm64_cpu_features f;

	(void)state;
	id.smfr0 = 0;
	arm64_features_decode(&id, &f);
	assert_int_equal(arm64_smcr_el2_for(&f), 0xf);
}

static void gicv2_never_touches_icc_registers(void **state)
{
	struct arm64_id_regs id = a72;
	struct arm64_cpu_features f;
	uint64_t el2 = 0, el1 = 0;
	bool w = false;

	(void)state;
	id.pfr0 &= ~(0xfull << 24); // QEMU gic-version=2: no system registers
	arm64_features_decode(&id, &f);
	assert_false(f.gic_sysregs);
	assert_false(arm64_icc_sre_for(&f, &el2, &el1, &w));
}

static void gicv3_keeps_the_firmware_mode(void **state)
{
	struct arm64_cpu_features f;
	uint64_t el2 = 0, el1 = 0;
	bool w = false;

	(void)state;
	arm64_features_decode(&a72, &f);
	f.sre_el2 = 0xf; // edk2 on QEMU: system registers
	assert_true(arm64_icc_sre_for(&f, &el2, &el1, &w));
	assert_int_equal(el2, 0xf);
	assert_true(w);
	assert_int_equal(el1, 0x7);
	f.sre_el2 = 0; // a firmware on the legacy memory-mapped interface
	assert_true(arm64_icc_sre_for(&f, &el2, &el1, &w));
	assert_int_equal(el2, ICC_SRE_ENABLE);
	assert_false(w);
}

static void suspend_power_state_formats(void **state)
{
	(void)state;
	assert_false(arm64_psci_suspend_is_powerdown(0, false));
	assert_true(arm64_psci_suspend_is_powerdown(1u << 16, false));
	assert_false(arm64_psci_suspend_is_powerdown(1u << 30, false));
	assert_true(arm64_psci_suspend_is_powerdown(1u << 30, true));
	assert_false(arm64_psci_suspend_is_powerdown(1u << 16, true));
}

// Secondaries: interrupts, SErrors, SMC, WFI, set/way, IMPDEF and ACTLR
// registers trap; PAuth, MTE and SCXTNUM registers trap (API/APK/ATA/EnSCXT
// clear) even where the primary has them; TERR only with FEAT_RAS.
static void secondary_hcr(void **state)
{
	struct arm64_cpu_features f;

	(void)state;
	arm64_features_decode(&a72, &f);
	assert_false(f.has_ras);
	assert_int_equal(arm64_hv_hcr_for(&f), 0x8078203bull);
	arm64_features_decode(&max_mte, &f);
	assert_true(f.has_ras);
	assert_int_equal(arm64_hv_hcr_for(&f), 0x108078203bull);
	assert_int_equal(arm64_hv_hcr_for(&f) & (HCR_API | HCR_APK | HCR_ATA | HCR_ENSCXT), 0);
	assert_int_equal(arm64_hv_mdcr_for(6), 0xe66);
	assert_int_equal(arm64_hv_mdcr_for(0x26), 0xe66); // HPMN is 5 bits
}

static void secondary_pstate(void **state)
{
	struct arm64_cpu_features a, m;

	(void)state;
	arm64_features_decode(&a72, &a);
	arm64_features_decode(&max_mte, &m);
	assert_true(arm64_hv_pstate_ok(&a, 0x3c5));		// EL1h, DAIF
	assert_true(arm64_hv_pstate_ok(&a, 0x3c4));		// EL1t
	assert_true(arm64_hv_pstate_ok(&a, 0xf0000000));	// EL0t, NZCV
	assert_false(arm64_hv_pstate_ok(&a, 0x3c9));		// EL2h
	assert_false(arm64_hv_pstate_ok(&a, 0x3c8));		// EL2t
	assert_false(arm64_hv_pstate_ok(&a, 0x3cd));		// EL3h
	assert_false(arm64_hv_pstate_ok(&a, 0x3c1));		// reserved mode
	assert_false(arm64_hv_pstate_ok(&a, 0x10));		// AArch32 user
	assert_false(arm64_hv_pstate_ok(&a, 0x3c5 | 1u << 20)); // IL
	assert_false(arm64_hv_pstate_ok(&a, 0x3c5 | 1u << 21)); // SS
	assert_false(arm64_hv_pstate_ok(&a, 0x3c5 | 1ull << 32));
	assert_false(arm64_hv_pstate_ok(&a, 0x3c5 | PSR_PAN)); // no FEAT_PAN on the A72
	assert_true(arm64_hv_pstate_ok(&m, 0x3c5 | PSR_PAN));
}

#define R(op0, op1, crn, crm, op2) HC_SYSREG_ID(op0, op1, crn, crm, op2)

// What Linux programs at boot although its registers trap (the ID registers
// say the PMU and the debug registers exist): emulated; the rest UNDEFINED.
static void secondary_sysregs(void **state)
{
	(void)state;
	assert_int_equal(arm64_hv_sysreg_action(R(2, 0, 0, 2, 2)), HV_SYSREG_MDSCR);  // MDSCR_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(2, 0, 1, 0, 4)), HV_SYSREG_RAZ_WI); // OSLAR_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(2, 0, 1, 3, 4)), HV_SYSREG_RAZ_WI); // OSDLR_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(2, 0, 0, 0, 5)), HV_SYSREG_RAZ_WI); // DBGBCR0_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(2, 0, 0, 3, 6)), HV_SYSREG_RAZ_WI); // DBGWVR3_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(2, 3, 0, 1, 0)), HV_SYSREG_RAZ_WI); // MDCCSR_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(2, 1, 0, 1, 0)), HV_SYSREG_UNDEF);  // TRCPRGCTLR
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 9, 14, 0)),
			 HV_SYSREG_RAZ_WI); // PMUSERENR_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 9, 12, 0)), HV_SYSREG_RAZ_WI); // PMCR_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 9, 13, 0)),
			 HV_SYSREG_RAZ_WI); // PMCCNTR_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 14, 8, 0)),
			 HV_SYSREG_RAZ_WI); // PMEVCNTR0_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 14, 15, 7)), HV_SYSREG_RAZ_WI); // PMCCFILTR
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 9, 14, 1)),
			 HV_SYSREG_RAZ_WI); // PMINTENSET_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 9, 9, 0)),
			 HV_SYSREG_UNDEF); // PMSCR_EL1 (SPE)
	assert_int_equal(arm64_hv_sysreg_action(R(3, 3, 14, 2, 1)),
			 HV_SYSREG_UNDEF);					     // CNTP_CTL_EL0
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 1, 0, 1)), HV_SYSREG_UNDEF); // ACTLR_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 2, 1, 0)),
			 HV_SYSREG_UNDEF); // APIAKEYLO_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 12, 12, 5)), HV_SYSREG_ICC_SRE);
	assert_int_equal(arm64_hv_sysreg_action(HC_SYSREG_ICC_SGI1R), HV_SYSREG_SGI);
	assert_int_equal(arm64_hv_sysreg_action(HC_SYSREG_ICC_ASGI1R), HV_SYSREG_SGI);
	assert_int_equal(arm64_hv_sysreg_action(HC_SYSREG_ICC_SGI0R), HV_SYSREG_SGI);
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 12, 11, 3)),
			 HV_SYSREG_UNDEF);					     // ICC_RPR_EL1
	assert_int_equal(arm64_hv_sysreg_action(R(3, 0, 4, 6, 0)), HV_SYSREG_UNDEF); // ICC_PMR_EL1
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cortex_a72_gets_the_base_controls),
	    cmocka_unit_test(max_gets_pauth_ata_and_enscxt),
	    cmocka_unit_test(mte_instructions_only_gets_no_ata),
	    cmocka_unit_test(csv2_1p2_gets_enscxt),
	    cmocka_unit_test(sme_without_fa64_keeps_fa64_clear),
	    cmocka_unit_test(gicv2_never_touches_icc_registers),
	    cmocka_unit_test(gicv3_keeps_the_firmware_mode),
	    cmocka_unit_test(suspend_power_state_formats),
	    cmocka_unit_test(secondary_hcr),
	    cmocka_unit_test(secondary_pstate),
	    cmocka_unit_test(secondary_sysregs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
