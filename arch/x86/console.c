// SPDX-License-Identifier: Apache-2.0
//
// x86 console: the 16550 the firmware names in ACPI SPCR, else COM1 (0x3F8).
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "core/log.h"
#include "drivers/uart.h"

#define X86_COM1 0x3f8

static struct uart x86_console;

static uint8_t pio_read(uintptr_t port, unsigned reg)
{
	return inb((uint16_t)(port + reg));
}

static void pio_write(uintptr_t port, unsigned reg, uint8_t val)
{
	outb((uint16_t)(port + reg), val);
}

static const struct uart_16550_io x86_pio = {
    .read = pio_read,
    .write = pio_write,
};

unsigned arch_cpu_id(void)
{
	return cpuid(1, 0).ebx >> 24; // initial APIC ID
}

void arch_console_init(const struct fw_info *fw)
{
	if (fw->uart.kind == FW_UART_16550 && !fw->uart.port_io)
		uart_16550_init(&x86_console, (uintptr_t)fw->uart.base, &uart_16550_mmio, false);
	else if (fw->uart.kind == FW_UART_16550)
		uart_16550_init(&x86_console, (uintptr_t)fw->uart.base, &x86_pio,
				fw->uart.base == X86_COM1);
	else
		uart_16550_init(&x86_console, X86_COM1, &x86_pio, true);

	struct log_sink sink = uart_log_sink(&x86_console);
	log_set_sink(&sink);
	log_set_cpu_id(arch_cpu_id);
}
