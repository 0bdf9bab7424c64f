// SPDX-License-Identifier: Apache-2.0
//
// ABI 1.3's x86 calls (docs/hypercalls.md; x86_hv_call in hv.c): their
// decoder and a secondary vCPU's CPUID table. Pure functions over registers,
// struct hc_cpuid_entry arrays and a "supported" callback (Slat's default
// policy for a secondary, hv_exit.c), so that the rules run hosted (cmocka).
#ifndef SLAT_ARCH_X86_HV_CPUID_H
#define SLAT_ARCH_X86_HV_CPUID_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hcall_args.h"

// VCPU_SET_CPUID, CPUID_SUPPORTED or VCPU_MSRS (flags: 1 = write) from `fn`
// and a0..a5 into *out, or the precise error (*out untouched) in the generic
// decoder's order: function (HC_E_UNKNOWN), unused registers, arguments.
int x86_hv_call_decode(uint32_t fn, const uint64_t *a, struct hc_call *out);

// Slat's answer for (leaf, subleaf): EAX, EBX, ECX, EDX.
typedef void (*x86_cpuid_source)(uint32_t leaf, uint32_t sub, uint32_t out[4]);

// Every leaf and subleaf `src` answers, as a table: the basic, hypervisor
// (0x40000000) and extended (0x80000000) ranges up to their max leaf (at
// most 0x80 leaves each), the indexed leaves (4, 7, 0xb, 0xd, 0x1f,
// 0x8000001d, ...) with their subleaves. Returns the entries written (at
// most `max`; leaves beyond it are left out).
unsigned x86_cpuid_enumerate(x86_cpuid_source src, struct hc_cpuid_entry *t, unsigned max);

// Whether a VMM's table may be used: flags and padding known, and every
// feature register (leaf 1 ECX/EDX, 7.x but 7.0 EAX, 0xd.x, 0x40000001,
// 0x80000001 ECX/EDX, 0x8000000a) a subset of `src`'s bits for the same leaf and subleaf.
// *bad: the index of the first refused entry.
bool x86_cpuid_table_ok(x86_cpuid_source src, const struct hc_cpuid_entry *t, unsigned n,
			unsigned *bad);

// The table's answer as KVM gives it from KVM_SET_CPUID2's table: the first
// entry for `leaf` whose index matches (or that is not indexed); zeros if none.
void x86_cpuid_lookup(const struct hc_cpuid_entry *t, unsigned n, uint32_t leaf, uint32_t sub,
		      uint32_t out[4]);

#endif
