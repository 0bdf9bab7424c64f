// SPDX-License-Identifier: Apache-2.0
//
// The arm64 part of core's VM and vCPU records (core/vm.h). Transitional: the
// vCPU still points at arch/arm64/hyp.h's per-CPU record.
#ifndef SLAT_ARCH_ARM64_VM_ARCH_TYPES_H
#define SLAT_ARCH_ARM64_VM_ARCH_TYPES_H

#include <stdint.h>

struct arm64_pcpu;

struct vcpu_arch {
	struct arm64_pcpu *pcpu;
};

struct vm_arch {
	uint64_t start_cnt; // CNTPCT_EL0 when the VM started
};

#endif
