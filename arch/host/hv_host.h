// SPDX-License-Identifier: Apache-2.0
//
// Test controls of the hosted secondary-VM back end (arch/host/hv_arch.c).
#ifndef SLAT_ARCH_HOST_HV_HOST_H
#define SLAT_ARCH_HOST_HV_HOST_H

#include <stdint.h>

#include "core/hcall_abi.h"

struct vcpu;

// The hosted "guest" of VCPU_RUN: it drives hv_vcpu_enter / hv_vcpu_fault /
// hv_vcpu_exited as an arch entry loop would and fills *run. NULL: every
// run ends in HC_EXIT_HALT at once.
typedef int (*host_hv_guest_fn)(struct vcpu *v, struct hc_run *run);
extern host_hv_guest_fn host_hv_guest;
extern uint64_t host_hv_kicks; // arch_hv_kick_pcpu calls
// Per physical CPU: set by arch_hv_kick_pcpu; a hosted guest in guest mode
// polls it and exits (an interrupt would).
extern uint32_t host_hv_kick_flag[64];
void host_hv_set_pcpu(unsigned cpu);

#endif
