// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/smp_apic.c - xAPIC register access and IPIs for the SMP payload. */
#include "tests/arch/x86/lib/smp.h"
#include "tests/arch/x86/lib/x86.h"

static volatile uint32_t *apic_reg(unsigned off)
{
	uint64_t base = rdmsr(0x1b) & ~0xfffull;
	return (volatile uint32_t *)(uintptr_t)(base + off);
}

uint32_t smp_apic_read(unsigned off)
{
	return *apic_reg(off);
}

void smp_apic_write(unsigned off, uint32_t val)
{
	*apic_reg(off) = val;
}

bool smp_send_ipi(uint32_t dest_id, uint32_t icr_lo)
{
	smp_apic_write(APIC_ICR_HI, dest_id << 24);
	smp_apic_write(APIC_ICR_LO, icr_lo);
	for (unsigned spin = 0; spin < 1000000; spin++)
		if (!(smp_apic_read(APIC_ICR_LO) & ICR_BUSY))
			return true;
	return false;
}
