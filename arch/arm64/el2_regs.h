// SPDX-License-Identifier: Apache-2.0
//
// EL2 system registers and the bit fields Slat programs (Arm ARM DDI 0487,
// D19). Registers the assembler may not know for the baseline architecture
// are named by their S<op0>_<op1>_C<n>_C<m>_<op2> encodings.
#ifndef SLAT_ARCH_ARM64_EL2_REGS_H
#define SLAT_ARCH_ARM64_EL2_REGS_H

#include "arch/arm64/sysreg.h"

#define write_sysreg(name, v) __asm__ volatile("msr " name ", %0" ::"r"((uint64_t)(v)) : "memory")
#define isb()		      __asm__ volatile("isb" ::: "memory")
#define dsb(opt)	      __asm__ volatile("dsb " #opt ::: "memory")

#define SYSREG_ID_AA64ISAR1_EL1 "S3_0_C0_C6_1"
#define SYSREG_ID_AA64ISAR2_EL1 "S3_0_C0_C6_2"
#define SYSREG_ZCR_EL2		"S3_4_C1_C2_0"
#define SYSREG_SMCR_EL2		"S3_4_C1_C2_6"
#define SYSREG_ICC_SRE_EL2	"S3_4_C12_C9_5"
#define SYSREG_ICC_SRE_EL1	"S3_0_C12_C12_5"
#define SYSREG_ID_AA64PFR1_EL1	"S3_0_C0_C4_1"
#define SYSREG_ID_AA64SMFR0_EL1 "S3_0_C0_C4_5"
#define SMCR_FA64		(1ull << 31) // SMCR_ELx: full A64 in streaming mode

// ICC_SRE_ELx
#define ICC_SRE_SRE    (1ull << 0)
#define ICC_SRE_DFB    (1ull << 1)
#define ICC_SRE_DIB    (1ull << 2)
#define ICC_SRE_ENABLE (1ull << 3) // EL2 only: EL1 may access ICC_SRE_EL1

// HCR_EL2
#define HCR_VM	   (1ull << 0)
#define HCR_SWIO   (1ull << 1)
#define HCR_AMO	   (1ull << 5)
#define HCR_TWI	   (1ull << 13)
#define HCR_TIDCP  (1ull << 20)
#define HCR_TACR   (1ull << 21)
#define HCR_TSW	   (1ull << 22)
#define HCR_TERR   (1ull << 36)
#define HCR_IMO	   (1ull << 4)
#define HCR_FMO	   (1ull << 3)
#define HCR_TSC	   (1ull << 19)
#define HCR_RW	   (1ull << 31)
#define HCR_APK	   (1ull << 40)
#define HCR_API	   (1ull << 41)
#define HCR_ENSCXT (1ull << 53) // SCXTNUM_EL0/EL1 do not trap (FEAT_CSV2_2)
#define HCR_ATA	   (1ull << 56) // EL1 allocation-tag access (MTE) does not trap

// MDCR_EL2
#define MDCR_TPMCR (1ull << 5)
#define MDCR_TPM   (1ull << 6)
#define MDCR_TDA   (1ull << 9)
#define MDCR_TDOSA (1ull << 10)
#define MDCR_TDRA  (1ull << 11)

// CNTHCTL_EL2 (E2H = 0)
#define CNTHCTL_EL1PCTEN (1ull << 0)

// ICH_HCR_EL2 (GICv3): trap EL1's virtual CPU interface accesses
#define SYSREG_ICH_HCR_EL2 "S3_4_C12_C11_0"
#define ICH_HCR_TC	   (1ull << 10)
#define ICH_HCR_TALL0	   (1ull << 11)
#define ICH_HCR_TALL1	   (1ull << 12)
#define ICH_HCR_TDIR	   (1ull << 14)
#define ICH_HCR_EN	   (1ull << 0) // the virtual CPU interface operates
#define ICH_HCR_NPIE	   (1ull << 3) // maintenance while no list register is pending

// The rest of the GICv3 virtual CPU interface's EL2 registers.
#define SYSREG_ICH_VTR_EL2  "S3_4_C12_C11_1"
#define SYSREG_ICH_VMCR_EL2 "S3_4_C12_C11_7"
#define ICH_VTR_LISTREGS(v) ((unsigned)((v)&0x1f) + 1)
#define ICH_VTR_PRIBITS(v)  ((unsigned)(((v) >> 29) & 7) + 1)

// CPTR_EL2 (E2H = 0)
#define CPTR_TZ	 (1ull << 8)
#define CPTR_TFP (1ull << 10)
#define CPTR_TSM (1ull << 12)
#define CPTR_TTA (1ull << 20)

// SCTLR_ELx
#define SCTLR_M	   (1ull << 0)
#define SCTLR_A	   (1ull << 1)
#define SCTLR_C	   (1ull << 2)
#define SCTLR_SA   (1ull << 3)
#define SCTLR_SA0  (1ull << 4)
#define SCTLR_I	   (1ull << 12)
#define SCTLR_NTWI (1ull << 16)
#define SCTLR_NTWE (1ull << 18)
#define SCTLR_WXN  (1ull << 19)
#define SCTLR_SPAN (1ull << 23)
// SCTLR_EL1 bits that are RES1 in Armv8.0 (11, 20, 22, 23, 28, 29).
#define SCTLR_EL1_RES1 0x30d00800ull

// SPSR / PSTATE
#define PSR_MODE_MASK 0xfull
#define PSR_MODE_EL0T 0x0ull
#define PSR_MODE_EL1T 0x4ull
#define PSR_MODE_EL1H 0x5ull
#define PSR_RW32      (1ull << 4)
#define PSR_DAIF      (0xfull << 6)
#define PSR_PAN	      (1ull << 22)
#define PSR_NZCV      (0xfull << 28)

// ESR_ELx
#define ESR_EC_SHIFT   26
#define ESR_IL	       (1ull << 25)
#define EC_UNKNOWN     0x00
#define EC_WFX	       0x01
#define EC_HVC64       0x16
#define EC_SMC64       0x17
#define EC_SYSREG      0x18
#define EC_IABT_LOW    0x20
#define EC_IABT_CUR    0x21
#define EC_DABT_LOW    0x24
#define EC_DABT_CUR    0x25
#define ISS_DABT_WNR   (1ull << 6)
#define ISS_DABT_S1PTW (1ull << 7)
#define ISS_DABT_SF    (1ull << 15)
#define ISS_DABT_SSE   (1ull << 21)
#define ISS_DABT_ISV   (1ull << 24)
#define ISS_FSC_MASK   0x3full
#define FSC_SEA	       0x10 // synchronous external abort, not on a table walk

static inline unsigned esr_ec(uint64_t esr)
{
	return (unsigned)(esr >> ESR_EC_SHIFT) & 0x3f;
}

#endif
