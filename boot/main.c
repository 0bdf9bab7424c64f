// SPDX-License-Identifier: Apache-2.0
//
// slat.efi entry point: bring the serial console up, report what the CPU and
// the firmware offer, then either power off with EFI_UNSUPPORTED (the CPU
// cannot host Slat) or hand over to boot_primary() (boot/primary.h), which
// deprivileges the firmware into the primary VM and boots the OS in it. When
// that returns (nothing to boot, or a failure) Slat powers off with its
// status.
#include "arch/arch.h"
#include "boot/boot.h"
#include "boot/memmap.h"
#include "boot/primary.h"
#include "core/log.h"
#include "slat_version.h"

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

static void report_firmware(EFI_SYSTEM_TABLE *st, const struct fw_info *fw)
{
	log_info("firmware: UEFI %u.%u, vendor revision 0x%x, ACPI %s, device tree %s\n",
		 st->Hdr.Revision >> 16, (st->Hdr.Revision & 0xffff) / 10, st->FirmwareRevision,
		 fw->acpi_rsdp ? "yes" : "no", fw->fdt ? "yes" : "no");
	if (fw->uart.kind != FW_UART_NONE)
		log_info("firmware: console UART %s at %s0x%llx (from %s)\n",
			 fw->uart.kind == FW_UART_PL011 ? "PL011" : "16550",
			 fw->uart.port_io ? "port " : "", (unsigned long long)fw->uart.base,
			 fw->uart.source);
}

// The log's mirror (core/log.h): text to the firmware's ConOut, "\n" as CRLF.
static void conout_write(void *ctx, const char *text, size_t len)
{
	SIMPLE_TEXT_OUTPUT_INTERFACE *out = ctx;
	CHAR16 buf[66];
	unsigned n = 0;

	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\n')
			buf[n++] = L'\r';
		buf[n++] = (unsigned char)text[i];
		if (n >= 64 || i + 1 == len) {
			buf[n] = 0, n = 0;
			out->OutputString(out, buf);
		}
	}
}

void boot_screen_mirror(EFI_SYSTEM_TABLE *st)
{
	if (st->ConOut)
		log_set_mirror(&(struct log_sink){.write = conout_write, .ctx = st->ConOut});
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	struct fw_info fw;
	struct memmap_summary mm;

	boot_collect_firmware_info(st, &fw);
	arch_console_init(&fw);
	boot_screen_mirror(st);
	log_info("\nSlat %s (%s), a bare-metal hypervisor\n", SLAT_VERSION, arch_name());
	report_firmware(st, &fw);

	const struct arch_caps *caps = arch_probe(&fw);
	arch_report(caps);

	EFI_STATUS ms = memmap_summarise(st->BootServices, &mm);
	if (EFI_ERROR(ms))
		log_err("memmap: GetMemoryMap failed (0x%llx)\n", (unsigned long long)ms);
	else
		memmap_report(&mm);

	const char *why_not = arch_virt_unusable(caps);
	if (why_not) {
		log_err("no usable virtualization: %s\n", why_not);
		return boot_power_off(st, EFI_UNSUPPORTED);
	}
	log_info("slat: virtualization usable\n");
	bool hand_back = false;
	EFI_STATUS s = boot_primary(image, st, &fw, &hand_back);
	if (hand_back) {
		// Nothing was taken: the boot manager goes on with its next option.
		log_info("slat: nothing taken; returning 0x%llx to the firmware\n",
			 (unsigned long long)s);
		return s;
	}
	return boot_power_off(st, s);
}
