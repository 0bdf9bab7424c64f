// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/ta_arch.c - COM1 (0x3F8), polled; the firmware set it up. */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/x86.h"

#define COM1 0x3F8

void ta_arch_uart_init(void)
{
}

void ta_arch_putc(char c)
{
	for (unsigned spin = 0; spin < 100000; spin++)
		if (inb(COM1 + 5) & 0x20) /* transmit holding register empty */
			break;
	outb(COM1, (uint8_t)c);
}
