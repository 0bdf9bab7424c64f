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
// The last call of the architecture's range (host_hv_arch_call, a recorder
// the tests give hv_init as hv_boot.arch_call; it answers HC_E_UNKNOWN): its
// number and raw argument registers.
extern uint32_t host_hv_arch_fn;
extern uint64_t host_hv_arch_args[HC_NARGS];
int host_hv_arch_call(uint32_t fn, const uint64_t *a, uint64_t *res);

// The primary's SLAT hooks (arch_hv_primary_unmap / _map): every call is
// recorded in order; `host_hv_primary_fail` > 0 makes that many next calls
// (of either kind) answer HC_E_NOMEM and record nothing.
struct host_hv_range {
	uint64_t pa, pages;
	int unmap; // 1: unmap, 0: map
};
#define HOST_HV_RANGES 4096
extern struct host_hv_range host_hv_ranges[HOST_HV_RANGES];
extern unsigned host_hv_nranges;
extern unsigned host_hv_primary_fail;
// Net state of a page in the primary's (simulated) map: 1 when the recorded
// calls leave it unmapped.
int host_hv_primary_unmapped(uint64_t pa);

#endif
