// SPDX-License-Identifier: Apache-2.0
//
// ACPI table lookups (ACPI 6.5: RSDP 5.2.5, XSDT 5.2.8, SPCR per Microsoft's
// Serial Port Console Redirection table specification).
#include "boot/acpi.h"
#include "core/mem.h"

#include <stdbool.h>

struct acpi_rsdp {
	char signature[8]; // "RSD PTR "
	uint8_t checksum;
	char oem_id[6];
	uint8_t revision; // 2 or later: XSDT present
	uint32_t rsdt_address;
	uint32_t length;
	uint64_t xsdt_address;
	uint8_t ext_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

static bool sum_is_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return sum == 0;
}

static bool same4(const char *a, const char *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

static const struct acpi_sdt_header *acpi_xsdt(const void *rsdp_ptr)
{
	const struct acpi_rsdp *rsdp = rsdp_ptr;
	static const char sig[8] = {'R', 'S', 'D', ' ', 'P', 'T', 'R', ' '};

	if (!rsdp)
		return NULL;
	for (int i = 0; i < 8; i++) {
		if (rsdp->signature[i] != sig[i])
			return NULL;
	}
	if (rsdp->revision < 2 || !sum_is_zero(rsdp, sizeof(*rsdp)))
		return NULL;
	const struct acpi_sdt_header *xsdt = (const void *)(uintptr_t)rsdp->xsdt_address;
	if (!xsdt || !same4(xsdt->signature, "XSDT") || xsdt->length < sizeof(*xsdt) ||
	    !sum_is_zero(xsdt, xsdt->length))
		return NULL;
	return xsdt;
}

const struct acpi_sdt_header *acpi_find_table(const void *rsdp, const char *sig)
{
	const struct acpi_sdt_header *xsdt = acpi_xsdt(rsdp);

	if (!xsdt)
		return NULL;
	size_t n = (xsdt->length - sizeof(*xsdt)) / 8;
	const uint8_t *entries = (const uint8_t *)(xsdt + 1);
	for (size_t i = 0; i < n; i++) {
		// Entries are unaligned.
		const struct acpi_sdt_header *t =
		    (const void *)(uintptr_t)load_le64(entries + 8 * i);
		if (t && same4(t->signature, sig) && t->length >= sizeof(*t) &&
		    sum_is_zero(t, t->length))
			return t;
	}
	return NULL;
}

// SPCR: interface type at offset 36, base address (a Generic Address
// Structure) at offset 40: space id (0 memory, 1 I/O), width, offset, access
// size, then the 64-bit address at offset 44.
#define SPCR_MIN_LEN	   80
#define SPCR_IFACE	   36
#define SPCR_GAS_SPACE	   40
#define SPCR_GAS_ADDRESS   44
#define SPCR_16550	   0x00
#define SPCR_16550_GENERIC 0x12
#define SPCR_PL011	   0x03
#define SPCR_SBSA_32BIT	   0x0d
#define SPCR_SBSA	   0x0e

bool acpi_spcr_uart(const void *rsdp, struct fw_uart *uart)
{
	const struct acpi_sdt_header *spcr = acpi_find_table(rsdp, "SPCR");

	if (!spcr || spcr->length < SPCR_MIN_LEN)
		return false;
	const uint8_t *t = (const uint8_t *)spcr;
	uint64_t base = load_le64(t + SPCR_GAS_ADDRESS);
	enum fw_uart_kind kind;
	switch (t[SPCR_IFACE]) {
	case SPCR_16550:
	case SPCR_16550_GENERIC:
		kind = FW_UART_16550;
		break;
	case SPCR_PL011:
	case SPCR_SBSA_32BIT:
	case SPCR_SBSA:
		kind = FW_UART_PL011;
		break;
	default:
		return false;
	}
	if (!base)
		return false;
	*uart = (struct fw_uart){
	    .kind = kind,
	    .port_io = t[SPCR_GAS_SPACE] == 1,
	    .base = base,
	    .source = "ACPI SPCR",
	};
	return true;
}
