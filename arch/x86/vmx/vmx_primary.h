// SPDX-License-Identifier: Apache-2.0
//
// The Intel VT-x back end's entry points for arch/x86/primary.c.
#ifndef SLAT_ARCH_X86_VMX_VMX_PRIMARY_H
#define SLAT_ARCH_X86_VMX_VMX_PRIMARY_H

#include <stdint.h>

#include "arch/x86/vcpu.h"
#include "core/plan.h"

// Takes VMX root operation on every CPU (APs through the firmware's MP
// services, then the boot CPU) with Slat's resident copy and continues the
// firmware as the primary VM under Slat's EPT: 0, in guest mode. On failure
// before the boot CPU changed anything: -1 (logged). Boot services needed;
// installs a minimal MADT when the firmware has none.
int vmx_enter_primary(struct slat_plan *plan);

#endif
