// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/smoke.c - the harness's own check: the payload runs, prints
 * and powers off, at CPL 0 in long mode with paging, bare and under Slat.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/x86.h"

void ta_main(void)
{
	uint16_t cs;
	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	ta_verdict("smoke-cpl", "%u", cs & 3);
	ta_verdict("smoke-paging", "cr0.pg %u cr4.pae %u efer.lma %u", (unsigned)(read_cr0() >> 31) & 1,
		   (unsigned)(read_cr4() >> 5) & 1, (unsigned)(rdmsr(0xC0000080) >> 10) & 1);
}
