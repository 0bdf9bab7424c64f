// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/lib/a64_exc.c - what the payloads' EL1 vectors do with an
 * exception: a synchronous one is recorded (ESR, FAR, ELR) and skipped, an
 * IRQ goes to the payload's handler. The firmware's VBAR_EL1 comes back
 * with a64_vectors_restore().
 */
#include "tests/arch/arm64/lib/a64.h"
#include "tests/arch/lib/ta_efi.h"

extern char a64_vector_table[];

volatile struct a64_exc a64_exc;
void (*volatile a64_irq_fn)(void);
volatile unsigned a64_irq_count;
static uint64_t fw_vbar;
static EFI_TPL saved_tpl;

/* The firmware's interrupts must never reach these vectors (its timer's
 * level-sensitive line, never acknowledged, would fire forever): the TPL
 * stays at HIGH_LEVEL (IRQs masked) while they are installed; payloads
 * unmask IRQs only in windows where every enabled INTID is theirs. */
void a64_vectors_install(void)
{
	saved_tpl = ta_bs()->RaiseTPL(TPL_HIGH_LEVEL);
	fw_vbar = a64_mrs("vbar_el1");
	a64_msr("vbar_el1", (uint64_t)(uintptr_t)a64_vector_table);
	a64_isb();
}

void a64_vectors_restore(void)
{
	a64_irq_mask();
	a64_msr("vbar_el1", fw_vbar);
	a64_isb();
	ta_bs()->RestoreTPL(saved_tpl);
}

void a64_exc_arm(void)
{
	a64_exc.count = 0;
	a64_exc.esr = a64_exc.far = a64_exc.elr = 0;
	a64_exc.kind = 0;
}

unsigned a64_wait_flag(volatile unsigned *flag, uint64_t ticks)
{
	uint64_t start = a64_cntpct();
	while (!*flag && a64_cntpct() - start < ticks)
		;
	return *flag;
}

/* Exception classes whose preferred return address is the next instruction. */
static bool returns_past(unsigned ec)
{
	return ec == 0x15 || ec == 0x16 || ec == 0x17; /* SVC, HVC, SMC (AArch64) */
}

void a64_exc_dispatch(uint64_t *frame, unsigned kind);
void a64_exc_dispatch(uint64_t *frame, unsigned kind)
{
	unsigned type = kind & 3;

	if (type == 1) { /* IRQ */
		a64_irq_count++;
		if (a64_irq_fn)
			a64_irq_fn();
		return;
	}
	if (type != 0 || kind >= 8) {
		ta_printf("ARCHTEST-ABORT unexpected exception: vector %u ESR 0x%llx ELR 0x%llx\n",
			  kind, (unsigned long long)a64_mrs("esr_el1"),
			  (unsigned long long)frame[31]);
		for (;;)
			__asm__ volatile("wfe");
	}
	uint64_t esr = a64_mrs("esr_el1");
	a64_exc.esr = esr;
	a64_exc.far = a64_mrs("far_el1");
	a64_exc.elr = frame[31];
	a64_exc.kind = kind;
	a64_exc.count++;
	if (a64_exc.count > 100) {
		ta_printf("ARCHTEST-ABORT exception loop: ESR 0x%llx ELR 0x%llx\n",
			  (unsigned long long)esr, (unsigned long long)frame[31]);
		for (;;)
			__asm__ volatile("wfe");
	}
	if (!returns_past(a64_ec(esr)))
		frame[31] += 4;
}
