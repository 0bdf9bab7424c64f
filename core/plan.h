// SPDX-License-Identifier: Apache-2.0
//
// The hand-off from boot/ (which talks to the firmware) to the architecture
// back end that turns the machine into a hypervisor (arch/arch.h,
// arch_enter_hypervisor). Plain data, no firmware types: the back end copies
// it into Slat's own memory before the firmware is deprivileged.
#ifndef SLAT_CORE_PLAN_H
#define SLAT_CORE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fw_info.h"
#include "core/region.h"

#define PLAN_MAX_RANGES 128

enum plan_mem_kind {
	PLAN_MEM_NORMAL, // RAM and ROM/flash: cacheable in the primary's map
	PLAN_MEM_DEVICE, // MMIO the firmware reports
};

struct plan_range {
	uint64_t base, size; // page-aligned
	enum plan_mem_kind kind;
};

struct slat_plan {
	struct region region;	 // Slat's reserved memory; the resident image is at its base
	uint64_t image_base;	 // slat.efi as the firmware loaded it
	uint64_t image_size;	 // bytes (SizeOfImage)
	uint64_t resident_base;	 // the copy's base (== region.base)
	struct fw_info fw;	 // console UART etc. (plain data)
	unsigned log_level;	 // enum log_level for the resident copy
	unsigned zap_mode;	 // enum cfg_zap_mode from slat.cfg: the SLAT's memslot policy
	unsigned nested_reclaim; // enum cfg_nested_reclaim from slat.cfg (nested SVM)
	unsigned nested_quota;	 // shadow pages at most, from slat.cfg (nested SVM)
	unsigned n_ranges;	 // memory the firmware reports, sorted, merged
	struct plan_range ranges[PLAN_MAX_RANGES];
};

#endif

// Adds [base, base + size) with `kind` where no range covers it yet (ranges
// already present win), keeping the list sorted and merged. Returns false when
// the list is full (what did not fit is left out).
bool plan_fill_gaps(struct slat_plan *plan, uint64_t base, uint64_t size, enum plan_mem_kind kind);
