// SPDX-License-Identifier: Apache-2.0
//
// x86's calls in the architecture's range of the hypercall ABI (core/hv.h
// arch_hv_call; docs/hypercalls.md, ABI 1.3): VCPU_SET_CPUID,
// CPUID_SUPPORTED and VCPU_MSRS. The decoder is pure, so that it runs hosted
// under cmocka (tests/unit/test_hcall_args.c); the handlers are in hv.c.
#ifndef SLAT_ARCH_X86_HV_CALL_H
#define SLAT_ARCH_X86_HV_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hcall_args.h"

struct x86_hv_call {
	uint32_t fn;	// enum hc_fn
	uint32_t vm;	// SET_CPUID, MSRS
	uint32_t vcpu;	// SET_CPUID, MSRS: the index
	uint32_t count; // SET_CPUID: entries (<= HC_CPUID_MAX); MSRS: <= HC_MSR_MAX
	uint64_t pa;	// the table, list or (CPUID_SUPPORTED) result page
	bool write;	// MSRS: 1 = write
};

// `fn` and the raw argument registers a0..a5: HC_OK and *out filled, or the
// precise error (*out untouched), checked in the generic decoder's order:
// the function (HC_E_UNKNOWN), unused registers zero, then each argument.
int x86_hv_call_decode(uint32_t fn, const uint64_t *a, struct x86_hv_call *out);

#endif
