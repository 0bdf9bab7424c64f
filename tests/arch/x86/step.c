// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/step.c - single-stepping (RFLAGS.TF) over instructions a
 * hypervisor may emulate (CPUID, RDMSR/WRMSR of EFER, XSETBV, IN from the
 * keyboard controller's status port, MOV to CR0/CR4) and over ordinary ones
 * for reference. Each must give a #DB trap with RIP at the next instruction
 * and DR6.BS set. A `nop` follows each stepped instruction: a trap that
 * comes one instruction late shows as a larger RIP offset.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/exc.h"
#include "tests/arch/x86/lib/x86.h"

#define TF_ON "pushfq; orq $0x100, (%%rsp); popfq\n\t"

static void report(const char *check, const struct exc_record *r)
{
	char name[48];

	ta_verdict(check, "%s rip+%llu dr6 0x%llx", exc_name(r, name, sizeof(name)),
		   (unsigned long long)r->rip, (unsigned long long)(r->dr6 & 0xe00f));
}

static void step_xsetbv(void)
{
	uint32_t id[4];
	struct exc_record r;

	cpuid(1, 0, id);
	if (!(id[2] & (1u << 26))) {
		ta_verdict("step-xsetbv", "no XSAVE");
		return;
	}
	uint64_t cr4 = read_cr4();
	if (!(cr4 & (1ull << 18)))
		__asm__ volatile("mov %0, %%cr4" : : "r"(cr4 | (1ull << 18)));
	EXC_TRY("xorl %%ecx, %%ecx; xgetbv\n\t" TF_ON, "xsetbv; nop", &r, );
	report("step-xsetbv", &r);
	__asm__ volatile("mov %0, %%cr4" : : "r"(cr4));
}

void ta_main(void)
{
	struct exc_record r;

	exc_install();
	EXC_TRY(TF_ON, "nop; nop", &r, );
	report("step-nop", &r);
	EXC_TRY("movl $1, %%ebx\n\t" TF_ON, "addl %%ebx, %%ebx; nop", &r, );
	report("step-add", &r);
	EXC_TRY(TF_ON, "rdtsc; nop", &r, );
	report("step-rdtsc", &r);
	EXC_TRY("xorl %%eax, %%eax; xorl %%ecx, %%ecx\n\t" TF_ON, "cpuid; nop", &r, );
	report("step-cpuid", &r);
	EXC_TRY("movl $1, %%eax; xorl %%ecx, %%ecx\n\t" TF_ON, "cpuid; nop", &r, );
	report("step-cpuid-1", &r);
	EXC_TRY("movl $0xc0000080, %%ecx\n\t" TF_ON, "rdmsr; nop", &r, );
	report("step-rdmsr-efer", &r);
	EXC_TRY("movl $0xc0000080, %%ecx; rdmsr\n\t" TF_ON, "wrmsr; nop", &r, );
	report("step-wrmsr-efer", &r);
	step_xsetbv();
	EXC_TRY(TF_ON, "inb $0x64, %%al; nop", &r, );
	report("step-in-imm", &r);
	EXC_TRY("movl $0x64, %%edx\n\t" TF_ON, "inb %%dx, %%al; nop", &r, );
	report("step-in-dx", &r);
	EXC_TRY("movq %%cr4, %%rbx\n\t" TF_ON, "movq %%rbx, %%cr4; nop", &r, );
	report("step-mov-cr4", &r);
	EXC_TRY("movq %%cr0, %%rbx\n\t" TF_ON, "movq %%rbx, %%cr0; nop", &r, );
	report("step-mov-cr0", &r);
	/* In the shadow of MOV SS the single-step trap of the MOV is held
	 * back until after the next instruction (here an emulated CPUID). */
	EXC_TRY("movw %%ss, %%si; xorl %%eax, %%eax; xorl %%ecx, %%ecx\n\t" TF_ON,
		"movw %%si, %%ss; cpuid; nop", &r, );
	report("step-movss-cpuid", &r);
	exc_restore();
}
