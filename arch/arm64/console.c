// SPDX-License-Identifier: Apache-2.0
//
// arm64 console: the UART the firmware names (ACPI SPCR or device tree),
// else the PL011 of QEMU's virt machine.
#include "arch/arch.h"
#include "arch/arm64/sysreg.h"
#include "core/log.h"
#include "drivers/uart.h"

#define ARM64_DEFAULT_PL011 0x09000000u

static struct uart arm64_console;

unsigned arch_cpu_id(void)
{
	uint64_t mpidr = read_sysreg(SYSREG_MPIDR_EL1);

	// Aff2.Aff1.Aff0 (Aff3 is zero on every platform Slat targets).
	return (unsigned)(mpidr & 0xffffff);
}

void arch_console_init(const struct fw_info *fw)
{
	if (fw->uart.kind == FW_UART_16550 && !fw->uart.port_io)
		uart_16550_init(&arm64_console, (uintptr_t)fw->uart.base, &uart_16550_mmio, false);
	else if (fw->uart.kind == FW_UART_PL011)
		uart_pl011_init(&arm64_console, (uintptr_t)fw->uart.base);
	else
		uart_pl011_init(&arm64_console, ARM64_DEFAULT_PL011);

	struct log_sink sink = uart_log_sink(&arm64_console);
	log_set_sink(&sink);
	log_set_cpu_id(arch_cpu_id);
}
