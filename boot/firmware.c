// SPDX-License-Identifier: Apache-2.0
//
// Collects struct fw_info from the UEFI configuration tables.
#include "boot/boot.h"

#include "boot/acpi.h"
#include "boot/fdt.h"
#include "core/log.h"

static bool guid_eq(const EFI_GUID *a, const EFI_GUID *b)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;

	for (unsigned i = 0; i < sizeof(EFI_GUID); i++) {
		if (x[i] != y[i])
			return false;
	}
	return true;
}

static const void *config_table(EFI_SYSTEM_TABLE *st, EFI_GUID guid)
{
	for (UINTN i = 0; i < st->NumberOfTableEntries; i++) {
		if (guid_eq(&st->ConfigurationTable[i].VendorGuid, &guid))
			return st->ConfigurationTable[i].VendorTable;
	}
	return NULL;
}

// The console UART from the device tree's /chosen would need path lookups;
// the first PL011 node is what QEMU's virt machine (and most boards) use.
static bool fdt_uart(const void *fdt, struct fw_uart *uart)
{
	uint64_t base = 0;

	if (!fdt_find_compatible(fdt, "arm,pl011", &base) || !base)
		return false;
	*uart = (struct fw_uart){
	    .kind = FW_UART_PL011,
	    .base = base,
	    .source = "device tree",
	};
	return true;
}

void boot_collect_firmware_info(EFI_SYSTEM_TABLE *st, struct fw_info *fw)
{
	*fw = (struct fw_info){0};
	fw->efi_system_table = st;
	fw->acpi_rsdp = config_table(st, (EFI_GUID)ACPI_20_TABLE_GUID);
	fw->fdt = config_table(st, (EFI_GUID)EFI_DTB_TABLE_GUID);
	if (!acpi_spcr_uart(fw->acpi_rsdp, &fw->uart))
		fdt_uart(fw->fdt, &fw->uart);
}

static const char *status_name(EFI_STATUS s)
{
	return s == EFI_SUCCESS	      ? "EFI_SUCCESS"
	       : s == EFI_UNSUPPORTED ? "EFI_UNSUPPORTED"
				      : "error";
}

EFI_STATUS boot_power_off(EFI_SYSTEM_TABLE *st, EFI_STATUS status)
{
	log_info("slat: powering off (%s)\n", status_name(status));
	log_flush();
	st->RuntimeServices->ResetSystem(EfiResetShutdown, status, 0, NULL);
	log_err("ResetSystem returned; handing %s back to the firmware\n", status_name(status));
	return status;
}
