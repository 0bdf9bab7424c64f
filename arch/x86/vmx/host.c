// SPDX-License-Identifier: Apache-2.0
//
// VMX root operation's host state: the shared host environment
// (arch/x86/host_env.c: identity map, GDT with a TSS, as the host TR selector
// cannot be 0, IDT), the MSR and I/O bitmaps, and the IDT's handler, which
// prints the fault and parks the CPU.
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/host_env.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

bool vmx_host_build(struct region *r, const struct slat_plan *plan, struct vmx_host *h)
{
	if (!x86_host_env_build(r, plan, vmx_idt_stubs, &h->env))
		return false;
	h->msr_bitmap = region_alloc(r, 1, 4096);
	h->io_bitmap_a = region_alloc(r, 1, 4096);
	h->io_bitmap_b = region_alloc(r, 1, 4096);
	return h->msr_bitmap && h->io_bitmap_a && h->io_bitmap_b;
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
