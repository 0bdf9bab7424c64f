// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/lib/a64_acpi.c - the few ACPI facts the arm64 payloads
 * need (ACPI 6.5): the PSCI conduit (FADT ARM boot architecture flags), the
 * GIC and the CPUs (MADT).
 */
#include "tests/arch/arm64/lib/a64.h"
#include "tests/arch/lib/ta_efi.h"

static EFI_GUID acpi20_guid = ACPI_20_TABLE_GUID;

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

const void *a64_acpi_table(const char *sig)
{
	const uint8_t *rsdp = ta_config_table(&acpi20_guid);
	if (!rsdp || rsdp[15] < 2)
		return NULL;
	const uint8_t *xsdt = (const uint8_t *)(uintptr_t)rd64(rsdp + 24);
	uint32_t len = rd32(xsdt + 4);
	for (uint32_t off = 36; off + 8 <= len; off += 8) {
		const uint8_t *t = (const uint8_t *)(uintptr_t)rd64(xsdt + off);
		if (t && t[0] == sig[0] && t[1] == sig[1] && t[2] == sig[2] && t[3] == sig[3])
			return t;
	}
	return NULL;
}

unsigned a64_fadt_arm_flags(void)
{
	const uint8_t *fadt = a64_acpi_table("FACP");
	if (!fadt || rd32(fadt + 4) < 131)
		return 0;
	return (unsigned)fadt[129] | (unsigned)fadt[130] << 8;
}

/* MADT entries from offset 44: GICC (0xB), GICD (0xC), GICR (0xE). */
bool a64_madt_read(struct a64_madt *m)
{
	const uint8_t *t = a64_acpi_table("APIC");
	ta_memset(m, 0, sizeof(*m));
	if (!t)
		return false;
	uint32_t len = rd32(t + 4);
	for (uint32_t off = 44; off + 2 <= len;) {
		const uint8_t *e = t + off;
		uint8_t type = e[0], elen = e[1];
		if (elen < 2 || off + elen > len)
			break;
		if (type == 0xb && elen >= 76) {
			if (!m->gicc)
				m->gicc = rd64(e + 32);
			if (m->n_cpus < 8)
				m->mpidr[m->n_cpus++] = rd64(e + 68);
		} else if (type == 0xc && elen >= 24) {
			m->gicd = rd64(e + 8);
			m->gic_version = e[20];
		} else if (type == 0xe && elen >= 16 && !m->gicr) {
			m->gicr = rd64(e + 4);
		}
		off += elen;
	}
	return true;
}
