// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/lib/a64_gic.c - just enough GIC for the payloads: SGIs and
 * PPIs of the calling CPU on a GICv3 (redistributor + ICC_* system registers,
 * group 1) or a GICv2 (banked distributor registers + memory-mapped CPU
 * interface), whichever the machine has.
 */
#include "tests/arch/arm64/lib/a64.h"

/* GICv3 CPU interface. */
#define ICC_PMR_EL1	"S3_0_C4_C6_0"
#define ICC_IAR1_EL1	"S3_0_C12_C12_0"
#define ICC_EOIR1_EL1	"S3_0_C12_C12_1"
#define ICC_RPR_EL1	"S3_0_C12_C11_3"
#define ICC_SGI1R_EL1	"S3_0_C12_C11_5"
#define ICC_IGRPEN1_EL1 "S3_0_C12_C12_7"
#define ICC_CTLR_EL1	"S3_0_C12_C12_4"

/* Distributor / redistributor SGI frame offsets (same for SGIs and PPIs). */
#define GICX_IGROUPR0	0x080
#define GICX_ISENABLER0 0x100
#define GICX_ICENABLER0 0x180
#define GICX_ISPENDR0	0x200
#define GICX_ICPENDR0	0x280
#define GICX_ISACTIVER0 0x300
#define GICX_IPRIORITYR 0x400
#define GICD_SGIR	0xf00
#define GICR_TYPER	0x08
#define GICR_SGI_FRAME	0x10000

/* GICv2 CPU interface. */
#define GICC_CTLR 0x00
#define GICC_PMR  0x04
#define GICC_IAR  0x0c
#define GICC_EOIR 0x10
#define GICC_RPR  0x14

static unsigned version;
static uint64_t local_base; /* GICv3: this CPU's SGI frame; GICv2: the GICD */
static uint64_t gicc;

static struct {
	uint32_t enable, group;
	uint32_t prio[8];
	unsigned pmr;
} saved;

static volatile uint32_t *reg32(uint64_t base, unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(base + off);
}

static volatile uint8_t *reg8(uint64_t base, unsigned off)
{
	return (volatile uint8_t *)(uintptr_t)(base + off);
}

/* The redistributor whose GICR_TYPER affinity is this CPU's MPIDR. */
static uint64_t find_redistributor(uint64_t base)
{
	uint64_t mpidr = a64_mrs(A64_MPIDR);
	uint32_t aff = (uint32_t)(a64_field(mpidr, 39, 32) << 24 | a64_field(mpidr, 23, 0));
	for (unsigned i = 0; i < 64; i++, base += 0x20000) {
		uint64_t typer = *(volatile uint64_t *)(uintptr_t)(base + GICR_TYPER);
		if ((uint32_t)(typer >> 32) == aff)
			return base;
		if (typer & (1u << 4)) /* Last */
			break;
	}
	return 0;
}

unsigned a64_gic_init(void)
{
	struct a64_madt m;
	bool sysregs = a64_field(a64_mrs(A64_ID_AA64PFR0), 27, 24) != 0;

	version = 0;
	if (!a64_madt_read(&m) || !m.gicd)
		return 0;
	ta_info("MADT: GICD 0x%llx version %u, GICC 0x%llx, GICR 0x%llx, %u CPUs",
		(unsigned long long)m.gicd, m.gic_version, (unsigned long long)m.gicc,
		(unsigned long long)m.gicr, m.n_cpus);
	if (sysregs && m.gicr) {
		uint64_t rd = find_redistributor(m.gicr);
		if (!rd)
			return 0;
		local_base = rd + GICR_SGI_FRAME;
		version = 3;
	} else if (!sysregs && m.gicc) {
		local_base = m.gicd;
		gicc = m.gicc;
		version = 2;
	}
	return version;
}

unsigned a64_gic_version(void)
{
	return version;
}

void a64_gic_save(void)
{
	saved.enable = *reg32(local_base, GICX_ISENABLER0);
	saved.group = *reg32(local_base, GICX_IGROUPR0);
	for (unsigned i = 0; i < 8; i++)
		saved.prio[i] = *reg32(local_base, GICX_IPRIORITYR + 4 * i);
	saved.pmr = a64_gic_pmr();
}

