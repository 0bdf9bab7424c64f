// SPDX-License-Identifier: Apache-2.0
//
// EL2 settings from the CPU's ID registers (see el2_policy.h). Field
// positions from the Arm ARM (DDI 0487), D19.
#include "arch/arm64/el2_policy.h"

#include "arch/arm64/el2_regs.h"

static bool has_pauth(uint64_t isar1, uint64_t isar2)
{
	return sysreg_field(isar1, 7, 4) || sysreg_field(isar1, 11, 8) ||    // APA, API
	       sysreg_field(isar1, 27, 24) || sysreg_field(isar1, 31, 28) || // GPA, GPI
	       sysreg_field(isar2, 15, 12) || sysreg_field(isar2, 11, 8);    // APA3, GPA3
}

void arm64_features_decode(const struct arm64_id_regs *id, struct arm64_cpu_features *f)
{
	*f = (struct arm64_cpu_features){
	    .has_sve = sysreg_field(id->pfr0, 35, 32) != 0,
	    .has_sme = sysreg_field(id->pfr1, 27, 24) != 0,
	    .has_pan = sysreg_field(id->mmfr1, 23, 20) != 0,
	    .has_pauth = has_pauth(id->isar1, id->isar2),
	    // MTE 1 is the instructions only (no tags in memory, no tag registers).
	    .has_mte = sysreg_field(id->pfr1, 11, 8) >= 2,
	    // CSV2 >= 2, or CSV2_frac >= 2 with CSV2 1.
	    .has_scxtnum =
		sysreg_field(id->pfr0, 59, 56) >= 2 || sysreg_field(id->pfr1, 35, 32) >= 2,
	    // GICv2 machines (GIC-400, QEMU gic-version=2) have no ICC_* registers.
	    .gic_sysregs = sysreg_field(id->pfr0, 27, 24) != 0,
	    .has_ras = sysreg_field(id->pfr0, 31, 28) != 0,
	};
	f->has_sme_fa64 = f->has_sme && (id->smfr0 >> 63);
}

uint64_t arm64_hcr_el2_for(const struct arm64_cpu_features *f)
{
	// IMO/FMO/AMO stay clear: interrupts go straight to the primary (no vGIC).
	uint64_t hcr = HCR_RW | HCR_TSC | HCR_VM;

	if (f->has_pauth)
		hcr |= HCR_API | HCR_APK;
	// Without ATA, EL1's tag registers (TFSR_EL1, TFSRE0_EL1, GCR_EL1,
	// RGSR_EL1) trap to EL2 and tag accesses are disabled. Tags need Normal
	// write-back memory at both stages: the stage-2 maps RAM as MemAttr 0xF.
	if (f->has_mte)
		hcr |= HCR_ATA;
	// Without EnSCXT, EL1's (and EL0's) SCXTNUM accesses trap to EL2.
	if (f->has_scxtnum)
		hcr |= HCR_ENSCXT;
	return hcr;
}

uint64_t arm64_hv_hcr_for(const struct arm64_cpu_features *f)
{
	// IMO/FMO/AMO: a physical interrupt ends the run (the primary takes it);
	// the secondary never sees interrupts (no virtual GIC). API, APK, ATA,
	// EnSCXT stay clear: those EL1 registers are the primary's and trap.
	uint64_t hcr = HCR_RW | HCR_VM | HCR_SWIO | HCR_FMO | HCR_IMO | HCR_AMO | HCR_TWI |
		       HCR_TIDCP | HCR_TACR | HCR_TSW | HCR_TSC;

	if (f->has_ras)
		hcr |= HCR_TERR;
	return hcr;
}

uint64_t arm64_hv_mdcr_for(unsigned hpmn)
{
	return (hpmn & 0x1f) | MDCR_TPMCR | MDCR_TPM | MDCR_TDA | MDCR_TDOSA | MDCR_TDRA;
}

// ISS fields of a trapped MSR / MRS.
#define ISS_OP0(id) (((id) >> 20) & 3u)
#define ISS_OP2(id) (((id) >> 17) & 7u)
#define ISS_OP1(id) (((id) >> 14) & 7u)
#define ISS_CRN(id) (((id) >> 10) & 0xfu)
#define ISS_CRM(id) (((id) >> 1) & 0xfu)

