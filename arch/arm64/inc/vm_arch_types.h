// SPDX-License-Identifier: Apache-2.0
//
// The arm64 part of core's VM and vCPU records (core/vm.h). What belongs to a
// physical CPU (its EL2 stack, Slat's EL2 translation) stays in
// arch/arm64/hyp.h's `struct arm64_pcpu`, which points at the vCPU it runs.
#ifndef SLAT_ARCH_ARM64_VM_ARCH_TYPES_H
#define SLAT_ARCH_ARM64_VM_ARCH_TYPES_H

#include <stdint.h>

// A VM's stage-2 (arch/arm64/s2.c) and the VTCR_EL2/VTTBR_EL2 that select it.
struct arm64_s2 {
	uint64_t root; // physical address of the (concatenated) root tables
	uint64_t vtcr;
	uint64_t vttbr;
	unsigned ipa_bits;
	uint64_t blocks_1g, blocks_2m, pages_4k; // leaves of the eager map
};

// Where a vCPU first enters EL1 (vcpu_arch_run). The caller sets the EL1
// system registers that go with it (the firmware's regime for the boot CPU,
// the CPU_ON reset state for the others) before running the vCPU.
struct vcpu_arch {
	uint64_t entry_pc; // CPU_ON entry point, or the firmware's continuation
	uint64_t entry_x0; // CPU_ON context id (0 for the boot CPU)
	uint64_t entry_sp; // SP_EL1 (the firmware's stack for the boot CPU, else 0)
	// Secondary vCPUs only (arch/arm64/hv.c): the deposited page holding the
	// vCPU's registers (struct arm64_hv_vcpu); 0 for the primary's vCPUs.
	uint64_t hv_state;
};

// The EL2 controls every CPU loads while it runs one of the VM's vCPUs.
struct vm_arch {
	struct arm64_s2 s2;
	uint64_t hcr;	    // HCR_EL2
	uint64_t cptr;	    // CPTR_EL2
	uint64_t cnthctl;   // CNTHCTL_EL2
	uint64_t start_cnt; // CNTPCT_EL0 when the VM started
	uint64_t cnt_hz;    // CNTFRQ_EL0
};

#endif
