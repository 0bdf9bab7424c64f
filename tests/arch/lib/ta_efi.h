/* SPDX-License-Identifier: Apache-2.0 */
/* tests/arch/lib/ta_efi.h - the EFI types for payloads that use boot services. */
#ifndef TA_EFI_H
#define TA_EFI_H

#include <efi.h>

#include "ta.h"

static inline EFI_SYSTEM_TABLE *ta_st(void)
{
	return (EFI_SYSTEM_TABLE *)ta_system_table;
}

static inline EFI_BOOT_SERVICES *ta_bs(void)
{
	return ta_st()->BootServices;
}

/* Finds a configuration table by GUID (ACPI 2.0, device tree); NULL if absent. */
void *ta_config_table(const EFI_GUID *guid);

#endif