static bool sysreg_is_pmu(uint32_t id)
{
	unsigned op1 = ISS_OP1(id), crn = ISS_CRN(id), crm = ISS_CRM(id), op2 = ISS_OP2(id);

	if (ISS_OP0(id) != 3)
		return false;
	if (op1 == 3 && crn == 9 && crm >= 12 && crm <= 14) // PMCR_EL0 ... PMOVSSET_EL0
		return true;
	if (op1 == 3 && crn == 14 && crm >= 8) // PMEVCNTR<n>, PMEVTYPER<n>, PMCCFILTR
		return true;
	// PMINTENSET_EL1, PMINTENCLR_EL1, PMMIR_EL1
	return op1 == 0 && crn == 9 && crm == 14 && (op2 == 1 || op2 == 2 || op2 == 6);
}

enum arm64_hv_sysreg_action arm64_hv_sysreg_action(uint32_t id)
{
	unsigned op0 = ISS_OP0(id), op1 = ISS_OP1(id);

	if (op0 == 2 && op1 == 0 && ISS_CRN(id) == 0 && ISS_CRM(id) == 2 && ISS_OP2(id) == 2)
		return HV_SYSREG_MDSCR;
	// Debug registers (op1 0) and the debug communication channel (op1 3);
	// op1 1 is trace, which stays UNDEFINED.
	if (op0 == 2 && (op1 == 0 || op1 == 3))
		return HV_SYSREG_RAZ_WI;
	if (sysreg_is_pmu(id))
		return HV_SYSREG_RAZ_WI;
	if (op0 == 3 && op1 == 0 && ISS_CRN(id) == 12 && ISS_CRM(id) == 12 && ISS_OP2(id) == 5)
		return HV_SYSREG_ICC_SRE;
	if (op0 == 3 && op1 == 0 && ISS_CRN(id) == 12 && ISS_CRM(id) == 11 && ISS_OP2(id) >= 5)
		return HV_SYSREG_SGI;
	return HV_SYSREG_UNDEF;
}

bool arm64_hv_pstate_ok(const struct arm64_cpu_features *f, uint64_t pstate)
{
	uint64_t mode = pstate & PSR_MODE_MASK;
	uint64_t allowed = PSR_NZCV | PSR_DAIF | PSR_MODE_MASK | (f->has_pan ? PSR_PAN : 0);

	if (pstate & PSR_RW32)
		return false;
	if (mode != PSR_MODE_EL1H && mode != PSR_MODE_EL1T && mode != PSR_MODE_EL0T)
		return false;
	return !(pstate & ~allowed);
}

uint64_t arm64_smcr_el2_for(const struct arm64_cpu_features *f)
{
	// FA64 clear would forbid EL1 the full instruction set in streaming mode
	// even when SMCR_EL1.FA64 asks for it.
	return 0xf | (f->has_sme_fa64 ? SMCR_FA64 : 0);
}

bool arm64_icc_sre_for(const struct arm64_cpu_features *f, uint64_t *el2, uint64_t *el1,
		       bool *write_el1)
{
	if (!f->gic_sysregs)
		return false;
	// The firmware's mode: the system registers, or the legacy memory-mapped
	// interface where the GIC offers it; EL1 may program ICC_SRE_EL1.
	if (!(f->sre_el2 & ICC_SRE_SRE)) {
		*el2 = ICC_SRE_ENABLE;
		*write_el1 = false;
		return true;
	}
	*el2 = ICC_SRE_SRE | ICC_SRE_DFB | ICC_SRE_DIB | ICC_SRE_ENABLE;
	*el1 = ICC_SRE_SRE | ICC_SRE_DFB | ICC_SRE_DIB;
	*write_el1 = true;
	return true;
}

bool arm64_psci_suspend_is_powerdown(uint64_t power_state, bool extended_format)
{
	return (power_state >> (extended_format ? 30 : 16)) & 1;
}
