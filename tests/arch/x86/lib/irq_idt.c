// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/irq_idt.c - a private copy of the firmware's IDT with the
 * irq payloads' gates (irq.h). */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/irq.h"

extern char irq_stub_nmi[], irq_stub_spurious[], irq_stub_table[];

static uint64_t irq_idt[512] __attribute__((aligned(16)));
static uint8_t fw_idtr[10];
static irq_handler_fn irq_handlers[256];

void irq_dispatch(uint64_t vector, uint64_t *frame);
void irq_dispatch(uint64_t vector, uint64_t *frame)
{
	irq_handler_fn fn = irq_handlers[vector & 0xff];
	if (fn)
		fn(vector, frame);
}

void irq_set_handler(unsigned vector, irq_handler_fn fn)
{
	irq_handlers[vector & 0xff] = fn;
}

static void set_gate(unsigned v, const void *stub, uint16_t cs)
{
	uint64_t h = (uint64_t)(uintptr_t)stub;
	/* 64-bit interrupt gate, present, DPL 0, IST 0. */
	irq_idt[2 * v] =
	    (h & 0xffff) | ((uint64_t)cs << 16) | (0x8eull << 40) | (((h >> 16) & 0xffff) << 48);
	irq_idt[2 * v + 1] = h >> 32;
}

void irq_idt_install(void)
{
	uint16_t cs, limit;
	uint64_t base;
	uint8_t idtr[10];

	__asm__ volatile("sidt %0" : "=m"(fw_idtr));
	ta_memcpy(&limit, fw_idtr, 2);
	ta_memcpy(&base, fw_idtr + 2, 8);
	ta_memset(irq_idt, 0, sizeof(irq_idt));
	ta_memcpy(irq_idt, (const void *)(uintptr_t)base,
		  limit + 1u < sizeof(irq_idt) ? limit + 1u : sizeof(irq_idt));
	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	set_gate(IRQ_VEC_NMI, irq_stub_nmi, cs);
	set_gate(IRQ_VEC_SPURIOUS, irq_stub_spurious, cs);
	for (unsigned v = IRQ_VEC_FIRST; v <= IRQ_VEC_LAST; v++)
		set_gate(v, irq_stub_table + 16 * (v - IRQ_VEC_FIRST), cs);
	limit = sizeof(irq_idt) - 1;
	base = (uint64_t)(uintptr_t)irq_idt;
	ta_memcpy(idtr, &limit, 2);
	ta_memcpy(idtr + 2, &base, 8);
	__asm__ volatile("lidt %0" : : "m"(idtr) : "memory");
}

void irq_idt_restore(void)
{
	__asm__ volatile("lidt %0" : : "m"(fw_idtr) : "memory");
}

unsigned irq_wait_change(volatile unsigned *flag, unsigned old, unsigned n)
{
	while (n && *flag == old) {
		__asm__ volatile("pause" ::: "memory");
		n--;
	}
	return n;
}
