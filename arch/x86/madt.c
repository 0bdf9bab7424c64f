// SPDX-License-Identifier: Apache-2.0
//
// Installing a minimal MADT (see madt.h). Table layouts from the ACPI 6.5
// specification: RSDP 5.2.5, XSDT 5.2.8, FADT 5.2.9 (fixed offsets below),
// FACS 5.2.10, MADT 5.2.12 (processor local APIC structure, type 0, 8 bytes),
// DSDT 5.2.11.1; AML encodings of NameOp/PackageOp from 20.2. PIIX4 PMBA at
// PCI config 0x40 and its enable bit at 0x80 bit 0 from Intel's 82371AB
// datasheet. Runs in the loaded image with boot services up.
#include "arch/x86/madt.h"

#include "arch/x86/cpu.h"
#include "boot/acpi.h"
#include "core/log.h"
#include "core/mem.h"

#define SDT_HDR	     36
#define MADT_LEN(n)  (SDT_HDR + 8 + 8 * (n))
#define FADT_LEN     244 // through X_GPE1_BLK (FADT revision 4)
#define FACS_LEN     64
#define MAX_OLD	     32 // XSDT entries kept from the firmware
#define PIIX4_PM_ID  0x71138086u
#define PCI_CFG_ADDR 0xcf8
#define PCI_CFG_DATA 0xcfc

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint8_t sum8(const uint8_t *p, unsigned len)
{
	uint8_t s = 0;

	for (unsigned i = 0; i < len; i++)
		s += p[i];
	return s;
}

static void sdt_header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, "SLAT  ", 6);
	memcpy(t + 16, "SLATACPI", 8);
	put32(t + 24, 1);
	memcpy(t + 28, "SLAT", 4);
	put32(t + 32, 1);
}

static void sdt_checksum(uint8_t *t)
{
	uint32_t len = load_le32(t + 4);

	t[9] = 0;
	t[9] = (uint8_t)(0x100 - sum8(t, len));
}

static uint32_t pci_read32(unsigned dev, unsigned fn, unsigned off)
{
	outl(PCI_CFG_ADDR, 0x80000000u | dev << 11 | fn << 8 | (off & 0xfc));
	return inl(PCI_CFG_DATA);
}

// The PIIX4 power-management I/O base on bus 0, or 0.
static uint16_t piix4_pmba(void)
{
	for (unsigned dev = 0; dev < 32; dev++) {
		for (unsigned fn = 0; fn < 8; fn++) {
			if (pci_read32(dev, fn, 0) != PIIX4_PM_ID)
				continue;
			if (!(pci_read32(dev, fn, 0x80) & 1)) // PMIOSE: PM I/O space on
				return 0;
			return (uint16_t)(pci_read32(dev, fn, 0x40) & 0xffc0);
		}
	}
	return 0;
}

static void build_madt(uint8_t *t, const uint32_t *apic_ids, unsigned n)
{
	sdt_header(t, "APIC", MADT_LEN(n), 4);
	put32(t + SDT_HDR, 0xfee00000u); // local APIC address
	put32(t + SDT_HDR + 4, 1);	 // PCAT_COMPAT: 8259s present
	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = t + SDT_HDR + 8 + 8 * i;
		e[0] = 0;	   // processor local APIC
		e[1] = 8;	   // length
		e[2] = (uint8_t)i; // ACPI processor UID
		e[3] = (uint8_t)apic_ids[i];
		put32(e + 4, 1); // enabled
	}
	sdt_checksum(t);
}

// \_S5_ = Package (4) {Zero, Zero, Zero, Zero}: SLP_TYP 0, the PIIX4's
// soft-off type.
static const uint8_t dsdt_aml[] = {0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0, 0, 0, 0};

static void build_fadt(uint8_t *fadt, uint8_t *dsdt, uint8_t *facs, uint16_t pmba)
{
	sdt_header(dsdt, "DSDT", SDT_HDR + sizeof(dsdt_aml), 2);
	memcpy(dsdt + SDT_HDR, dsdt_aml, sizeof(dsdt_aml));
	sdt_checksum(dsdt);
	memcpy(facs, "FACS", 4);
	put32(facs + 4, FACS_LEN);
	facs[32] = 2; // version

	sdt_header(fadt, "FACP", FADT_LEN, 4);
	put32(fadt + 36, (uint32_t)(uintptr_t)facs);
	put32(fadt + 40, (uint32_t)(uintptr_t)dsdt);
	put16(fadt + 46, 9);	     // SCI_INT
	put32(fadt + 48, 0);	     // SMI_CMD: none, the machine is in ACPI mode
	put32(fadt + 56, pmba);	     // PM1a_EVT_BLK
	put32(fadt + 64, pmba + 4u); // PM1a_CNT_BLK
	put32(fadt + 76, pmba + 8u); // PM_TMR_BLK
	fadt[88] = 4;		     // PM1_EVT_LEN
	fadt[89] = 2;		     // PM1_CNT_LEN
	fadt[91] = 4;		     // PM_TMR_LEN
	put16(fadt + 96, 101);	     // P_LVL2_LAT > 100: no C2
	put16(fadt + 98, 1001);	     // P_LVL3_LAT > 1000: no C3
	put16(fadt + 109, 3);	     // IAPC_BOOT_ARCH: legacy devices, 8042
	put32(fadt + 112, 1u | 1u << 2 | 1u << 4 | 1u << 5 | 1u << 10);
	// WBINVD, C1, power and sleep buttons not fixed, RESET_REG supported:
	fadt[116] = 1; // RESET_REG: system I/O, 8 bits at 0xCF9
	fadt[117] = 8;
	fadt[119] = 1;
	put64(fadt + 120, 0xcf9);
	fadt[128] = 6;				      // RESET_VALUE
	put64(fadt + 140, (uint64_t)(uintptr_t)dsdt); // X_DSDT
	sdt_checksum(fadt);
}

