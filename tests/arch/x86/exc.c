// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/exc.c - exceptions as the guest sees them: vector, error
 * code, the RIP pushed (relative to the instruction), CR2 for #PF, and which
 * of two faults of one instruction wins.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/exc.h"
#include "tests/arch/x86/lib/x86.h"

static void report(const char *check, const struct exc_record *r)
{
	char name[48];

	ta_verdict(check, "%s rip+%llu", exc_name(r, name, sizeof(name)),
		   (unsigned long long)r->rip);
}

/* A canonical linear address whose PML4 entry is not present (the firmware
 * maps far less than 128 TiB), or 0 when there is none. */
static uint64_t unmapped_address(void)
{
	const uint64_t *pml4 = (const uint64_t *)(uintptr_t)(read_cr3() & 0x000ffffffffff000ull);

	for (unsigned i = 255; i >= 1; i--)
		if (!(pml4[i] & 1))
			return (uint64_t)i << 39;
	return 0;
}

static void page_faults(void)
{
	struct exc_record r;
	uint64_t addr = unmapped_address();

	if (!addr) {
		ta_info("no unmapped PML4 slot: #PF checks skipped");
		ta_verdict("exc-pf", "skipped");
		return;
	}
	ta_info("unmapped address 0x%llx", (unsigned long long)addr);
	EXC_TRY("movq %0, %%rbx", "movq 0x18(%%rbx), %%rax", &r, "r"(addr));
	report("exc-pf-read", &r);
	ta_verdict("exc-pf-read-cr2", "addr+0x%llx", (unsigned long long)(r.cr2 - addr));
	EXC_TRY("movq %0, %%rbx", "movl $1, 0x20(%%rbx)", &r, "r"(addr));
	report("exc-pf-write", &r);
	ta_verdict("exc-pf-write-cr2", "addr+0x%llx", (unsigned long long)(r.cr2 - addr));
}

void ta_main(void)
{
	struct exc_record r;

	exc_install();
	EXC_TRY("xorl %%edx, %%edx; xorl %%eax, %%eax; xorl %%ecx, %%ecx", "divl %%ecx", &r, );
	report("exc-de", &r);
	EXC_TRY("", "ud2", &r, );
	report("exc-ud", &r);
	EXC_TRY("", "int3", &r, );
	report("exc-bp", &r);
	EXC_TRY("", ".byte 0xcd, 0x03", &r, ); /* int $3, the two-byte form */
	report("exc-int-3", &r);
	EXC_TRY("movabsq $0x8000000000000000, %%rbx", "movq (%%rbx), %%rax", &r, );
	report("exc-gp-noncanonical", &r);
	/* A selector beyond any GDT the firmware builds: #GP(selector). */
	EXC_TRY("movl $0xfff8, %%eax", "movw %%ax, %%ds", &r, );
	report("exc-gp-selector", &r);
	EXC_TRY("movl $0xfffc, %%eax", "movw %%ax, %%ss", &r, );
	report("exc-gp-ss-selector", &r);
	page_faults();
	/* Priority: LOCK on MOV with a non-canonical operand. The SDM puts the
	 * #UD first; QEMU 7.2 raises the operand's #GP: the verdict is the
	 * emulator's, and Slat must not change it. LOCK on a register form
	 * has a single fault. */
	EXC_TRY("movabsq $0x8000000000000000, %%rbx", ".byte 0xf0; movq (%%rbx), %%rax", &r, );
	report("exc-prio-lock-vs-gp", &r);
	EXC_TRY("", ".byte 0xf0, 0x01, 0xc0", &r, ); /* lock add %eax, %eax */
	report("exc-lock-register", &r);
	/* A memory-operand divide: the operand's #GP comes before #DE. */
	EXC_TRY("movabsq $0x8000000000000000, %%rbx; xorl %%edx, %%edx; xorl %%eax, %%eax",
		"divl (%%rbx)", &r, );
	report("exc-prio-gp-vs-de", &r);
	exc_restore();
}
