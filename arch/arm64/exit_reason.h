// SPDX-License-Identifier: Apache-2.0
//
// How arm64 names its exits in core's terms: the EL2 vector an exception came
// through and its ESR_EL2 give one `enum exit_reason`. Pure (no system
// register access), so the hosted unit tests check it too.
#ifndef SLAT_ARCH_ARM64_EXIT_REASON_H
#define SLAT_ARCH_ARM64_EXIT_REASON_H

#include <stdint.h>

#include "core/vm.h"

// Vector indexes of el2_entry.S (VBAR_EL2 offset / 0x80): 0-7 are taken at
// EL2 itself, 8-15 come from EL1/EL0 (AArch64 sync, IRQ, FIQ, SError, then
// the same for AArch32).
#define ARM64_TRAP_LOWER_A64_SYNC 8
#define ARM64_TRAP_LOWER_A32_SYNC 12
#define ARM64_TRAP_KINDS	  16

// The exit reason of an exception from the guest: SMC = firmware call,
// HVC = hypercall, a lower-EL instruction/data abort = second-level fault,
// MSR/MRS = system register, WFI/WFE = wait, anything else (IRQs, SErrors,
// AArch32, unknown classes) = other.
enum exit_reason arm64_exit_reason(uint64_t kind, uint64_t esr);

#endif
