// SPDX-License-Identifier: Apache-2.0
//
// Arm PrimeCell PL011 UART, transmit side, polled (PL011 TRM: DR at 0x000,
// FR at 0x018 with TXFF bit 5 and BUSY bit 3).
#include "drivers/uart.h"

#define PL011_DR      0x000
#define PL011_FR      0x018
#define PL011_FR_BUSY (1u << 3)
#define PL011_FR_TXFF (1u << 5)

static inline uint32_t pl011_read(const struct uart *u, uintptr_t off)
{
	return *(volatile uint32_t *)(u->base + off);
}

static void pl011_putc(struct uart *u, char c)
{
	while (pl011_read(u, PL011_FR) & PL011_FR_TXFF)
		;
	*(volatile uint32_t *)(u->base + PL011_DR) = (uint8_t)c;
}

static void pl011_flush(struct uart *u)
{
	while (pl011_read(u, PL011_FR) & PL011_FR_BUSY)
		;
}

static const struct uart_ops pl011_ops = {
    .putc = pl011_putc,
    .flush = pl011_flush,
};

void uart_pl011_init(struct uart *u, uintptr_t base)
{
	*u = (struct uart){.ops = &pl011_ops, .base = base};
}
