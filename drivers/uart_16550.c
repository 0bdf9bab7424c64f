// SPDX-License-Identifier: Apache-2.0
//
// 16550-compatible UART, transmit side, polled. Registers (index): 0 THR/DLL,
// 1 IER/DLM, 2 FCR, 3 LCR (bit 7 DLAB), 4 MCR, 5 LSR (bit 5 THRE, bit 6 TEMT).
#include "drivers/uart.h"

enum {
	U16550_THR = 0,
	U16550_DLL = 0,
	U16550_IER = 1,
	U16550_DLM = 1,
	U16550_FCR = 2,
	U16550_LCR = 3,
	U16550_MCR = 4,
	U16550_LSR = 5,
};

#define LSR_THRE    (1u << 5)
#define LSR_TEMT    (1u << 6)
#define LCR_DLAB    0x80
#define LCR_8N1	    0x03
#define FCR_FIFOS   0x07 // enable and clear both FIFOs
#define MCR_DTR_RTS 0x03

// Bounded waits: a missing UART (all-ones or all-zero reads) must not hang
// the boot. At 115200 baud one character takes ~87 us; this is far longer.
#define U16550_SPINS 1000000u

static uint8_t rd(struct uart *u, unsigned reg)
{
	return u->io16550->read(u->base, reg);
}

static void wr(struct uart *u, unsigned reg, uint8_t val)
{
	u->io16550->write(u->base, reg, val);
}

static void u16550_wait(struct uart *u, uint8_t lsr_bits)
{
	for (unsigned i = 0; i < U16550_SPINS; i++) {
		if ((rd(u, U16550_LSR) & lsr_bits) == lsr_bits)
			return;
	}
}

static void u16550_putc(struct uart *u, char c)
{
	u16550_wait(u, LSR_THRE);
	wr(u, U16550_THR, (uint8_t)c);
}

static void u16550_flush(struct uart *u)
{
	u16550_wait(u, LSR_THRE | LSR_TEMT);
}

static const struct uart_ops u16550_ops = {
    .putc = u16550_putc,
    .flush = u16550_flush,
};

void uart_16550_init(struct uart *u, uintptr_t base, const struct uart_16550_io *io,
		     bool set_115200)
{
	*u = (struct uart){.ops = &u16550_ops, .base = base, .io16550 = io};
	wr(u, U16550_IER, 0);
	if (!set_115200)
		return;
	wr(u, U16550_LCR, LCR_DLAB);
	wr(u, U16550_DLL, 1); // 115200 = 1.8432 MHz / 16 / 1
	wr(u, U16550_DLM, 0);
	wr(u, U16550_LCR, LCR_8N1);
	wr(u, U16550_FCR, FCR_FIFOS);
	wr(u, U16550_MCR, MCR_DTR_RTS);
}

static uint8_t mmio_read(uintptr_t addr, unsigned reg)
{
	return *(volatile uint8_t *)(addr + reg);
}

static void mmio_write(uintptr_t addr, unsigned reg, uint8_t val)
{
	*(volatile uint8_t *)(addr + reg) = val;
}

const struct uart_16550_io uart_16550_mmio = {
    .read = mmio_read,
    .write = mmio_write,
};
