/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/arm64/lib/a64.h - arm64 support for the architectural payloads:
 * system registers, the payload's own EL1 exception vectors (a64_vectors.S,
 * a64_exc.c), the ACPI tables (a64_acpi.c), a GICv2/GICv3 driver
 * (a64_gic.c) and PSCI calls on the firmware's conduit (a64_psci.c).
 */
#ifndef TA_A64_H
#define TA_A64_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/arch/lib/ta.h"

#define a64_mrs(name)                                                                              \
	({                                                                                         \
		uint64_t v_;                                                                       \
		__asm__ volatile("mrs %0, " name : "=r"(v_)::"memory");                            \
		v_;                                                                                \
	})
#define a64_msr(name, v) __asm__ volatile("msr " name ", %0" ::"r"((uint64_t)(v)) : "memory")
#define a64_isb()	 __asm__ volatile("isb" ::: "memory")
#define a64_dsb()	 __asm__ volatile("dsb sy" ::: "memory")

static inline unsigned a64_field(uint64_t v, unsigned hi, unsigned lo)
{
	return (unsigned)((v >> lo) & ((1ull << (hi - lo + 1)) - 1));
}

#define A64_ID_AA64PFR0	 "S3_0_C0_C4_0"
#define A64_ID_AA64PFR1	 "S3_0_C0_C4_1"
#define A64_ID_AA64ISAR1 "S3_0_C0_C6_1"
#define A64_ID_AA64ISAR2 "S3_0_C0_C6_2"
#define A64_MPIDR	 "S3_0_C0_C0_5"

/* ---- exceptions (a64_vectors.S, a64_exc.c) ---------------------------- */

/* The last synchronous exception the payload's vectors took. */
struct a64_exc {
	unsigned count; /* since a64_exc_arm() */
	unsigned kind;	/* vector index: 4 = current EL SPx sync */
	uint64_t esr, far, elr;
};
extern volatile struct a64_exc a64_exc;

/* Installs the payload's VBAR_EL1 (keeping the firmware's to restore) with
 * the firmware's TPL raised to HIGH_LEVEL (IRQs masked, its timer handlers
 * held off) until a64_vectors_restore(). */
void a64_vectors_install(void);
void a64_vectors_restore(void);
/* Forgets the last exception: the next one is counted from zero. Every
 * synchronous exception returns past the instruction that took it (SVC, HVC
 * and SMC already return after themselves). */
void a64_exc_arm(void);
/* Called for every IRQ with interrupts masked (NULL: count only). */
extern void (*volatile a64_irq_fn)(void);
extern volatile unsigned a64_irq_count;

static inline unsigned a64_ec(uint64_t esr)
{
	return (unsigned)(esr >> 26) & 0x3f;
}
static inline uint32_t a64_iss(uint64_t esr)
{
	return (uint32_t)(esr & 0x1ffffff);
}

static inline void a64_irq_unmask(void)
{
	__asm__ volatile("msr daifclr, #2; isb" ::: "memory");
}
static inline void a64_irq_mask(void)
{
	__asm__ volatile("msr daifset, #2; isb" ::: "memory");
}


/* The counter and a bounded wait: spins until *flag != 0 or `ticks` of the
 * physical counter pass. Returns the flag's value. */
static inline uint64_t a64_cntpct(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntpct_el0" : "=r"(v)::"memory");
	return v;
}
unsigned a64_wait_flag(volatile unsigned *flag, uint64_t ticks);

/* ---- ACPI (a64_acpi.c) -------------------------------------------------- */

/* The ACPI table with this signature from the XSDT; NULL if absent. */
const void *a64_acpi_table(const char *sig);
/* FADT ARM boot architecture flags (bit 0 PSCI compliant, bit 1 use HVC). */
unsigned a64_fadt_arm_flags(void);

struct a64_madt {
	unsigned gic_version; /* GICD entry's version field (0: not given) */
	uint64_t gicd, gicc;  /* GICv2 CPU interface (first GICC entry) */
	uint64_t gicr;	      /* first GICR discovery range (0: none) */
	unsigned n_cpus;
	uint64_t mpidr[8];
};
bool a64_madt_read(struct a64_madt *m);

/* ---- GIC (a64_gic.c) ---------------------------------------------------- */

/* Finds the GIC (ID_AA64PFR0_EL1.GIC, then the MADT); returns 2, 3 or 0. */
unsigned a64_gic_init(void);
unsigned a64_gic_version(void);
/* Saves the enables, priorities and PMR the payload changes; restores them. */
void a64_gic_save(void);
void a64_gic_restore(void);
/* SGI/PPI `intid` (< 32): priority, group (GICv3: group 1), enable. */
void a64_gic_local_config(unsigned intid, uint8_t prio, bool enable);
/* Disables every SGI/PPI but those set in `keep` (bit per INTID). */
void a64_gic_local_only(uint32_t keep);
unsigned a64_gic_ack(void); /* IAR: INTID (GICv2: | source CPU << 10) */
void a64_gic_eoi(unsigned iar);
void a64_gic_pmr_set(unsigned pmr);
unsigned a64_gic_pmr(void);
unsigned a64_gic_rpr(void);
void a64_gic_sgi_self(unsigned intid);
bool a64_gic_active(unsigned intid);
bool a64_gic_pending(unsigned intid);
void a64_gic_clear_pending(unsigned intid);
/* The CPU interface is enabled for the group the payload uses. */
bool a64_gic_cpuif_enabled(void);

/* ---- PSCI (a64_psci.c, a64_vectors.S) ----------------------------------- */

#define PSCI_VERSION	       0x84000000u
#define PSCI_CPU_SUSPEND_64    0xc4000001u
#define PSCI_CPU_OFF	       0x84000002u
#define PSCI_CPU_ON_64	       0xc4000003u
#define PSCI_AFFINITY_INFO_64  0xc4000004u
#define PSCI_MIGRATE_INFO_TYPE 0x84000006u
#define PSCI_SYSTEM_OFF	       0x84000008u
#define PSCI_SYSTEM_RESET      0x84000009u
#define PSCI_FEATURES	       0x8400000au

/* Reads the conduit from the FADT; false if the firmware offers no PSCI. */
bool a64_psci_init(void);
bool a64_psci_uses_hvc(void);
int64_t a64_psci(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3);
/* Raw conduit calls (x0..x3 in, x0 out). */
int64_t a64_hvc(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3);
int64_t a64_smc(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3);

/* CPU_ON target (MMU off, x0 = struct a64_cpu_mailbox *): writes `started`,
 * waits (bounded) for `release`, then CPU_OFF on the mailbox's conduit. */
struct a64_cpu_mailbox {
	uint32_t started;    /* 0: written 1 by the new CPU */
	uint32_t release;    /* 4: the new CPU calls CPU_OFF once this is set */
	uint32_t use_hvc;    /* 8: conduit for CPU_OFF */
	uint32_t current_el; /* 12: CurrentEL >> 2 as the new CPU saw it */
	uint64_t sctlr;	     /* 16: SCTLR_EL1 at entry */
	uint64_t x0;	     /* 24: context id it got */
};
void a64_cpu_entry(void);

#endif
