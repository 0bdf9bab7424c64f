// SPDX-License-Identifier: Apache-2.0
//
// The primary's tick while a secondary runs. The primary (Linux at EL1, edk2
// under Slat) ticks on its virtual timer, which VCPU_RUN swaps out for the
// secondary's: without help a secondary that never exits would keep its CPU
// until some unrelated interrupt. So while a secondary runs, the EL2 physical
// timer (CNTHP, PPI 26) carries the primary's virtual-timer deadline (the
// primary's CNTVOFF is 0: same count); when it fires, the IRQ ends the run
// (HC_EXIT_PREEMPTED) and the primary, back with its own timer, takes its
// tick. PPI 26 is enabled in the GIC for the run only, with the group and
// priority the primary gave its timer's PPI 27.
//
// The GIC comes from the ACPI MADT at boot (GICD for GICv2, the
// redistributor range for GICv3); without it (device-tree boots) secondaries
// run without this help.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hv_vcpu.h"
#include "arch/arm64/hyp.h"
#include "boot/acpi.h"
#include "core/log.h"
#include "core/mem.h"

#define PPI_HYP_TIMER	 26
#define PPI_VIRT_TIMER	 27
#define GICX_IGROUPR0	 0x080 // GICD (v2, banked per CPU) / GICR SGI frame (v3)
#define GICX_ISENABLER0	 0x100
#define GICX_ICENABLER0	 0x180
#define GICX_ISACTIVER0	 0x300
#define GICX_ICACTIVER0	 0x380
#define GICX_IPRIORITYR	 0x400
#define GICR_TYPER	 0x008
#define GICR_TYPER_VLPIS (1ull << 1)
#define GICR_TYPER_LAST	 (1ull << 4)
#define GICR_SGI_OFFSET	 0x10000

#define PPI_MAINT_DEFAULT 25 // QEMU virt's and the usual GIC maintenance PPI

static uint64_t tick_gicd, tick_gicr, tick_gicr_len;
static uint64_t tick_gich, tick_gicv; // GICv2 virtualization frames (0: none)
static unsigned tick_maint_intid = PPI_MAINT_DEFAULT;
static uint64_t tick_ppi_base[ARM64_MAX_CPUS]; // per CPU: the frame holding PPI registers

// MADT (ACPI 6.5, 5.2.12): GICD entry (type 0xC) base at 8; GICR entry
// (type 0xE) base at 4, length at 12; GICC entry (type 0xB) GICV at 40, GICH
// at 48 and the VGIC maintenance interrupt at 56 (the first CPU's: every CPU
// has the same PPI, and on GICv2 sees its own interface at the same frames).
void arm64_hv_tick_init(const void *rsdp)
{
	const struct acpi_sdt_header *madt = rsdp ? acpi_find_table(rsdp, "APIC") : NULL;

	if (!madt) {
		log_info("arm64: no ACPI MADT: a secondary VM's run may hold off the primary's "
			 "tick\n");
		return;
	}
	const uint8_t *t = (const uint8_t *)madt;
	bool gicc_seen = false; // only the first GICC entry counts
	for (uint32_t off = 44; off + 2 <= madt->length;) {
		uint8_t type = t[off], len = t[off + 1];
		if (len < 2 || off + len > madt->length)
			break;
		if (type == 0xc && len >= 24)
			tick_gicd = load_le64(t + off + 8);
		bool first_gicc = type == 0xb && !gicc_seen;
		gicc_seen |= type == 0xb;
		if (first_gicc && len >= 60) {
			uint32_t m = load_le32(t + off + 56);
			if (m >= 16 && m < 32)
				tick_maint_intid = m;
			tick_gicv = load_le64(t + off + 40);
			tick_gich = load_le64(t + off + 48);
		}
		if (type == 0xe && len >= 16 && !tick_gicr) {
			tick_gicr = load_le64(t + off + 4);
			tick_gicr_len = load_le32(t + off + 12);
		}
		off += len;
	}
}

