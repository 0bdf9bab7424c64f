// SPDX-License-Identifier: Apache-2.0
//
// arm64 instruction-cache maintenance for code written by data stores (Arm
// ARM D7.5.9, "Ordering and completion of data and instruction cache
// instructions"): DC CVAU on every D-cache line, DSB ISH, IC IVAU on every
// I-cache line, DSB ISH, ISB. Line sizes come from CTR_EL0 (DminLine bits
// [19:16], IminLine bits [3:0], log2 of words).
#include "arch/arch.h"

#include <stdint.h>

void arch_sync_icache(const void *p, unsigned long long n)
{
	uint64_t ctr, start = (uintptr_t)p, end = start + n;

	__asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
	uint64_t dline = 4ull << ((ctr >> 16) & 0xf), iline = 4ull << (ctr & 0xf);
	for (uint64_t a = start & ~(dline - 1); a < end; a += dline)
		__asm__ volatile("dc cvau, %0" ::"r"(a) : "memory");
	__asm__ volatile("dsb ish" ::: "memory");
	for (uint64_t a = start & ~(iline - 1); a < end; a += iline)
		__asm__ volatile("ic ivau, %0" ::"r"(a) : "memory");
	__asm__ volatile("dsb ish\n\tisb" ::: "memory");
}
