// SPDX-License-Identifier: Apache-2.0
//
// The checks the CPU makes on a new CR0, CR3, CR4, EFER or XCR0 value (Intel
// SDM vol. 3 2.5 and MOV CR / WRMSR / XSETBV; AMD APM vol. 2 3.1 and 15.5),
// as pure functions of the current state and of what the guest's CPUID
// enumerates (after Slat's policy: a feature Slat hides is refused like on a
// CPU without it). A false result means #GP(0). No privileged instruction:
// unit-tested hosted (tests/unit/test_cr_check.c).
#ifndef SLAT_ARCH_X86_CR_CHECK_H
#define SLAT_ARCH_X86_CR_CHECK_H

#include <stdbool.h>
#include <stdint.h>

// The guest's control state when it loads a new value.
struct x86_cr_state {
	uint64_t cr0, cr3, cr4, efer;
	bool cs_long; // executing in 64-bit mode (EFER.LMA and CS.L)
};

// What the guest's CPUID enumerates, reduced to the bits the checks need.
struct x86_cr_caps {
	uint64_t cr4_ok;     // CR4 bits the guest may set
	uint64_t efer_ok;    // EFER bits the guest may set (LMA: ignored on write)
	uint64_t xcr0_ok;    // CPUID 0xD.0 EDX:EAX
	unsigned maxphyaddr; // CPUID 0x80000008 EAX[7:0]
};

// The caps from the guest's CPUID leaves (as x86_cpuid_policy answers them):
// leaf 1 ECX/EDX, leaf 7.0 EBX/ECX/EDX, leaf 7.1 EAX, 0x80000001 ECX/EDX,
// 0x80000008 EAX/EBX, 0x80000021 EAX, 0xD.0 EAX/EDX. `leaf(l, s, out)`
// returns one leaf; leaves above the maximum read as zero.
struct x86_cr_caps
x86_cr_caps_from(void (*leaf)(void *ctx, uint32_t l, uint32_t s, uint32_t out[4]), void *ctx);

bool x86_cr0_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val);
bool x86_cr3_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val);
bool x86_cr4_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val);
bool x86_efer_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val);
// XSETBV's operand checks (the CPL 0 check is the caller's).
bool x86_xcr_ok(const struct x86_cr_caps *c, uint32_t xcr, uint64_t val);

#endif
