// SPDX-License-Identifier: Apache-2.0
//
// arm64 capability probe and report (field positions from the Arm ARM,
// DDI 0487, D19 "AArch64 System Register Descriptions").
#include "arch/arch.h"
#include "arch/arm64/caps.h"
#include "arch/arm64/sysreg.h"
#include "boot/acpi.h"
#include "boot/fdt.h"
#include "core/log.h"

static struct arch_caps arm64_caps;

const char *arch_name(void)
{
	return "aarch64";
}

static unsigned parange_bits(unsigned enc)
{
	static const unsigned bits[] = {32, 36, 40, 42, 44, 48, 52};

	return enc < sizeof(bits) / sizeof(bits[0]) ? bits[enc] : 0;
}

static bool s2_4k_supported(uint64_t mmfr0)
{
	unsigned tgran4_2 = sysreg_field(mmfr0, 43, 40);

	if (tgran4_2 == 0) // "as stage 1": TGran4, 0xF means not implemented
		return sysreg_field(mmfr0, 31, 28) != 0xf;
	return tgran4_2 >= 2;
}

// MADT (ACPI 6.5, 5.2.12): entries from offset 44; the GIC distributor entry
// (type 0xC, length 24) holds the GIC version at offset 20.
static unsigned madt_gic_version(const void *rsdp)
{
	const struct acpi_sdt_header *madt = acpi_find_table(rsdp, "APIC");

	if (!madt)
		return 0;
	const uint8_t *t = (const uint8_t *)madt;
	for (uint32_t off = 44; off + 2 <= madt->length;) {
		uint8_t type = t[off], len = t[off + 1];
		if (len < 2 || off + len > madt->length)
			break;
		if (type == 0xc && len >= 24)
			return t[off + 20];
		off += len;
	}
	return 0;
}

static unsigned fdt_gic_version(const void *fdt)
{
	if (fdt_find_compatible(fdt, "arm,gic-v3", NULL))
		return 3;
	if (fdt_find_compatible(fdt, "arm,cortex-a15-gic", NULL) ||
	    fdt_find_compatible(fdt, "arm,gic-400", NULL))
		return 2;
	return 0;
}

static void probe_firmware_gic(struct arch_caps *c, const struct fw_info *fw)
{
	if ((c->gic_fw = madt_gic_version(fw->acpi_rsdp)) != 0)
		c->gic_fw_source = "ACPI MADT";
	else if ((c->gic_fw = fdt_gic_version(fw->fdt)) != 0)
		c->gic_fw_source = "device tree";
}