static volatile uint32_t *reg32(uint64_t base, uint64_t off)
{
	return (volatile uint32_t *)(uintptr_t)(base + off);
}

// This CPU's redistributor (GICR_TYPER.Affinity == MPIDR), or GICD on GICv2.
static uint64_t ppi_base_find(void)
{
	if (!arm64_cpu.gic_sysregs)
		return tick_gicd;
	uint64_t mpidr = read_sysreg(SYSREG_MPIDR_EL1);
	uint64_t aff = (mpidr & 0xffffff) | ((mpidr >> 32) & 0xff) << 24;

	for (uint64_t rd = tick_gicr; tick_gicr && rd < tick_gicr + tick_gicr_len;) {
		uint64_t typer = *(volatile uint64_t *)(uintptr_t)(rd + GICR_TYPER);
		if ((typer >> 32) == aff)
			return rd + GICR_SGI_OFFSET;
		if (typer & GICR_TYPER_LAST)
			break;
		rd += (typer & GICR_TYPER_VLPIS) ? 0x40000 : 0x20000;
	}
	return 0;
}

static uint64_t ppi_base(void)
{
	unsigned cpu = arm64_pcpu_index();

	if (!tick_ppi_base[cpu])
		tick_ppi_base[cpu] = ppi_base_find();
	return tick_ppi_base[cpu];
}

uint64_t arm64_hv_gicv3_ppi_frame(void)
{
	return arm64_cpu.gic_sysregs ? ppi_base() : 0;
}

bool arm64_hv_gicv2_frames(uint64_t *gich, uint64_t *gicv)
{
	*gich = tick_gich;
	*gicv = tick_gicv;
	return !arm64_cpu.gic_sysregs && tick_gicd && tick_gich && tick_gicv;
}

unsigned arm64_hv_maint_intid(void)
{
	return tick_maint_intid;
}

// A PPI of Slat's own enabled for a run, configured as the primary
// configured its timer's PPI 27 (group, priority), so that it reaches EL2
// whenever the primary's tick would have reached the primary.
void arm64_hv_ppi_enable(unsigned intid)
{
	uint64_t b = ppi_base();

	if (!b)
		return;
	volatile uint8_t *prio = (volatile uint8_t *)(uintptr_t)(b + GICX_IPRIORITYR);
	uint32_t grp = *reg32(b, GICX_IGROUPR0);

	prio[intid] = prio[PPI_VIRT_TIMER];
	grp = (grp & ~(1u << intid)) | ((grp >> PPI_VIRT_TIMER & 1) << intid);
	*reg32(b, GICX_IGROUPR0) = grp;
	dsb(sy);
	*reg32(b, GICX_ISENABLER0) = 1u << intid;
	dsb(sy);
	isb();
}

void arm64_hv_ppi_disable(unsigned intid)
{
	uint64_t b = tick_ppi_base[arm64_pcpu_index()];

	if (b)
		*reg32(b, GICX_ICENABLER0) = 1u << intid;
	dsb(sy);
}

void arm64_hv_ppi_set_active(unsigned intid, bool active)
{
	uint64_t b = ppi_base();

	if (b)
		*reg32(b, active ? GICX_ISACTIVER0 : GICX_ICACTIVER0) = 1u << intid;
	dsb(sy);
	isb();
}

// Before entering a secondary: `prim` holds the primary's EL1 timer state.
void arm64_hv_tick_arm(const struct arm64_el1_regs *prim)
{
	if ((prim->cntv_ctl & 3) != 1 || !ppi_base()) // not enabled, or masked
		return;
	write_sysreg("cnthp_cval_el2", prim->cntv_cval);
	write_sysreg("cnthp_ctl_el2", 1);
	arm64_hv_ppi_enable(PPI_HYP_TIMER);
}

// After the run: the timer off (its level drops) and PPI 26 disabled again.
void arm64_hv_tick_disarm(void)
{
	write_sysreg("cnthp_ctl_el2", 0);
	isb();
	arm64_hv_ppi_disable(PPI_HYP_TIMER);
}
