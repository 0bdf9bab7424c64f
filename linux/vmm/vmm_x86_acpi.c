// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's ACPI tables, for a hardware-reduced platform (FADT flag
// HW_REDUCED_ACPI, ACPI 6.0): RSDP, XSDT, FADT, DSDT, MADT.
#include <stdint.h>
#include <string.h>

#include "vmm.h"
#include "vmm_x86_layout.h"

#define ACPI_HDR_LEN 36

static uint8_t acpi_sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

// A table header; the checksum is filled in by acpi_finish() once the body is.
static void acpi_header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put32(t, 4, len);
	t[8] = rev;
	memcpy(t + 10, "SLAT  ", 6);
	memcpy(t + 16, "SLATVMM ", 8);
	put32(t, 24, 1);
	memcpy(t + 28, "SLAT", 4);
	put32(t, 32, 1);
}

static void acpi_finish(uint8_t *t)
{
	t[9] = 0;
	t[9] = (uint8_t)-acpi_sum(t, get32(t, 4));
}

// A Generic Address Structure for one byte-wide I/O port.
static void acpi_gas_port(uint8_t *p, uint16_t port)
{
	p[0] = 1; // system I/O
	p[1] = 8; // bit width
	p[2] = 0; // bit offset
	p[3] = 1; // byte access
	put64(p, 4, port);
}

// The DSDT's fixed AML: \_S5_ (the sleep type poweroff writes to the sleep control
// register) and COM1 (PNP0501 at 0x3f8, IRQ 4: the 8250's interrupt).
static const uint8_t dsdt_aml[] = {
    // Name (_S5, Package (4) { 5, 5, 0, 0 })
    0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0a, SLEEP_TYPE_S5, 0x0a, SLEEP_TYPE_S5, 0x00,
    0x00,
    // Device (COM1) {
    0x5b, 0x82, 0x2b, 'C', 'O', 'M', '1',
    //   Name (_HID, EisaId ("PNP0501"))
    0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x05, 0x01,
    //   Name (_UID, Zero)
    0x08, '_', 'U', 'I', 'D', 0x00,
    //   Name (_CRS, ResourceTemplate () { IO (Decode16, 0x3f8, 0x3f8, 1, 8) IRQNoFlags () {4} })
    0x08, '_', 'C', 'R', 'S', 0x11, 0x10, 0x0a, 0x0d, 0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03, 0x01,
    0x08, 0x22, 1 << COM1_IRQ, 0x00, 0x79, 0x00,
    // }
};

#define FADT_LEN	  276
#define FADT_FLAGS	  112
#define FADT_HW_REDUCED	  (1u << 20)
#define FADT_RESET_SUP	  (1u << 10)
#define FADT_BOOT_ARCH	  109
#define FADT_NO_VGA	  (1u << 2)
#define FADT_NO_CMOS_RTC  (1u << 5)
#define FADT_RESET_REG	  116
#define FADT_RESET_VALUE  128
#define FADT_MINOR	  131
#define FADT_DSDT	  40
#define FADT_X_DSDT	  140
#define FADT_SLEEP_CTRL	  244
#define FADT_SLEEP_STATUS 256
#define FADT_HYPERVISOR	  268

static uint32_t acpi_fadt(uint8_t *t, uint64_t dsdt)
{
	acpi_header(t, "FACP", FADT_LEN, 6);
	put32(t, FADT_DSDT, (uint32_t)dsdt);
	put64(t, FADT_X_DSDT, dsdt);
	put16(t, FADT_BOOT_ARCH, FADT_NO_VGA | FADT_NO_CMOS_RTC); // and no 8042
	put32(t, FADT_FLAGS, FADT_HW_REDUCED | FADT_RESET_SUP);
	acpi_gas_port(t + FADT_RESET_REG, PORT_I8042_CMD);
	t[FADT_RESET_VALUE] = I8042_RESET;
	t[FADT_MINOR] = 0;
	acpi_gas_port(t + FADT_SLEEP_CTRL, PORT_SLEEP_CONTROL);
	acpi_gas_port(t + FADT_SLEEP_STATUS, PORT_SLEEP_STATUS);
	memcpy(t + FADT_HYPERVISOR, "SlatVMM", 8);
	acpi_finish(t);
	return FADT_LEN;
}

// AML for a virtio-mmio device (Linux's virtio_mmio driver matches _HID
// "LNRO0005"): Device (NAME) { Name (_HID, "LNRO0005") Name (_UID, UID)
// Name (_CRS, ResourceTemplate () { Memory32Fixed (ReadWrite, BASE, SIZE)
// Interrupt (ResourceConsumer, Level, ActiveHigh, Exclusive) { GSI } }) }.
// Every package here is under 64 bytes: one-byte PkgLength encodings.
// NAME is 4 characters; UID 0 or 1 (ZeroOp, OneOp).
static uint32_t aml_virtio_mmio(uint8_t *p, const char *name, uint8_t uid, uint32_t base,
				uint32_t size, uint32_t gsi)
{
	static const uint8_t head[] =
	    {
		0x5b, 0x82, 0,	 'V',  'B',  'L',  'K', // Device (NAME at [3]), PkgLength at [2]
		0x08, '_',  'H', 'I',  'D',  0x0d, 'L',	 'N', 'R', 'O',	 '0',
		'0',  '0',  '5', 0x00, 0x08, '_',  'U',	 'I', 'D', 0x00, 0x08,
		'_',  'C',  'R', 'S',  0x11, 0,	   0x0a, 0, // Buffer: PkgLength at [34], size at
							    // [36]
	    };
	uint32_t n = sizeof(head), res;

	memcpy(p, head, n);
	memcpy(p + 3, name, 4);
	p[27] = uid; // after "_UID"
	res = n;
	p[n++] = 0x86; // Memory32Fixed: 9 bytes of body
	p[n++] = 9;
	p[n++] = 0;
	p[n++] = 1; // read/write
	put32(p, n, base);
	put32(p, n + 4, size);
	n += 8;
	p[n++] = 0x89; // Extended Interrupt: 6 bytes of body
	p[n++] = 6;
	p[n++] = 0;
	p[n++] = 0x01; // consumer, level, active high, exclusive
	p[n++] = 1;    // one interrupt
	put32(p, n, gsi);
	n += 4;
	p[n++] = 0x79; // end tag, checksum 0: none
	p[n++] = 0;
	p[36] = (uint8_t)(n - res); // the buffer's size
	p[34] = (uint8_t)(n - 34);  // from the buffer's PkgLength to its end
	p[2] = (uint8_t)(n - 2);    // from the device's PkgLength to its end
	return n;
}

