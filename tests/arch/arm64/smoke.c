// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/smoke.c - the harness's own check: the payload runs, prints
 * and powers off, at EL1 with the MMU on, bare and under Slat.
 */
#include "tests/arch/lib/ta.h"

void ta_main(void)
{
	uint64_t el, sctlr;
	__asm__ volatile("mrs %0, CurrentEL" : "=r"(el));
	__asm__ volatile("mrs %0, sctlr_el1" : "=r"(sctlr));
	ta_verdict("smoke-el", "EL%u", (unsigned)(el >> 2) & 3);
	ta_verdict("smoke-mmu", "sctlr_el1.m %u", (unsigned)sctlr & 1);
}
