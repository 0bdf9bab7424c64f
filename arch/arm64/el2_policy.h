// SPDX-License-Identifier: Apache-2.0
//
// The EL2 settings the primary runs under, decided from the CPU's ID
// registers: pure functions (no system register access), unit-tested hosted
// in tests/unit/test_arm64_el2_policy.c. hyp.c reads the registers, vm.c and
// psci.c apply the answers.
#ifndef SLAT_ARCH_ARM64_EL2_POLICY_H
#define SLAT_ARCH_ARM64_EL2_POLICY_H

#include <stdbool.h>
#include <stdint.h>

// Raw ID registers of the boot CPU (smfr0 only read when SME exists).
struct arm64_id_regs {
	uint64_t pfr0, pfr1, mmfr1, isar1, isar2, smfr0;
};

// Features of the physical CPUs that decide how EL2 is set up (read once on
// the boot CPU; every CPU of the machine is assumed to have them).
struct arm64_cpu_features {
	bool has_sve, has_sme, has_pan, has_pauth;
	bool has_sme_fa64; // FEAT_SME_FA64: streaming mode may run all of A64
	bool has_scxtnum;  // FEAT_CSV2_2 / FEAT_CSV2_1p2: SCXTNUM_ELx exist
	bool has_mte;	   // FEAT_MTE2 (ID_AA64PFR1_EL1.MTE >= 2): tags in memory
	bool gic_sysregs;  // GICv3 CPU interface system registers (ID_AA64PFR0_EL1.GIC)
	bool has_ras;	   // FEAT_RAS: error record registers (HCR_EL2.TERR exists)
	uint64_t sre_el2;  // the firmware's ICC_SRE_EL2 (valid with gic_sysregs)
};

// Everything but sre_el2, which the caller reads when gic_sysregs is set.
void arm64_features_decode(const struct arm64_id_regs *id, struct arm64_cpu_features *f);

// HCR_EL2 for the primary: RW, TSC (SMCs trap: PSCI), VM; API/APK, ATA and
// EnSCXT where the CPU has what they enable, so EL1 does not trap on it.
uint64_t arm64_hcr_el2_for(const struct arm64_cpu_features *f);

// HCR_EL2 for a secondary VM (docs/secondary-vms-arm64.md): stage 2 on,
// physical interrupts and SErrors to EL2, SMC, WFI, set/way maintenance,
// implementation-defined and ACTLR registers, RAS records trapped; no
// pointer authentication, MTE tags or SCXTNUM (their registers trap).
uint64_t arm64_hv_hcr_for(const struct arm64_cpu_features *f);

// MDCR_EL2 for a secondary: PMU, debug and trace registers trap (they are the
// primary's), HPMN kept at `hpmn`.
uint64_t arm64_hv_mdcr_for(unsigned hpmn);

// What a secondary's trapped MSR / MRS gets (docs/secondary-vms-arm64.md);
// `id` is the register in ESR_EL2's ISS form (HC_SYSREG_ID: Op0, Op2, Op1,
// CRn, CRm). The PMU and the debug registers trap (MDCR_EL2 above), but the
// CPU's ID registers, which a secondary reads untrapped, say they exist, and
// Linux programs them at boot: they read as zero and ignore writes (a PMU
// without counters, breakpoints and watchpoints that never match, an empty
// debug channel), as KVM answers them for a vCPU without a PMU or debug
// state. MDSCR_EL1 keeps the guest's value without putting it in effect.
enum arm64_hv_sysreg_action {
	HV_SYSREG_UNDEF,   // UNDEFINED for the guest
	HV_SYSREG_RAZ_WI,  // reads zero, writes ignored
	HV_SYSREG_MDSCR,   // the guest's MDSCR_EL1, kept per vCPU, not in effect
	HV_SYSREG_ICC_SRE, // ICC_SRE_EL1: the system-register interface, fixed
	HV_SYSREG_SGI,	   // ICC_SGI1R / ASGI1R / SGI0R: the VMM's GIC (with one)
};
enum arm64_hv_sysreg_action arm64_hv_sysreg_action(uint32_t id);

// Is `pstate` a state SET_REGS may give a secondary vCPU? AArch64 EL1h, EL1t
// or EL0t; only NZCV, DAIF, the mode and (with FEAT_PAN) PAN may be set.
bool arm64_hv_pstate_ok(const struct arm64_cpu_features *f, uint64_t pstate);

// SMCR_EL2 (with SME): the largest length, FA64 where implemented.
uint64_t arm64_smcr_el2_for(const struct arm64_cpu_features *f);

// The GICv3 CPU interface mode EL1 gets. Returns false when the ICC_*
// registers must not be touched at all (GICv2: they are UNDEFINED); else
// *el2 is ICC_SRE_EL2's value and, when *write_el1, *el1 ICC_SRE_EL1's.
bool arm64_icc_sre_for(const struct arm64_cpu_features *f, uint64_t *el2, uint64_t *el1,
		       bool *write_el1);

// PSCI CPU_SUSPEND: does `power_state` ask for a power-down state? StateType
// is bit 16 in the original format, bit 30 in the extended one.
bool arm64_psci_suspend_is_powerdown(uint64_t power_state, bool extended_format);

#endif
