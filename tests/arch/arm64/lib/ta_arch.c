// SPDX-License-Identifier: Apache-2.0
/* tests/arch/arm64/lib/ta_arch.c - the PL011 of QEMU virt (0x09000000), polled. */
#include "tests/arch/lib/ta.h"

#define PL011_BASE 0x09000000ULL
#define PL011_DR   0x00
#define PL011_FR   0x18
#define PL011_TXFF (1u << 5)

static inline volatile uint32_t *pl011(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(PL011_BASE + off);
}

void ta_arch_uart_init(void)
{
}

void ta_arch_putc(char c)
{
	for (unsigned spin = 0; spin < 100000; spin++)
		if (!(*pl011(PL011_FR) & PL011_TXFF))
			break;
	*pl011(PL011_DR) = (uint32_t)(uint8_t)c;
}
