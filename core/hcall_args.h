// SPDX-License-Identifier: Apache-2.0
//
// The pure decoder of the hypercall ABI (core/hcall_abi.h, docs/hypercalls.md) that turns the raw
// registers of a call into a checked struct hc_call or the precise error. The decoder checks only
// what the registers alone can tell (ids, alignment, wrap, bounds, must-be-zero bits); who owns a
// frame, whether a VM exists, etc. is for the handler (core/own.h and the VM records) at run time.
#ifndef SLAT_CORE_HCALL_ARGS_H
#define SLAT_CORE_HCALL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/own.h"

#include "core/hcall_abi.h"

_Static_assert(HC_LIST_MAX == OWN_LIST_MAX, "a list page is one ownership request");
_Static_assert(HC_VM_MAX == OWN_VM_MAX, "VM ids are the ownership table's");

// Raw registers: x0 / RAX and x1..x6 / RBX, RCX, RDX, RSI, RDI, R8.
struct hc_regs {
	uint64_t fn;
	uint64_t a[HC_NARGS];
};

enum hc_abi {
	HC_ABI_ARM64, // function id in W0 (x0's upper half ignored, SMCCC)
	HC_ABI_X86,   // RAX's upper half must be zero
};

struct hc_call {
	enum hc_fn fn;
	uint32_t vm;
	uint32_t vcpu; // VCPU_CREATE / VCPU_RUN: index; VM_CREATE: the VM's vCPU limit
	uint32_t slot, flags;
	enum hc_slot_op op;
	uint64_t pa;	// DEPOSIT first page; WITHDRAW / SLOT_SET list page; RUN, REGS, STATS page
	uint64_t gpa;	// SLOT_SET ADD / MOVE
	uint64_t count; // pages or frame numbers; LOG_READ: the position
};

// HC_OK and *out filled, or the precise error (and *out untouched). Of a call
// in the architecture's range only out->fn: its registers are the architecture's
// (hv_boot.arch_call, core/hv.h).
int hc_decode(enum hc_abi abi, const struct hc_regs *r, struct hc_call *out);
static inline bool hc_fn_is_arch(enum hc_fn fn)
{
	return (unsigned)fn >= HC_FN_ARCH_FIRST && (unsigned)fn < HC_FN_ARCH_END;
}

// Checks for the architectures' decoders (into a struct hc_call too): a[i]
// zero where bit i of `used` is clear; a page; a0 = VM, a1 = vCPU, a2 = page.
int hc_arg_unused_zero(unsigned used, const uint64_t *a);
int hc_arg_page(uint64_t pa);
int hc_arg_vcpu_page(const uint64_t *a, struct hc_call *c);

#endif
