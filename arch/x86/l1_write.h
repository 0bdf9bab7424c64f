// SPDX-License-Identifier: Apache-2.0
//
// An L1 hypervisor's write to one of its own second-level table pages (NPT12
// or EPT12) that Slat's shadow engine write-protects: the instruction is
// emulated through the engine (sh_emulate_update), which stores the value
// and updates or zaps the shadow entries of that page. Vendor-neutral: the
// SVM and VMX back ends call it from their write-fault exits.
#ifndef SLAT_ARCH_X86_L1_WRITE_H
#define SLAT_ARCH_X86_L1_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"

struct sh_mmu;

// Emulates the instruction at the vCPU's RIP as a write to the shadowed page
// of L1-physical `gpa` (only its page counts: the offset comes from the
// operand's address). Handled: MOV r/m,r (89), MOV r/m,imm (C7), XCHG (87)
// and CMPXCHG (0F B1) with a memory operand, aligned, of 2, 4 or 8 bytes;
// the registers and `*rflags` (CMPXCHG) change as the CPU would change them
// and RIP moves past the instruction. False, with nothing changed: another
// instruction (the caller gives the page back to L1, which retries it).
bool x86_l1_write_emulate(struct vcpu *v, struct sh_mmu *sh, uint64_t gpa, uint64_t *rflags);

#endif