void a64_gic_restore(void)
{
	*reg32(local_base, GICX_ICENABLER0) = ~saved.enable;
	for (unsigned i = 0; i < 8; i++)
		*reg32(local_base, GICX_IPRIORITYR + 4 * i) = saved.prio[i];
	if (version == 3)
		*reg32(local_base, GICX_IGROUPR0) = saved.group;
	*reg32(local_base, GICX_ISENABLER0) = saved.enable;
	a64_gic_pmr_set(saved.pmr);
}

void a64_gic_local_config(unsigned intid, uint8_t prio, bool enable)
{
	uint32_t bit = 1u << intid;
	*reg32(local_base, GICX_ICENABLER0) = bit;
	a64_dsb();
	*reg8(local_base, GICX_IPRIORITYR + intid) = prio;
	/* GICv3: group 1 (IRQ at EL1). GICv2: the firmware's grouping is kept. */
	if (version == 3)
		*reg32(local_base, GICX_IGROUPR0) |= bit;
	a64_dsb();
	if (enable)
		*reg32(local_base, GICX_ISENABLER0) = bit;
	a64_dsb();
}

void a64_gic_local_only(uint32_t keep)
{
	*reg32(local_base, GICX_ICENABLER0) = ~keep;
	a64_dsb();
}

unsigned a64_gic_ack(void)
{
	if (version == 3) {
		unsigned iar = (unsigned)a64_mrs(ICC_IAR1_EL1);
		a64_dsb();
		return iar;
	}
	return *reg32(gicc, GICC_IAR);
}

void a64_gic_eoi(unsigned iar)
{
	if (version == 3) {
		a64_msr(ICC_EOIR1_EL1, iar);
		a64_isb();
		return;
	}
	*reg32(gicc, GICC_EOIR) = iar;
	a64_dsb();
}

void a64_gic_pmr_set(unsigned pmr)
{
	if (version == 3)
		a64_msr(ICC_PMR_EL1, pmr);
	else
		*reg32(gicc, GICC_PMR) = pmr;
	a64_dsb();
	a64_isb();
}

unsigned a64_gic_pmr(void)
{
	return version == 3 ? (unsigned)a64_mrs(ICC_PMR_EL1) : *reg32(gicc, GICC_PMR);
}

unsigned a64_gic_rpr(void)
{
	return version == 3 ? (unsigned)a64_mrs(ICC_RPR_EL1) : *reg32(gicc, GICC_RPR);
}

void a64_gic_sgi_self(unsigned intid)
{
	if (version == 3) {
		uint64_t mpidr = a64_mrs(A64_MPIDR);
		uint64_t v = (uint64_t)a64_field(mpidr, 39, 32) << 48 |
			     (uint64_t)a64_field(mpidr, 23, 16) << 32 |
			     (uint64_t)(intid & 15) << 24 |
			     (uint64_t)a64_field(mpidr, 15, 8) << 16 |
			     (1ull << (a64_field(mpidr, 7, 0) & 15));
		a64_msr(ICC_SGI1R_EL1, v);
		a64_isb();
		return;
	}
	*reg32(local_base, GICD_SGIR) = 2u << 24 | (intid & 15); /* to this CPU only */
	a64_dsb();
}

bool a64_gic_active(unsigned intid)
{
	return (*reg32(local_base, GICX_ISACTIVER0) >> intid) & 1;
}

bool a64_gic_pending(unsigned intid)
{
	return (*reg32(local_base, GICX_ISPENDR0) >> intid) & 1;
}

void a64_gic_clear_pending(unsigned intid)
{
	*reg32(local_base, GICX_ICPENDR0) = 1u << intid;
	a64_dsb();
}

bool a64_gic_cpuif_enabled(void)
{
	if (version == 3)
		return a64_mrs(ICC_IGRPEN1_EL1) & 1;
	return *reg32(gicc, GICC_CTLR) & 3;
}
