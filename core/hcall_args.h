// SPDX-License-Identifier: Apache-2.0
//
// The hypercall ABI draft of docs/hypercalls.md (issue 14; nothing is wired:
// both exit paths still answer "unknown function"): function ids, error
// codes, exit reasons, and the pure decoder that turns the raw registers of a
// call into a checked struct hc_call or the precise error. The decoder checks
// only what the registers alone can tell (ids, alignment, wrap, bounds,
// must-be-zero bits); who owns a frame, whether a VM exists, etc. is for the
// handler (core/own.h and the VM records) at run time.
#ifndef SLAT_CORE_HCALL_ARGS_H
#define SLAT_CORE_HCALL_ARGS_H

#include <stdint.h>

#include "core/own.h"

#define HC_ABI_MAJOR 0u // 0: draft, anything may change
#define HC_ABI_MINOR 1u
#define HC_VERSION   (HC_ABI_MAJOR << 16 | HC_ABI_MINOR)

// SMCCC function id: fast call (bit 31), 64-bit convention (bit 30), owner 6
// (vendor-specific hypervisor service, bits 29:24), function number in 15:0.
#define HC_FN_BASE	  0xC6000000u
#define HC_FN_SVE_HINT	  (1u << 16) // SMCCC 1.3: caller's SVE-state hint, ignored
#define HC_FN_NUM_MASK	  0xffffu
#define HC_NARGS	  6u
#define HC_GPA_BITS	  52u
#define HC_MAX_VCPUS	  1024u	       // vCPU index < HC_MAX_VCPUS
#define HC_MAX_SLOTS	  32764u       // slot index < HC_MAX_SLOTS
#define HC_LIST_MAX	  OWN_LIST_MAX // frame numbers in one list page
#define HC_DEPOSIT_MAX	  65536u       // pages in one DEPOSIT (256 MiB)
#define HC_VM_FLAG_DONATE 1u	       // the VM's slots are donated, not shared

enum hc_fn {
	HC_VERSION_FN = 0x00,
	HC_DEPOSIT = 0x01,
	HC_WITHDRAW = 0x02,
	HC_VM_CREATE = 0x03,
	HC_VM_DESTROY = 0x04,
	HC_VCPU_CREATE = 0x05,
	HC_SLOT_SET = 0x06,
	HC_VCPU_RUN = 0x07,
	HC_FN_COUNT,
};

enum hc_slot_op {
	HC_SLOT_ADD = 0,    // new slot at gpa: the list page's `count` frames
	HC_SLOT_APPEND = 1, // `count` more frames at the slot's end
	HC_SLOT_DELETE = 2,
	HC_SLOT_MOVE = 3, // same frames at a new gpa
	HC_SLOT_OP_COUNT,
};

// Status in x0 / RAX: 0 or one of these (the ownership codes keep their values).
enum hc_err {
	HC_OK = 0,
	HC_E_UNKNOWN = -1, // unknown function; also every call from a secondary
	HC_E_NOT_OWNED = OWN_E_NOT_OWNED,
	HC_E_SLAT = OWN_E_SLAT,
	HC_E_OTHER_VM = OWN_E_OTHER_VM,
	HC_E_ALREADY_SHARED = OWN_E_ALREADY_SHARED,
	HC_E_RANGE = OWN_E_RANGE,
	HC_E_ALIGN = OWN_E_ALIGN,
	HC_E_TOO_MANY = OWN_E_TOO_MANY,
	HC_E_NOMEM = OWN_E_NOMEM,
	HC_E_BAD_VM = OWN_E_BAD_VM,
	HC_E_INVAL = -12,    // a must-be-zero register or bit is not, bad flags or op
	HC_E_BAD_SLOT = -13, // slot index >= HC_MAX_SLOTS (or no such slot, at run time)
	HC_E_BAD_VCPU = -14, // vCPU index >= HC_MAX_VCPUS (or no such vCPU)
	HC_E_BUSY = -15,     // run time: the vCPU runs on another CPU
	HC_E_EXISTS = -16,   // run time: the slot/vCPU exists, or the slot overlaps one
};

// Exit reasons VCPU_RUN returns in x1 / RBX (details in the run page).
enum hc_exit {
	HC_EXIT_MMIO = 1,
	HC_EXIT_IO = 2, // x86 port I/O
	HC_EXIT_HYPERCALL = 3,
	HC_EXIT_HALT = 4,
	HC_EXIT_SHUTDOWN = 5,
	HC_EXIT_PREEMPTED = 6, // a physical interrupt for the primary
	HC_EXIT_FAIL_ENTRY = 7,
};

// Shared page of VCPU_RUN: written by Slat on the way out, read on the way in
// (MMIO read data, I/O in data, hypercall return values).
struct hc_run {
	uint32_t reason; // enum hc_exit
	uint32_t pad;
	union {
		struct {
			uint64_t gpa;
			uint64_t data; // write: the value; read: the VMM fills it
			uint8_t len;   // 1, 2, 4 or 8
			uint8_t is_write;
			uint8_t pad[6];
		} mmio;
		struct {
			uint16_t port;
			uint8_t size; // 1, 2 or 4
			uint8_t is_out;
			uint32_t count; // string I/O repetitions
			uint64_t data;
		} io;
		struct {
			uint64_t nr;
			uint64_t args[6];
			uint64_t ret[4];
		} hcall;
		struct {
			uint64_t hw_reason; // the hardware's own code, for diagnostics
		} fail;
	} u;
};
_Static_assert(sizeof(struct hc_run) <= 4096, "the run structure fits its page");

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
	uint64_t pa;	// DEPOSIT first page; WITHDRAW / SLOT_SET list page; VCPU_RUN run page
	uint64_t gpa;	// SLOT_SET ADD / MOVE
	uint64_t count; // pages or frame numbers
};

// HC_OK and *out filled, or the precise error (and *out untouched).
int hc_decode(enum hc_abi abi, const struct hc_regs *r, struct hc_call *out);

#endif
