// SPDX-License-Identifier: Apache-2.0
//
// What the arm64 boot CPU offers a hypervisor (arch/arch.h's opaque record).
#ifndef SLAT_ARCH_ARM64_CAPS_H
#define SLAT_ARCH_ARM64_CAPS_H

#include <stdbool.h>
#include <stdint.h>

struct arch_caps {
	uint64_t midr;
	unsigned current_el;			   // 0..3
	uint64_t hcr_el2;			   // valid only at EL2
	uint64_t pfr0, mmfr0, mmfr1, mmfr2, isar0; // raw ID registers
	unsigned pa_bits;			   // decoded PARange (0: reserved encoding)
	unsigned vmid_bits;			   // 8 or 16
	bool el2_implemented;			   // ID_AA64PFR0.EL2 != 0
	bool s2_4k_granule;			   // stage-2 4 KiB granule (ID_AA64MMFR0.TGran4_2)
	bool vhe;				   // ID_AA64MMFR1.VH
	bool fwb;				   // ID_AA64MMFR2.FWB (stage-2 forced write-back)
	unsigned tlb;	     // ID_AA64ISAR0.TLB: 0 none, 1 outer-shareable, 2 + range
	unsigned gic_sysreg; // ID_AA64PFR0.GIC: 0 none, 1 GICv3/v4, 3 GICv4.1
	unsigned gic_fw;     // GIC version the firmware describes (0: unknown)
	const char *gic_fw_source;
};

#endif
