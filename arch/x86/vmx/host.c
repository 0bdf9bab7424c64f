// SPDX-License-Identifier: Apache-2.0
//
// Slat's own tables for VMX root operation, all inside the reserved region
// (the firmware's page tables, GDT and IDT are boot-services memory the OS
// reuses): an identity map of the physical address space (1 GiB pages when
// the CPU has them, else 2 MiB), a GDT with a 64-bit code segment, a data
// segment and a TSS (the host TR selector cannot be 0), and an IDT whose
// handlers print the fault and park the CPU.
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/vmx/hw.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

#define PTE_P	(1ull << 0)
#define PTE_RW	(1ull << 1)
#define PTE_PS	(1ull << 7)
#define GDT_CS	0x08
#define GDT_DS	0x10
#define GDT_TSS 0x18

// Highest physical address the host must reach: the top of the memory map,
// at least 4 GiB (MMIO such as the local APIC lives below 4 GiB).
static uint64_t phys_top(const struct slat_plan *plan)
{
	uint64_t top = 4ull << 30;

	for (unsigned i = 0; i < plan->n_ranges; i++) {
		uint64_t end = plan->ranges[i].base + plan->ranges[i].size;
		if (end > top)
			top = end;
	}
	return (top + (1ull << 30) - 1) & ~((1ull << 30) - 1);
}

static bool build_page_tables(struct region *r, const struct slat_plan *plan, uint64_t *cr3,
			      uint64_t *top_out)
{
	bool gb = cpuid(0x80000001, 0).edx & (1u << 26);
	uint64_t top = phys_top(plan);
	uint64_t n_gib = top >> 30;

	if (n_gib > 512 * 512)
		n_gib = 512 * 512;
	uint64_t pml4 = region_alloc(r, 1, 4096);
	if (!pml4)
		return false;
	uint64_t *l4 = (uint64_t *)(uintptr_t)pml4;
	for (uint64_t g = 0; g < n_gib; g++) {
		uint64_t i4 = g / 512, i3 = g % 512;
		if (!l4[i4]) {
			uint64_t p = region_alloc(r, 1, 4096);
			if (!p)
				return false;
			l4[i4] = p | PTE_P | PTE_RW;
		}
		uint64_t *l3 = (uint64_t *)(uintptr_t)(l4[i4] & ~0xfffull);
		if (gb) {
			l3[i3] = (g << 30) | PTE_P | PTE_RW | PTE_PS;
			continue;
		}
		uint64_t pd = region_alloc(r, 1, 4096);
		if (!pd)
			return false;
		uint64_t *l2 = (uint64_t *)(uintptr_t)pd;
		for (unsigned i = 0; i < 512; i++)
			l2[i] = (g << 30) + ((uint64_t)i << 21) | PTE_P | PTE_RW | PTE_PS;
		l3[i3] = pd | PTE_P | PTE_RW;
	}
	*cr3 = pml4;
	*top_out = n_gib << 30;
	log_debug("vmx: host page tables: %llu GiB identity-mapped with %s pages\n",
		  (unsigned long long)n_gib, gb ? "1 GiB" : "2 MiB");
	return true;
}

static void build_gdt(uint64_t gdt, uint64_t tss)
{
	uint64_t *d = (uint64_t *)(uintptr_t)gdt;
	uint64_t limit = 0x67;

	d[0] = 0;
	d[1] = 0x00af9b000000ffffull; // 64-bit code, DPL 0, present, accessed
	d[2] = 0x00cf93000000ffffull; // data, writable, present, accessed
	// 64-bit available TSS (type 9), 16 bytes.
	d[3] = (limit & 0xffff) | ((tss & 0xffffff) << 16) | (0x89ull << 40) |
	       (((tss >> 24) & 0xff) << 56);
	d[4] = tss >> 32;
}

static void build_idt(uint64_t idt)
{
	uint64_t *d = (uint64_t *)(uintptr_t)idt;
	uint64_t stubs = (uint64_t)(uintptr_t)vmx_idt_stubs;

	for (unsigned v = 0; v < 32; v++) {
		uint64_t h = stubs + 16 * v;
		// 64-bit interrupt gate (type 0xE), present, DPL 0, IST 0.
		d[2 * v] = (h & 0xffff) | ((uint64_t)GDT_CS << 16) | (0x8eull << 40) |
			   (((h >> 16) & 0xffff) << 48);
		d[2 * v + 1] = h >> 32;
	}
}

bool vmx_host_build(struct region *r, const struct slat_plan *plan, struct vmx_host *h)
{
	if (!build_page_tables(r, plan, &h->cr3, &h->map_top))
		return false;
	h->gdt = region_alloc(r, 1, 4096);
	h->idt = region_alloc(r, 1, 4096);
	h->tss = region_alloc(r, 1, 4096);
	h->msr_bitmap = region_alloc(r, 1, 4096);
	h->io_bitmap_a = region_alloc(r, 1, 4096);
	h->io_bitmap_b = region_alloc(r, 1, 4096);
	if (!h->gdt || !h->idt || !h->tss || !h->msr_bitmap || !h->io_bitmap_a || !h->io_bitmap_b)
		return false;
	h->gdt_limit = 5 * 8 - 1;
	h->idt_limit = 32 * 16 - 1;
	build_gdt(h->gdt, h->tss);
	build_idt(h->idt);
	return true;
}

static const char *const exc_names[32] = {
    "#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "CSO", "#TS",
    "#NP", "#SS", "#GP", "#PF", "15",  "#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
};

// frame: error code, rip, cs, rflags, rsp, ss. An exception in root
// operation is a Slat bug: print and park (an NMI is ignored).
void vmx_host_exception(uint64_t vector, uint64_t *frame)
{
	if (vector == 2) {
		vmx_host_nmi();
		return;
	}
	uint64_t cr2;
	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	log_err("vmx: exception %s (vector %llu) in VMX root on cpu %u: error 0x%llx rip 0x%llx "
		"rsp 0x%llx cr2 0x%llx\n",
		vector < 32 && exc_names[vector] ? exc_names[vector] : "?",
		(unsigned long long)vector, arch_cpu_id(), (unsigned long long)frame[0],
		(unsigned long long)frame[1], (unsigned long long)frame[4],
		(unsigned long long)cr2);
	x86_park();
}
