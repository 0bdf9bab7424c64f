// SPDX-License-Identifier: Apache-2.0
//
// The host environment of both x86 back ends (host_env.h).
#include "arch/x86/host_env.h"

#include "arch/x86/cpu.h"
#include "core/log.h"

#define PTE_P  (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_PS (1ull << 7)
#define GIB    (1ull << 30)

// Highest physical address the host must reach: the top of the memory map,
// at least 4 GiB (MMIO such as the local APIC lives below 4 GiB).
static uint64_t phys_top(const struct slat_plan *plan)
{
	uint64_t top = 4 * GIB;

	for (unsigned i = 0; i < plan->n_ranges; i++) {
		uint64_t end = plan->ranges[i].base + plan->ranges[i].size;
		if (end > top)
			top = end;
	}
	return (top + GIB - 1) & ~(GIB - 1);
}

// Maps 1 GiB at `g` GiB: one PDPT entry, or a page directory of 2 MiB pages.
static bool map_gib(struct region *r, uint64_t *l3, uint64_t g, bool gb_pages)
{
	if (gb_pages) {
		l3[g % 512] = (g << 30) | PTE_P | PTE_RW | PTE_PS;
		return true;
	}
	uint64_t pd = region_alloc(r, 1, 4096);
	if (!pd)
		return false;
	uint64_t *l2 = (uint64_t *)(uintptr_t)pd;
	for (uint64_t i = 0; i < 512; i++)
		l2[i] = ((g << 30) + (i << 21)) | PTE_P | PTE_RW | PTE_PS;
	l3[g % 512] = pd | PTE_P | PTE_RW;
	return true;
}

static bool build_page_tables(struct region *r, const struct slat_plan *plan,
			      struct x86_host_env *env)
{
	bool gb = cpuid(0x80000001u, 0).edx & (1u << 26);
	uint64_t n_gib = phys_top(plan) / GIB;
	uint64_t pml4 = region_alloc(r, 1, 4096);

	if (n_gib > 512 * 512) // four levels reach 256 TiB
		n_gib = 512 * 512;
	if (!pml4)
		return false;
	uint64_t *l4 = (uint64_t *)(uintptr_t)pml4;
	for (uint64_t g = 0; g < n_gib; g++) {
		uint64_t i4 = g / 512;
		if (!l4[i4]) {
			uint64_t p = region_alloc(r, 1, 4096);
			if (!p)
				return false;
			l4[i4] = p | PTE_P | PTE_RW;
		}
		if (!map_gib(r, (uint64_t *)(uintptr_t)(l4[i4] & ~0xfffull), g, gb))
			return false;
	}
	env->cr3 = pml4;
	env->map_top = n_gib * GIB;
	log_debug("x86: host page tables: %llu GiB identity-mapped with %s pages\n",
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
	// 64-bit available TSS (type 9), 16 bytes. VMX needs a non-null host
	// TR; SVM never loads it.
	d[3] = (limit & 0xffff) | ((tss & 0xffffff) << 16) | (0x89ull << 40) |
	       (((tss >> 24) & 0xff) << 56);
	d[4] = tss >> 32;
}

void x86_host_irq_ack(void); // host_irq.S

// Vectors 0-31: the back end's exception stubs (16 bytes each); 32-255: the
// interrupt acknowledger (host_irq.S). All 256 are valid: VT-x sets the host
// IDT limit to 0xFFFF on every exit.
static void build_idt(uint64_t idt, const void *idt_stubs)
{
	uint64_t *d = (uint64_t *)(uintptr_t)idt;
	uint64_t stubs = (uint64_t)(uintptr_t)idt_stubs;

	for (unsigned v = 0; v < 256; v++) {
		uint64_t h = v < 32 ? stubs + 16 * v : (uint64_t)(uintptr_t)x86_host_irq_ack;
		// 64-bit interrupt gate (type 0xE), present, DPL 0, IST 0.
		d[2 * v] = (h & 0xffff) | ((uint64_t)X86_HOST_CS << 16) | (0x8eull << 40) |
			   (((h >> 16) & 0xffff) << 48);
		d[2 * v + 1] = h >> 32;
	}
}

bool x86_host_env_build(struct region *r, const struct slat_plan *plan, const void *idt_stubs,
			struct x86_host_env *env)
{
	if (!build_page_tables(r, plan, env))
		return false;
	env->gdt = region_alloc(r, 1, 4096);
	env->idt = region_alloc(r, 1, 4096);
	env->tss = region_alloc(r, 1, 4096);
	if (!env->gdt || !env->idt || !env->tss)
		return false;
	env->gdt_limit = 5 * 8 - 1;
	env->idt_limit = 256 * 16 - 1;
	build_gdt(env->gdt, env->tss);
	build_idt(env->idt, idt_stubs);
	return true;
}
