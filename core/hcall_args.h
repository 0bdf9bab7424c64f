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
	uint64_t count; // pages or frame numbers
};

// HC_OK and *out filled, or the precise error (and *out untouched). For a
// function of the architecture's range (hc_fn_is_arch) only out->fn is
// decoded: its argument registers are the architecture's to check.
int hc_decode(enum hc_abi abi, const struct hc_regs *r, struct hc_call *out);
bool hc_fn_is_arch(enum hc_fn fn);

// The checks of the generic decoder, for the architectures' own decoders:
// every register a[i] whose bit i in `used` is clear must be zero
// (HC_E_INVAL); a VM id (HC_E_BAD_VM), a vCPU index (HC_E_BAD_VCPU) and a
// page address (HC_E_ALIGN, HC_E_RANGE) as docs/hypercalls.md bounds them.
int hc_arg_unused_zero(unsigned used, const uint64_t *a);
int hc_arg_vm(uint64_t v, uint32_t *vm);
int hc_arg_vcpu(uint64_t v, uint32_t *index);
int hc_arg_page(uint64_t pa);

#endif
