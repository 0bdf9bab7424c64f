// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/smp_tramp.c - installs the AP's code (smp_ap_entry.S) in a low page. */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/smp.h"
#include "tests/arch/x86/lib/x86.h"

_Static_assert(__builtin_offsetof(struct smp_tramp_data, nmi_exits) == 28,
	       "layout of smp_ap_entry.S");
_Static_assert(__builtin_offsetof(struct smp_tramp_data, ivt) == 32, "layout of smp_ap_entry.S");
_Static_assert(__builtin_offsetof(struct smp_tramp_data, snap) == 64, "layout of smp_ap_entry.S");

static uint32_t offset_of(const uint8_t *sym)
{
	return (uint32_t)(sym - smp_tramp_start);
}

static void desc(uint8_t *op, uint16_t limit, uint32_t base)
{
	ta_memcpy(op, &limit, 2);
	ta_memcpy(op + 2, &base, 4);
}

static void gate32(uint64_t *idt, unsigned v, uint32_t target)
{
	/* 32-bit interrupt gate, present, DPL 0, selector 0x08 */
	idt[v] = (target & 0xffff) | (0x08ull << 16) | (0x8e00ull << 32) |
		 ((uint64_t)(target >> 16) << 48);
}

struct smp_tramp_data *smp_tramp_install(uint32_t page)
{
	uint8_t *p = (uint8_t *)(uintptr_t)page;
	uint16_t seg = (uint16_t)(page >> 4);

	ta_memset(p, 0, 4096);
	ta_memcpy(p, smp_tramp_start, (size_t)(smp_tramp_end - smp_tramp_start));
	uint32_t *ivt = (uint32_t *)(p + SMP_IVT);
	uint64_t *gdt = (uint64_t *)(p + SMP_GDT);
	uint64_t *idt = (uint64_t *)(p + SMP_IDT);
	for (unsigned v = 0; v < SMP_VECTOR; v++) {
		uint32_t rm =
		    v == 2 ? offset_of(smp_tramp_rm_nmi) : offset_of(smp_tramp_rm_stubs) + 8 * v;
		uint32_t pm =
		    v == 2 ? offset_of(smp_tramp_pm_nmi) : offset_of(smp_tramp_pm_stubs) + 8 * v;
		ivt[v] = (uint32_t)seg << 16 | rm;
		gate32(idt, v, page + pm);
	}
	gdt[1] = 0x00cf9a000000ffffull; /* flat 32-bit code */
	gdt[2] = 0x00cf92000000ffffull; /* flat data */
	struct smp_tramp_data *d = (struct smp_tramp_data *)(p + SMP_DATA);
	d->apic = (uint32_t)(rdmsr(0x1b) & ~0xfffull);
	d->pm_offset = page + offset_of(smp_tramp_pm_entry);
	d->pm_selector = 0x08;
	desc(d->ivt, SMP_VECTOR * 4 - 1, page + SMP_IVT);
	desc(d->gdt, 3 * 8 - 1, page + SMP_GDT);
	desc(d->idt, SMP_VECTOR * 8 - 1, page + SMP_IDT);
	return d;
}
