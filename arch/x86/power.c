// SPDX-License-Identifier: Apache-2.0
//
// Where the guest's power-off and reset requests go, read from the ACPI FADT
// (ACPI 6.x, 5.2.9) in the loaded image before Slat takes over: PM1a/PM1b
// control blocks (SLP_EN with S5's sleep type = power-off), the PM timer (to
// measure the TSC), the reset register when it is in I/O space, and S5's
// SLP_TYPa from the DSDT's \_S5_ package. x86_acpi_hide_s3() takes \_S3_
// out of the DSDT.
// Without a FADT: the PC defaults of QEMU's i440fx machine under OVMF
// (PM1a control 0x604, reset 0xCF9).
#include "arch/x86/x86_boot.h"
#include "boot/acpi.h"
#include "core/mem.h"

#define FADT_DSDT	   40
#define FADT_PM1A_CNT	   64
#define FADT_PM1B_CNT	   68
#define FADT_PM_TMR	   76
#define FADT_FLAGS	   112
#define FADT_RESET_REG	   116 // generic address structure: space id, ..., address at +4
#define FADT_X_DSDT	   140
#define FADT_RESET_REG_SUP (1u << 10)
#define GAS_SYSTEM_IO	   1

// SLP_TYPa of \_S5_: NameOp "_S5_" PackageOp PkgLength NumElements, then
// the first element as BytePrefix n, Zero or One.
static bool dsdt_s5(const uint8_t *dsdt, uint32_t len, uint8_t *slp_typ)
{
	for (uint32_t i = 36; i + 10 < len; i++) {
		if (memcmp(dsdt + i, "_S5_", 4) != 0 || dsdt[i + 4] != 0x12)
			continue;
		const uint8_t *p = dsdt + i + 5;
		p += 1 + (*p >> 6); // PkgLength: lead byte + 0-3 more bytes
		p++;		    // NumElements
		if (*p == 0x0a) {
			*slp_typ = p[1] & 7;
			return true;
		}
		if (*p == 0x00 || *p == 0x01) {
			*slp_typ = *p;
			return true;
		}
		return false;
	}
	return false;
}

// \_S3_ (NameOp, optional root prefix, "_S3_", PackageOp) renamed "XS3_":
// a valid name no OS looks for, so that S3 is not offered (Slat has no
// path to resume from it). The DSDT's checksum is made right again.
static unsigned dsdt_hide_s3(uint8_t *dsdt, uint32_t len)
{
	unsigned n = 0;

	for (uint32_t i = 37; i + 5 < len; i++) {
		if (memcmp(dsdt + i, "_S3_", 4) != 0 || dsdt[i + 4] != 0x12)
			continue;
		if (dsdt[i - 1] != 0x08 && !(dsdt[i - 1] == '\\' && dsdt[i - 2] == 0x08))
			continue;
		uint8_t old = dsdt[i];
		dsdt[i] = 'X';
		dsdt[9] = (uint8_t)(dsdt[9] + old - 'X'); // the sum of all bytes stays 0
		n++;
	}
	return n;
}

static uint64_t fadt_dsdt(const uint8_t *f, uint32_t len)
{
	uint64_t dsdt = load_le32(f + FADT_DSDT);

	if (len >= FADT_X_DSDT + 8 && load_le64(f + FADT_X_DSDT))
		dsdt = load_le64(f + FADT_X_DSDT);
	return dsdt;
}

unsigned x86_acpi_hide_s3(const void *rsdp)
{
	const struct acpi_sdt_header *h = acpi_find_table(rsdp, "FACP");

	if (!h || h->length < FADT_DSDT + 4)
		return 0;
	uint64_t dsdt = fadt_dsdt((const uint8_t *)h, h->length);
	if (!dsdt)
		return 0;
	struct acpi_sdt_header *d = (void *)(uintptr_t)dsdt;
	return dsdt_hide_s3((uint8_t *)d, d->length);
}

void x86_power_from_acpi(const void *rsdp, struct x86_power_ports *p)
{
	const struct acpi_sdt_header *h = acpi_find_table(rsdp, "FACP");

	*p = (struct x86_power_ports){.pm1a_cnt = 0x604, .reset_port = 0xcf9};
	if (!h || h->length < FADT_PM1B_CNT + 4)
		return;
	const uint8_t *f = (const uint8_t *)h;
	p->pm1a_cnt = (uint16_t)load_le32(f + FADT_PM1A_CNT);
	p->pm1b_cnt = (uint16_t)load_le32(f + FADT_PM1B_CNT);
	if (h->length >= FADT_PM_TMR + 4)
		p->pm_tmr = (uint16_t)load_le32(f + FADT_PM_TMR);
	if (h->length >= FADT_RESET_REG + 12 && (load_le32(f + FADT_FLAGS) & FADT_RESET_REG_SUP) &&
	    f[FADT_RESET_REG] == GAS_SYSTEM_IO)
		p->reset_port = (uint16_t)load_le64(f + FADT_RESET_REG + 4);
	uint64_t dsdt = fadt_dsdt(f, h->length);
	if (dsdt) {
		const struct acpi_sdt_header *d = (const void *)(uintptr_t)dsdt;
		p->s5_known = dsdt_s5((const uint8_t *)d, d->length, &p->s5_slp_typ);
	}
}