const struct arch_caps *arch_probe(const struct fw_info *fw)
{
	struct arch_caps *c = &arm64_caps;

	c->midr = read_sysreg(SYSREG_MIDR_EL1);
	c->current_el = sysreg_field(read_sysreg(SYSREG_CURRENTEL), 3, 2);
	c->hcr_el2 = c->current_el == 2 ? read_sysreg(SYSREG_HCR_EL2) : 0;
	c->pfr0 = read_sysreg(SYSREG_ID_AA64PFR0_EL1);
	c->mmfr0 = read_sysreg(SYSREG_ID_AA64MMFR0_EL1);
	c->mmfr1 = read_sysreg(SYSREG_ID_AA64MMFR1_EL1);
	c->mmfr2 = read_sysreg(SYSREG_ID_AA64MMFR2_EL1);
	c->isar0 = read_sysreg(SYSREG_ID_AA64ISAR0_EL1);

	c->el2_implemented = sysreg_field(c->pfr0, 11, 8) != 0;
	c->gic_sysreg = sysreg_field(c->pfr0, 27, 24);
	c->pa_bits = parange_bits(sysreg_field(c->mmfr0, 3, 0));
	c->s2_4k_granule = s2_4k_supported(c->mmfr0);
	c->vmid_bits = sysreg_field(c->mmfr1, 7, 4) == 2 ? 16 : 8;
	c->vhe = sysreg_field(c->mmfr1, 11, 8) != 0;
	c->fwb = sysreg_field(c->mmfr2, 43, 40) != 0;
	c->tlb = sysreg_field(c->isar0, 59, 56);
	probe_firmware_gic(c, fw);
	return c;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static const char *midr_part_name(uint64_t midr)
{
	unsigned impl = sysreg_field(midr, 31, 24), part = sysreg_field(midr, 15, 4);

	if (impl != 0x41)
		return "";
	switch (part) {
	case 0xd03:
		return " (Cortex-A53)";
	case 0xd07:
		return " (Cortex-A57)";
	case 0xd08:
		return " (Cortex-A72)";
	case 0xd0b:
		return " (Cortex-A76)";
	case 0xd0c:
		return " (Neoverse-N1)";
	case 0xd40:
		return " (Neoverse-V1)";
	case 0xd49:
		return " (Neoverse-N2)";
	default:
		return "";
	}
}

static const char *tlb_name(unsigned tlb)
{
	return tlb >= 2	  ? "yes (outer-shareable + range)"
	       : tlb == 1 ? "no (outer-shareable only)"
			  : "no";
}

static const char *gic_sysreg_name(unsigned gic)
{
	return gic == 0 ? "none" : gic == 1 ? "GICv3/v4" : gic == 3 ? "GICv4.1" : "unknown";
}

void arch_report(const struct arch_caps *c)
{
	log_info("cpu: MIDR_EL1 0x%08llx%s, implementer 0x%02x part 0x%03x r%up%u\n",
		 (unsigned long long)c->midr, midr_part_name(c->midr),
		 sysreg_field(c->midr, 31, 24), sysreg_field(c->midr, 15, 4),
		 sysreg_field(c->midr, 23, 20), sysreg_field(c->midr, 3, 0));
	log_info("arm64: CurrentEL EL%u, EL2 implemented %s\n", c->current_el,
		 yes_no(c->el2_implemented));
	if (c->current_el == 2)
		log_info("arm64: HCR_EL2 0x%llx (E2H %u, TGE %u, RW %u)\n",
			 (unsigned long long)c->hcr_el2, sysreg_field(c->hcr_el2, 34, 34),
			 sysreg_field(c->hcr_el2, 27, 27), sysreg_field(c->hcr_el2, 31, 31));
	log_info("arm64: PARange %u bits (ID_AA64MMFR0_EL1 0x%llx), stage-2 4K granule %s\n",
		 c->pa_bits, (unsigned long long)c->mmfr0, yes_no(c->s2_4k_granule));
	log_info("arm64: VHE %s, VMID bits %u (ID_AA64MMFR1_EL1 0x%llx)\n", yes_no(c->vhe),
		 c->vmid_bits, (unsigned long long)c->mmfr1);
	log_info("arm64: stage-2 FWB %s (ID_AA64MMFR2_EL1 0x%llx)\n", yes_no(c->fwb),
		 (unsigned long long)c->mmfr2);
	log_info("arm64: TLB range ops %s (ID_AA64ISAR0_EL1 0x%llx)\n", tlb_name(c->tlb),
		 (unsigned long long)c->isar0);
	log_info("arm64: GIC system registers %s (ID_AA64PFR0_EL1 0x%llx)\n",
		 gic_sysreg_name(c->gic_sysreg), (unsigned long long)c->pfr0);
	if (c->gic_fw)
		log_info("arm64: GIC from firmware: GICv%u (%s)\n", c->gic_fw, c->gic_fw_source);
	else
		log_info("arm64: GIC from firmware: unknown\n");
}

const char *arch_virt_unusable(const struct arch_caps *c)
{
	if (c->current_el != 2)
		return c->current_el == 1 ? "not entered at EL2 (the firmware runs at EL1)"
					  : "not entered at EL2";
	if (!c->s2_4k_granule)
		return "no stage-2 4 KiB translation granule";
	return NULL;
}