static uint32_t acpi_dsdt(uint8_t *t, bool virtio_blk, bool virtio_con)
{
	uint32_t len = ACPI_HDR_LEN + sizeof(dsdt_aml);

	memcpy(t + ACPI_HDR_LEN, dsdt_aml, sizeof(dsdt_aml));
	if (virtio_blk)
		len += aml_virtio_mmio(t + len, "VBLK", 0, (uint32_t)GPA_VIRTIO_BLK,
				       VIRTIO_MMIO_SIZE, VIRTIO_BLK_GSI);
	if (virtio_con)
		len += aml_virtio_mmio(t + len, "VCON", 1, (uint32_t)GPA_VIRTIO_CON,
				       VIRTIO_MMIO_SIZE, VIRTIO_CON_GSI);
	acpi_header(t, "DSDT", len, 2);
	acpi_finish(t);
	return len;
}

// MADT: one enabled local APIC per vCPU (APIC IDs 0..n-1), the I/O APIC at
// GSI 0, and IRQ 4 as an ISA interrupt on GSI 4 (edge, active high).
static uint32_t acpi_madt(uint8_t *t, int ncpus)
{
	uint32_t off = ACPI_HDR_LEN + 8;

	put32(t, ACPI_HDR_LEN, (uint32_t)GPA_LAPIC);
	put32(t, ACPI_HDR_LEN + 4, 0); // no PCAT_COMPAT: no 8259s
	for (int i = 0; i < ncpus; i++, off += 8) {
		t[off] = 0; // processor local APIC
		t[off + 1] = 8;
		t[off + 2] = (uint8_t)i; // ACPI processor UID
		t[off + 3] = (uint8_t)i; // APIC ID
		put32(t, off + 4, 1);	 // enabled
	}
	t[off] = 1; // I/O APIC
	t[off + 1] = 12;
	t[off + 2] = (uint8_t)ncpus; // its ID, after the CPUs'
	t[off + 3] = 0;
	put32(t, off + 4, (uint32_t)GPA_IOAPIC);
	put32(t, off + 8, 0); // GSI base
	off += 12;
	t[off] = 2; // interrupt source override
	t[off + 1] = 10;
	t[off + 2] = 0; // ISA
	t[off + 3] = COM1_IRQ;
	put32(t, off + 4, COM1_IRQ);
	put16(t, off + 8, 0x5); // active high, edge
	off += 10;
	acpi_header(t, "APIC", off, 4);
	acpi_finish(t);
	return off;
}

static uint32_t acpi_xsdt(uint8_t *t, const uint64_t *tables, int n)
{
	uint32_t len = ACPI_HDR_LEN + 8u * n;

	acpi_header(t, "XSDT", len, 1);
	for (int i = 0; i < n; i++)
		put64(t, ACPI_HDR_LEN + 8u * i, tables[i]);
	acpi_finish(t);
	return len;
}

static void acpi_rsdp(uint8_t *t, uint64_t xsdt)
{
	memcpy(t, "RSD PTR ", 8);
	memcpy(t + 9, "SLAT  ", 6);
	t[15] = 2; // revision: ACPI 2.0+, with the XSDT
	put32(t, 20, 36);
	put64(t, 24, xsdt);
	t[8] = (uint8_t)-acpi_sum(t, 20);
	t[32] = (uint8_t)-acpi_sum(t, 36);
}

static uint64_t align16(uint64_t a)
{
	return (a + 15) & ~15ull;
}

// Lays the tables out from GPA_ACPI: RSDP, XSDT, FADT, DSDT, MADT. Returns
// the RSDP's address.
uint64_t build_acpi(int ncpus, bool virtio_blk, bool virtio_con)
{
	uint64_t rsdp = GPA_ACPI, xsdt = rsdp + 64, fadt = xsdt + 64;
	uint64_t dsdt = align16(fadt + FADT_LEN), madt;
	uint64_t tables[2];

	madt = align16(dsdt + acpi_dsdt(gpa(dsdt), virtio_blk, virtio_con));
	acpi_fadt(gpa(fadt), dsdt);
	acpi_madt(gpa(madt), ncpus);
	tables[0] = fadt;
	tables[1] = madt;
	acpi_xsdt(gpa(xsdt), tables, 2);
	acpi_rsdp(gpa(rsdp), xsdt);
	return rsdp;
}

// ---- loading ----
