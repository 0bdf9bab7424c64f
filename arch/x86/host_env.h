// SPDX-License-Identifier: Apache-2.0
//
// Slat's own environment for host mode (SVM host, VMX root operation), one
// builder for both back ends, all inside the reserved region (the firmware's
// page tables, GDT and IDT are boot-services memory the OS reuses).
#ifndef SLAT_ARCH_X86_HOST_ENV_H
#define SLAT_ARCH_X86_HOST_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/plan.h"
#include "core/region.h"

// Host selectors (GDT layout of x86_host_env_build).
#define X86_HOST_CS  0x08 // 64-bit code, DPL 0
#define X86_HOST_DS  0x10 // data, DPL 0
#define X86_HOST_TSS 0x18 // 64-bit TSS (16-byte descriptor)

struct x86_host_env {
	uint64_t cr3;	  // identity map of [0, map_top)
	uint64_t map_top; // the top of memory, at least 4 GiB, rounded up to 1 GiB
	uint64_t gdt, idt, tss;
	uint16_t gdt_limit, idt_limit;
};

// Builds the identity map (1 GiB pages when the CPU has them, else 2 MiB)
// up to the top of the plan's memory, a GDT (null, code, data, TSS), a TSS
// and an IDT whose 32 gates point at `idt_stubs` (32 entry stubs 16 bytes
// apart, reached through X86_HOST_CS). False when the region is too small.
bool x86_host_env_build(struct region *r, const struct slat_plan *plan, const void *idt_stubs,
			struct x86_host_env *env);

#endif