// The firmware's XSDT entries (RSDP revision >= 2: XSDT address at 24).
static unsigned old_entries(const void *rsdp, uint64_t *out)
{
	const uint8_t *r = rsdp;

	if (!r || memcmp(r, "RSD PTR ", 8) != 0 || r[15] < 2)
		return 0;
	const struct acpi_sdt_header *xsdt = (const void *)(uintptr_t)load_le64(r + 24);
	if (!xsdt || memcmp(xsdt->signature, "XSDT", 4) != 0 || xsdt->length < SDT_HDR)
		return 0;
	unsigned n = (unsigned)((xsdt->length - SDT_HDR) / 8);
	if (n > MAX_OLD)
		n = MAX_OLD;
	memcpy(out, (const uint8_t *)xsdt + SDT_HDR, 8 * n);
	return n;
}

bool x86_acpi_install_madt(EFI_SYSTEM_TABLE *st, const uint32_t *apic_ids, unsigned n,
			   const void **rsdp)
{
	if (acpi_find_table(*rsdp, "APIC"))
		return false;
	uint64_t old[MAX_OLD];
	unsigned n_old = old_entries(*rsdp, old);
	uint16_t pmba = n_old ? 0 : piix4_pmba();
	EFI_PHYSICAL_ADDRESS mem = 0xffffffffu; // 32-bit pointers in FADT
	EFI_STATUS s =
	    st->BootServices->AllocatePages(AllocateMaxAddress, EfiACPIReclaimMemory, 2, &mem);
	if (EFI_ERROR(s) || n > 64) {
		log_err("acpi: cannot allocate the MADT (0x%llx)\n", (unsigned long long)s);
		return false;
	}
	uint8_t *p = (uint8_t *)(uintptr_t)mem;
	memset(p, 0, 2 * 4096);
	uint8_t *r = p, *xsdt = p + 64, *facs = p + 512, *dsdt = p + 640, *fadt = p + 768;
	uint8_t *madt = p + 4096;
	unsigned nx = 0;
	uint64_t ent[MAX_OLD + 2];

	for (unsigned i = 0; i < n_old; i++)
		ent[nx++] = old[i];
	build_madt(madt, apic_ids, n);
	ent[nx++] = (uint64_t)(uintptr_t)madt;
	if (pmba) {
		build_fadt(fadt, dsdt, facs, pmba);
		ent[nx++] = (uint64_t)(uintptr_t)fadt;
	}
	sdt_header(xsdt, "XSDT", SDT_HDR + 8 * nx, 1);
	memcpy(xsdt + SDT_HDR, ent, 8 * nx);
	sdt_checksum(xsdt);

	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, "SLAT  ", 6);
	r[15] = 2; // revision: XSDT present
	put32(r + 20, 36);
	put64(r + 24, (uint64_t)(uintptr_t)xsdt);
	r[8] = (uint8_t)(0x100 - sum8(r, 20));
	r[32] = (uint8_t)(0x100 - sum8(r, 36));

	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;
	s = st->BootServices->InstallConfigurationTable(&acpi20, r);
	if (EFI_ERROR(s)) {
		log_err("acpi: cannot install the ACPI tables (0x%llx)\n", (unsigned long long)s);
		st->BootServices->FreePages(mem, 2);
		return false;
	}
	*rsdp = r;
	log_info("acpi: firmware has no MADT: installed one with %u local APIC%s%s at 0x%llx\n", n,
		 n == 1 ? "" : "s",
		 pmba ? " (+ FADT for the PIIX4 PM block, empty DSDT with \\_S5_)" : "",
		 (unsigned long long)mem);
	if (pmba)
		log_info(
		    "acpi: FADT: PM1a_EVT 0x%x, PM1a_CNT 0x%x, PM_TMR 0x%x, SCI 9, reset 0xcf9\n",
		    pmba, pmba + 4u, pmba + 8u);
	return true;
}
