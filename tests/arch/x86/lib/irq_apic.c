// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/irq_apic.c - local APIC, IOAPIC, 8259 PIC helpers of the
 * irq payloads (irq.h). */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/irq.h"
#include "tests/arch/x86/lib/x86.h"

#define IOAPIC_BASE 0xfec00000ull

static volatile uint32_t *apic_reg(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)((rdmsr(0x1b) & ~0xfffull) + off);
}

uint32_t irq_apic_read(unsigned off)
{
	return *apic_reg(off);
}

void irq_apic_write(unsigned off, uint32_t v)
{
	*apic_reg(off) = v;
}

uint32_t irq_apic_id(void)
{
	return irq_apic_read(APIC_ID) >> 24;
}

void irq_apic_eoi(void)
{
	irq_apic_write(APIC_EOI, 0);
}

int irq_apic_bit(unsigned base, unsigned vector)
{
	return (irq_apic_read(base + 0x10 * (vector / 32)) >> (vector % 32)) & 1;
}

static uint32_t saved_tpr, saved_svr, saved_lvt, saved_div, saved_icr;

void irq_apic_save(void)
{
	saved_tpr = irq_apic_read(APIC_TPR);
	saved_svr = irq_apic_read(APIC_SVR);
	saved_lvt = irq_apic_read(APIC_LVT_TMR);
	saved_div = irq_apic_read(APIC_TMR_DIV);
	saved_icr = irq_apic_read(APIC_TMR_ICR);
	irq_apic_write(APIC_LVT_TMR, saved_lvt | (1u << 16)); /* the firmware's timer: masked */
	irq_apic_write(APIC_SVR, (saved_svr & ~0xffu) | 0x100 | IRQ_VEC_SPURIOUS);
}

void irq_apic_restore(void)
{
	irq_apic_write(APIC_LVT_TMR, saved_lvt | (1u << 16));
	irq_apic_write(APIC_TMR_ICR, 0);
	irq_apic_write(APIC_TMR_DIV, saved_div);
	irq_apic_write(APIC_LVT_TMR, saved_lvt);
	if (!(saved_lvt & (1u << 16)) || saved_icr)
		irq_apic_write(APIC_TMR_ICR, saved_icr);
	irq_apic_write(APIC_TPR, saved_tpr);
	irq_apic_write(APIC_SVR, saved_svr);
}

static void icr_send(uint32_t hi, uint32_t lo)
{
	for (unsigned i = 0; i < 1000000 && (irq_apic_read(APIC_ICR_LO) & (1u << 12)); i++)
		__asm__ volatile("pause");
	irq_apic_write(APIC_ICR_HI, hi);
	irq_apic_write(APIC_ICR_LO, lo);
}

void irq_send_self_fixed(uint8_t vector)
{
	icr_send(0, (1u << 18) | (1u << 14) | vector); /* self, assert, fixed */
}

void irq_send_self_nmi(void)
{
	icr_send(irq_apic_id() << 24, (4u << 8) | (1u << 14)); /* NMI, assert, physical */
}

uint32_t irq_ioapic_read(unsigned reg)
{
	*(volatile uint32_t *)(uintptr_t)IOAPIC_BASE = reg;
	return *(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10);
}

void irq_ioapic_write(unsigned reg, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)IOAPIC_BASE = reg;
	*(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10) = v;
}

static uint32_t saved_rte_lo, saved_rte_hi;

void irq_ioapic_save(unsigned pin)
{
	saved_rte_lo = irq_ioapic_read(0x10 + 2 * pin);
	saved_rte_hi = irq_ioapic_read(0x11 + 2 * pin);
}

void irq_ioapic_set(unsigned pin, uint32_t lo, uint32_t dest_apic_id)
{
	irq_ioapic_write(0x10 + 2 * pin, IOAPIC_MASKED);
	irq_ioapic_write(0x11 + 2 * pin, dest_apic_id << 24);
	irq_ioapic_write(0x10 + 2 * pin, lo);
}

void irq_ioapic_restore(unsigned pin)
{
	irq_ioapic_write(0x10 + 2 * pin, saved_rte_lo | IOAPIC_MASKED);
	irq_ioapic_write(0x11 + 2 * pin, saved_rte_hi);
	irq_ioapic_write(0x10 + 2 * pin, saved_rte_lo);
}

static uint8_t saved_pic1, saved_pic2;

void irq_pic_mask_all(void)
{
	saved_pic1 = inb(0x21);
	saved_pic2 = inb(0xa1);
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
}

void irq_pic_restore(void)
{
	outb(0xa1, saved_pic2);
	outb(0x21, saved_pic1);
}
