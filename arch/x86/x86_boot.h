// SPDX-License-Identifier: Apache-2.0
//
// x86 helpers for the loaded image (boot services still up): the probed
// capabilities, the ACPI power-off/reset description, and the SVM back end's
// entry. Internal to arch/x86.
#ifndef SLAT_ARCH_X86_X86_BOOT_H
#define SLAT_ARCH_X86_X86_BOOT_H

#include "arch/x86/caps.h"
#include "arch/x86/vcpu.h"
#include "core/plan.h"

// The record arch_probe() filled.
const struct arch_caps *x86_caps(void);

// Fills `p` from the FADT (PC defaults without one).
void x86_power_from_acpi(const void *rsdp, struct x86_power_ports *p);
// Renames the DSDT's \_S3_ so that no OS is offered S3 (Slat cannot resume
// from it); returns how many were renamed. Boot services time.
unsigned x86_acpi_hide_s3(const void *rsdp);

// Makes every CPU an SVM host with the firmware continuing as the primary VM
// (arch/x86/svm/launch.c). 0 on success, in guest mode.
int svm_enter_primary(struct slat_plan *plan);

#endif
