// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/exc.c - synchronous exceptions at EL1 and what ESR_EL1,
 * FAR_EL1 and ELR_EL1 say about them: SVC, BRK, UDF, an EL2 register read
 * from EL1, a write to a read-only register, alignment and translation
 * faults; plus the ID and control registers a guest reads to know its CPU.
 * FAR and ELR are given relative to a known buffer or instruction.
 */
#include "tests/arch/arm64/lib/a64.h"

static uint8_t buf[64] __attribute__((aligned(64)));

static void show(const char *check, uint64_t esr)
{
	ta_verdict(check, "count %u, EC 0x%02x, IL %u, ISS 0x%07x", a64_exc.count, a64_ec(esr),
		   (unsigned)(esr >> 25) & 1, a64_iss(esr));
}

static void check_svc_brk_udf(void)
{
	uint64_t at;

	a64_exc_arm();
	__asm__ volatile("adr %0, 1f\n1: svc #0x42" : "=r"(at)::"x0", "memory");
	show("svc-imm", a64_exc.esr);
	ta_verdict("svc-elr", "insn %lld", (long long)(a64_exc.elr - at));

	a64_exc_arm();
	__asm__ volatile("adr %0, 1f\n1: brk #0x123" : "=r"(at)::"memory");
	show("brk-imm", a64_exc.esr);
	ta_verdict("brk-elr", "insn %lld", (long long)(a64_exc.elr - at));

	a64_exc_arm();
	__asm__ volatile("adr %0, 1f\n1: .inst 0x0000abcd" : "=r"(at)::"memory"); /* UDF #0xabcd */
	show("udf", a64_exc.esr);
	ta_verdict("udf-elr", "insn %lld", (long long)(a64_exc.elr - at));
}

static void check_sysreg_traps(void)
{
	uint64_t v = 0;

	a64_exc_arm();
	__asm__ volatile("mrs %0, hcr_el2" : "+r"(v)::"memory");
	show("mrs-hcr_el2-from-el1", a64_exc.esr);

	a64_exc_arm();
	__asm__ volatile("mrs %0, S3_4_C14_C0_3" : "+r"(v)::"memory"); /* CNTVOFF_EL2 */
	show("mrs-cntvoff_el2-from-el1", a64_exc.esr);

	a64_exc_arm();
	v = a64_mrs("S3_0_C0_C0_0");
	__asm__ volatile("msr S3_0_C0_C0_0, %0" ::"r"(v) : "memory"); /* MIDR_EL1 is read-only */
	show("msr-midr_el1", a64_exc.esr);

	a64_exc_arm();
	__asm__ volatile("msr S3_3_C14_C0_1, %0" ::"r"(v) : "memory"); /* CNTPCT_EL0 */
	show("msr-cntpct_el0", a64_exc.esr);

	a64_exc_arm();
	__asm__ volatile("mrs %0, S3_0_C13_C0_7" : "+r"(v)::"memory"); /* SCXTNUM_EL1 */
	show("mrs-scxtnum_el1", a64_exc.esr);
}

static void check_data_aborts(void)
{
	uint64_t v = 0;
	uint8_t *p = buf + 1;

	a64_exc_arm();
	__asm__ volatile("ldxr %0, [%1]" : "=r"(v) : "r"(p) : "memory");
	show("ldxr-misaligned", a64_exc.esr);
	ta_verdict("ldxr-misaligned-far", "buffer %lld",
		   (long long)(a64_exc.far - (uint64_t)(uintptr_t)buf));

	uint64_t *hole = (uint64_t *)(uintptr_t)(1ull << 47) + 3;
	a64_exc_arm();
	__asm__ volatile("str %0, [%1]" ::"r"(v), "r"(hole) : "memory");
	show("str-unmapped", a64_exc.esr);
	ta_verdict("str-unmapped-far", "%s",
		   a64_exc.far == (uint64_t)(uintptr_t)hole ? "the address" : "other");

	a64_exc_arm();
	__asm__ volatile("ldr %0, [%1]" : "=r"(v) : "r"(hole) : "memory");
	show("ldr-unmapped", a64_exc.esr);
}

/* The registers a guest reads to learn which CPU it has. ID_AA64PFR0_EL1's
 * EL2 field is left out: the bare run has no EL2 (tests/arch/README.md). */
static void check_id_registers(void)
{
	ta_verdict("midr_el1", "0x%llx", (unsigned long long)a64_mrs("S3_0_C0_C0_0"));
	ta_verdict("mpidr_el1", "0x%llx", (unsigned long long)a64_mrs(A64_MPIDR));
	ta_verdict("id_aa64pfr0_el1 (EL2 field masked)", "0x%llx",
		   (unsigned long long)(a64_mrs(A64_ID_AA64PFR0) & ~0xf00ull));
	ta_verdict("id_aa64pfr1_el1", "0x%llx", (unsigned long long)a64_mrs(A64_ID_AA64PFR1));
	ta_verdict("id_aa64isar0_el1", "0x%llx", (unsigned long long)a64_mrs("S3_0_C0_C6_0"));
	ta_verdict("id_aa64isar1_el1", "0x%llx", (unsigned long long)a64_mrs(A64_ID_AA64ISAR1));
	ta_verdict("id_aa64mmfr0_el1", "0x%llx", (unsigned long long)a64_mrs("S3_0_C0_C7_0"));
	ta_verdict("id_aa64dfr0_el1", "0x%llx", (unsigned long long)a64_mrs("S3_0_C0_C5_0"));
	ta_verdict("ctr_el0", "0x%llx", (unsigned long long)a64_mrs("ctr_el0"));
	ta_verdict("dczid_el0", "0x%llx", (unsigned long long)a64_mrs("dczid_el0"));
	ta_info("id_aa64pfr0_el1 0x%llx, id_aa64mmfr1_el1 0x%llx, id_aa64mmfr2_el1 0x%llx",
		(unsigned long long)a64_mrs(A64_ID_AA64PFR0),
		(unsigned long long)a64_mrs("S3_0_C0_C7_1"),
		(unsigned long long)a64_mrs("S3_0_C0_C7_2"));
	ta_info("sctlr_el1 0x%llx tcr_el1 0x%llx mair_el1 0x%llx cpacr_el1 0x%llx",
		(unsigned long long)a64_mrs("sctlr_el1"), (unsigned long long)a64_mrs("tcr_el1"),
		(unsigned long long)a64_mrs("mair_el1"), (unsigned long long)a64_mrs("cpacr_el1"));
}

void ta_main(void)
{
	a64_vectors_install();
	check_svc_brk_udf();
	check_sysreg_traps();
	check_data_aborts();
	a64_vectors_restore();
	check_id_registers();
}
