/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/x86/lib/smp.h - helpers of the SMP start-up payload (smp.c):
 * the xAPIC registers, the MADT's processors and the real-mode trampoline
 * (smp_ap_entry.S) with its data page layout.
 */
#ifndef TA_SMP_H
#define TA_SMP_H

#include <stdbool.h>
#include <stdint.h>

#define APIC_ID	    0x020
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define ICR_BUSY    (1u << 12)
#define ICR_ASSERT  (1u << 14)
#define ICR_LEVEL   (1u << 15)
#define ICR_INIT    (5u << 8)
#define ICR_STARTUP (6u << 8)
#define ICR_NMI	    (4u << 8)

/* The trampoline page (offsets fixed in smp_ap_entry.S): code at 0, the
 * real-mode vector table, the GDT and the 32-bit IDT, data, stack at the top. */
#define SMP_IVT	   0x400 /* 32 real-mode vectors (segment:offset) */
#define SMP_GDT	   0x480 /* null, flat code 0x08, flat data 0x10 */
#define SMP_IDT	   0x500 /* 32 interrupt gates */
#define SMP_DATA   0x800
#define SMP_VECTOR 32 /* vectors the AP's tables cover */

/* The AP's local APIC registers, read first thing after each start-up. */
struct smp_apic_snap {
	uint32_t svr, tpr, ldr, dfr, lvt_timer, lvt_lint0, lvt_lint1, lvt_error;
	uint32_t timer_initial, timer_divide;
	uint32_t isr_any, irr_any; /* OR of the 8 ISR / IRR words */
};

/* Naturally aligned (no packed attribute: clang's Windows target does not
 * always honour it); descriptor-table operands are written byte by byte. */
struct smp_tramp_data {
	volatile uint32_t starts;	/* +0 start-ups the AP completed */
	volatile uint32_t nmis;		/* +4 NMIs the AP took */
	volatile uint32_t faults;	/* +8 exceptions the AP took (then it stopped) */
	volatile uint32_t fault_vec;	/* +12 the last one's vector */
	uint32_t apic;			/* +16 the local APIC's address */
	uint32_t pm_offset;		/* +20 far pointer to the 32-bit entry */
	uint32_t pm_selector;		/* +24 */
	volatile uint32_t nmi_exits;	/* +28 NMI handlers the AP finished (before IRET) */
	uint8_t ivt[8], gdt[8], idt[8]; /* +32, +40, +48: limit16, base32 */
	uint32_t pad2[2];
	volatile struct smp_apic_snap snap; /* +64 */
};

extern const uint8_t smp_tramp_start[], smp_tramp_end[];
extern const uint8_t smp_tramp_rm_stubs[], smp_tramp_rm_nmi[];
extern const uint8_t smp_tramp_pm_stubs[], smp_tramp_pm_nmi[], smp_tramp_pm_entry[];

/* The local APIC's registers (xAPIC, from IA32_APIC_BASE). */
uint32_t smp_apic_read(unsigned off);
void smp_apic_write(unsigned off, uint32_t val);
/* Sends one IPI (ICR high then low) and waits until the APIC accepted it;
 * false when the delivery status stayed busy. */
bool smp_send_ipi(uint32_t dest_id, uint32_t icr_lo);

/* The APIC IDs of the enabled processors in the ACPI MADT's local APIC
 * entries (at most max); returns how many, 0 when there is no MADT. Local
 * x2APIC entries are only counted (*x2apic_entries). */
unsigned smp_madt_apic_ids(uint32_t *ids, unsigned max, unsigned *x2apic_entries);

/* Copies the trampoline into the page at `page` (below 1 MiB) and fills its
 * interrupt vector table and data. */
struct smp_tramp_data *smp_tramp_install(uint32_t page);

#endif
