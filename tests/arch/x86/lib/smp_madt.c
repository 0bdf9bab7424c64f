// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/lib/smp_madt.c - the processors of the ACPI MADT (ACPI 6.x
 * 5.2.12), found through the EFI configuration table: RSDP -> XSDT -> "APIC".
 */
#include "tests/arch/lib/ta_efi.h"
#include "tests/arch/x86/lib/smp.h"

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static const uint8_t *find_madt(void)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;
	const uint8_t *rsdp = ta_config_table(&acpi20);

	if (!rsdp || rsdp[15] < 2)
		return NULL;
	const uint8_t *xsdt = (const uint8_t *)(uintptr_t)rd64(rsdp + 24);
	if (!xsdt)
		return NULL;
	uint32_t len = rd32(xsdt + 4);
	for (uint32_t off = 36; off + 8 <= len; off += 8) {
		const uint8_t *t = (const uint8_t *)(uintptr_t)rd64(xsdt + off);
		if (t && t[0] == 'A' && t[1] == 'P' && t[2] == 'I' && t[3] == 'C')
			return t;
	}
	return NULL;
}

unsigned smp_madt_apic_ids(uint32_t *ids, unsigned max, unsigned *x2apic_entries)
{
	const uint8_t *madt = find_madt();
	unsigned n = 0;

	*x2apic_entries = 0;
	if (!madt)
		return 0;
	uint32_t len = rd32(madt + 4);
	for (uint32_t off = 44; off + 2 <= len && n < max;) {
		const uint8_t *e = madt + off;
		if (e[1] < 2)
			break;
		if (e[0] == 0 && e[1] >= 8 && (rd32(e + 4) & 1)) /* processor local APIC, enabled */
			ids[n++] = e[3];
		if (e[0] == 9) /* processor local x2APIC: not used by this payload (xAPIC only) */
			(*x2apic_entries)++;
		off += e[1];
	}
	return n;
}
