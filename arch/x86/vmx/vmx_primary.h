// SPDX-License-Identifier: Apache-2.0
//
// The Intel VT-x back end's entry points for arch/x86/primary.c.
#ifndef SLAT_ARCH_X86_VMX_VMX_PRIMARY_H
#define SLAT_ARCH_X86_VMX_VMX_PRIMARY_H

#include <stdint.h>

#include "arch/x86/vcpu.h"
#include "core/plan.h"

// Takes VMX root operation on the boot CPU with Slat's resident copy and
// continues the firmware as the primary VM under Slat's EPT: 0. On failure
// nothing has changed for the firmware: -1 (logged). Boot services needed.
int vmx_enter_hypervisor(struct slat_plan *plan, const struct x86_power_ports *power,
			 uint64_t tsc_hz);

// Runs on an application processor (from the firmware's MP services) after
// vmx_enter_hypervisor() succeeded: the same for that CPU. 0 on success.
int vmx_enter_ap(void);

#endif
