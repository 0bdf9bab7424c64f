// SPDX-License-Identifier: Apache-2.0
//
// UART drivers: polled, transmit-only consoles that never call the firmware,
// so they keep working after ExitBootServices and in hypervisor exception
// handlers. Each driver fills a `struct uart`; uart_log_sink() turns it into a
// core/log.h sink (which also serialises CPUs). Register access for the 16550
// is supplied by the caller (MMIO here, x86 port I/O from arch/x86), so this
// directory holds no architecture code.
#ifndef SLAT_DRIVERS_UART_H
#define SLAT_DRIVERS_UART_H

#include <stdbool.h>
#include <stdint.h>

#include "core/log.h"

struct uart;

struct uart_ops {
	void (*putc)(struct uart *u, char c); // waits for room, then sends c
	void (*flush)(struct uart *u);	      // waits until the line is idle
};

// 16550 register access: `reg` is the register index (0..7).
struct uart_16550_io {
	uint8_t (*read)(uintptr_t base, unsigned reg);
	void (*write)(uintptr_t base, unsigned reg, uint8_t val);
};

struct uart {
	const struct uart_ops *ops;
	uintptr_t base;			     // MMIO address or I/O port
	const struct uart_16550_io *io16550; // 16550 only
};

// Arm PL011 at MMIO `base`. Uses the firmware's line settings as they are.
void uart_pl011_init(struct uart *u, uintptr_t base);

// 16550 at `base` through `io`: interrupts off. With `set_115200` also
// programs 115200 8N1 for the PC's 1.8432 MHz clock (divisor 1) and turns the
// FIFOs on; without it the firmware's line settings stay.
void uart_16550_init(struct uart *u, uintptr_t base, const struct uart_16550_io *io,
		     bool set_115200);

// 16550 registers as consecutive MMIO bytes at base + reg.
extern const struct uart_16550_io uart_16550_mmio;

// A log sink writing to `u` ("\n" becomes "\r\n").
struct log_sink uart_log_sink(struct uart *u);

#endif
