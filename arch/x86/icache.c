// SPDX-License-Identifier: Apache-2.0
//
// x86 keeps instruction fetch coherent with data stores (Intel SDM vol. 3,
// 11.6 "Self-modifying code"); code written to a new address needs no
// maintenance before a jump to it.
#include "arch/arch.h"

void arch_sync_icache(const void *p, unsigned long long n)
{
	(void)p;
	(void)n;
}
