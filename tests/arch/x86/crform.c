// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/crform.c - the instruction forms that reach a hypervisor's
 * control-register (and CPUID/MSR) intercepts, one verdict per form: LMSW
 * with a register (legacy and REX registers) and with a memory operand in
 * every 64-bit addressing form (base, disp8, disp32, SIB with RSP and REX
 * base/index, RIP-relative, 32-bit addressing) and with prefixes (segment
 * overrides FS/GS with their bases, DS, operand size, REX.W); MOV to and
 * from CR0 with R8-R11; CLTS; SMSW; CPUID and RDMSR/WRMSR with prefixes; an
 * LMSW operand on a page that is not mapped (#PF, CR2).
 *
 * Each form runs single-stepped (RFLAGS.TF): the verdict is the exception
 * taken (the single-step #DB, or a fault), RIP relative to the instruction's
 * start (its length, as the CPU stepped over it) and CR0 bits 3:0 after it.
 * CR0 is put back before interrupts are on again or anything is printed.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/exc.h"
#include "tests/arch/x86/lib/x86.h"

#define TF_ON	    "pushfq; orq $0x100, (%%rsp); popfq\n\t"
#define MSR_EFER    0xc0000080u
#define MSR_FS_BASE 0xc0000100u
#define MSR_GS_BASE 0xc0000101u

/* LMSW's source: bits 3:0 TS=1 EM=0 MP=1 PE=0, the rest ignored. */
volatile uint16_t lmsw_src = 0xfffa;
static uint64_t cr0_start;

static void write_cr0(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

/* Interrupts stay off while TS/EM may be set: the firmware's interrupt
 * handlers save the x87/SSE state, which would then take #NM. */
static uint64_t trial_begin(void)
{
	uint64_t flags;

	__asm__ volatile("pushfq; popq %0; cli" : "=r"(flags)::"memory");
	write_cr0(cr0_start);
	return flags;
}

static uint64_t trial_end(uint64_t flags)
{
	uint64_t after = read_cr0();

	write_cr0(cr0_start);
	if (flags & 0x200)
		__asm__ volatile("sti" ::: "memory");
	return after;
}

static void report(const char *check, const struct exc_record *r, uint64_t cr0_after)
{
	char name[48];

	ta_verdict(check, "%s rip+%llu cr0[3:0] 0x%llx", exc_name(r, name, sizeof(name)),
		   (unsigned long long)r->rip, (unsigned long long)(cr0_after & 0xf));
}

/* One form: `setup` (registers), then `insn` single-stepped. CR0 starts with
 * TS, EM and MP clear. */
#define FORM(check, setup, insn, ...)                                                              \
	do {                                                                                       \
		struct exc_record r_;                                                              \
		uint64_t flags_ = trial_begin();                                                   \
		EXC_TRY(setup "\n\t" TF_ON, insn, &r_, __VA_ARGS__);                               \
		report(check, &r_, trial_end(flags_));                                             \
	} while (0)

static void lmsw_register_forms(void)
{
	FORM("lmsw-ax", "movl $0xfffa, %%eax", "lmsw %%ax", );
	FORM("lmsw-r9w", "movl $0xfffa, %%r9d", "lmsw %%r9w", );
	FORM("lmsw-r11w", "movl $0xfff6, %%r11d", "lmsw %%r11w", );
	FORM("lmsw-di-pe-kept", "movl $0x0, %%edi", "lmsw %%di", );
}

static void lmsw_memory_forms(void)
{
	FORM("lmsw-mem-base", "leaq lmsw_src(%%rip), %%rbx", "lmsw (%%rbx)", );
	FORM("lmsw-mem-r10-disp8", "leaq lmsw_src-8(%%rip), %%r10", "lmsw 8(%%r10)", );
	FORM("lmsw-mem-disp32", "leaq lmsw_src-0x1000(%%rip), %%rsi", "lmsw 0x1000(%%rsi)", );
	FORM("lmsw-mem-sib", "leaq lmsw_src+4(%%rip), %%rbx; movl $2, %%esi",
	     "lmsw -8(%%rbx,%%rsi,2)", );
	FORM("lmsw-mem-sib-r8-r11", "leaq lmsw_src-8(%%rip), %%r8; movl $1, %%r11d",
	     "lmsw (%%r8,%%r11,8)", );
	FORM("lmsw-mem-sib-index-only", "leaq lmsw_src(%%rip), %%rcx; shrq $1, %%rcx",
	     "lmsw (,%%rcx,2)", );
	/* Below the flags TF_ON pushes at -8(%%rsp). */
	FORM("lmsw-mem-rsp", "movw lmsw_src(%%rip), %%ax; movw %%ax, -16(%%rsp)",
	     "lmsw -16(%%rsp)", );
	FORM("lmsw-mem-rip", "", "lmsw lmsw_src(%%rip)", );
	FORM("lmsw-mem-ds", "leaq lmsw_src(%%rip), %%rbx", ".byte 0x3e; lmsw (%%rbx)", );
	FORM("lmsw-mem-opsize", "leaq lmsw_src(%%rip), %%rbx", ".byte 0x66; lmsw (%%rbx)", );
	FORM("lmsw-mem-rex-w", "leaq lmsw_src(%%rip), %%rbx", ".byte 0x48, 0x0f, 0x01, 0x33", );
	/* 32-bit addressing: EBX, the payload's data lies below 4 GiB (else
	 * both runs fault alike). */
	FORM("lmsw-mem-addr32", "leaq lmsw_src(%%rip), %%rbx", ".byte 0x67; lmsw (%%rbx)", );
}

/* FS and GS overrides add their bases (the only ones 64-bit mode adds). */
static void lmsw_segment_forms(void)
{
	uint64_t fs = rdmsr(MSR_FS_BASE), gs = rdmsr(MSR_GS_BASE);
	uint64_t src = (uint64_t)(uintptr_t)&lmsw_src;

	wrmsr(MSR_FS_BASE, src - 0x10000);
	FORM("lmsw-mem-fs", "movl $0x10000, %%ebx", "lmsw %%fs:(%%rbx)", );
	wrmsr(MSR_FS_BASE, fs);
	wrmsr(MSR_GS_BASE, src - 0x20);
	FORM("lmsw-mem-gs-disp8", "xorl %%edx, %%edx", "lmsw %%gs:0x20(%%rdx)", );
	wrmsr(MSR_GS_BASE, gs);
}

/* A canonical address far above any RAM the firmware maps: #PF(0) with it
 * in CR2, in both runs, and CR0 unchanged. */
static void lmsw_unmapped(void)
{
	struct exc_record r;
	const uint64_t far = 0x00007ff000000000ull;

	uint64_t flags = trial_begin();
	EXC_TRY("movq %0, %%rbx\n\t" TF_ON, "lmsw (%%rbx)", &r, "r"(far));
	report("lmsw-mem-unmapped", &r, trial_end(flags));
	ta_verdict("lmsw-mem-unmapped-cr2", "%s", r.cr2 == far ? "the operand's address" : "other");
}

static void mov_cr_forms(void)
{
	FORM("mov-cr0-r8", "movq %%cr0, %%r8; orq $8, %%r8", "movq %%r8, %%cr0", );
	FORM("mov-cr0-r11", "movq %%cr0, %%r11; orq $2, %%r11", "movq %%r11, %%cr0", );
	FORM("mov-cr0-rdi", "movq %%cr0, %%rdi; orq $4, %%rdi", "movq %%rdi, %%cr0", );
	FORM("mov-from-cr0-r10", "", "movq %%cr0, %%r10", );
	FORM("clts", "movq %%cr0, %%rax; orq $8, %%rax; movq %%rax, %%cr0", "clts", );
	FORM("smsw-mem", "leaq lmsw_src(%%rip), %%rbx", "smsw (%%rbx)", );
	lmsw_src = 0xfffa; /* smsw wrote it */
}

/* Prefixed forms of the other intercepted instructions: the length stepped. */
static void other_forms(void)
{
	FORM("cpuid-66-cs", "xorl %%eax, %%eax; xorl %%ecx, %%ecx",
	     ".byte 0x66, 0x2e, 0x0f, 0xa2", );
	FORM("rdmsr-rex-w", "movl $0xc0000080, %%ecx", ".byte 0x48, 0x0f, 0x32", );
	FORM("wrmsr-rex-w", "movl $0xc0000080, %%ecx; rdmsr", ".byte 0x48, 0x0f, 0x30", );
	FORM("rdmsr-r8-rex", "movl $0xc0000080, %%ecx", ".byte 0x41, 0x0f, 0x32", );
}

void ta_main(void)
{
	cr0_start = read_cr0() & ~0xeull; /* TS, EM, MP clear */
	uint64_t cr0 = read_cr0();
	ta_info("cr0 0x%llx", (unsigned long long)cr0);
	exc_install();
	lmsw_register_forms();
	lmsw_memory_forms();
	lmsw_segment_forms();
	lmsw_unmapped();
	mov_cr_forms();
	other_forms();
	exc_restore();
	write_cr0(cr0);
}
