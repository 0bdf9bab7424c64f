// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/mte_pac.c - the memory tagging extension and pointer
 * authentication as EL1 sees them (meaningful on -cpu max with mte=on):
 * MTE's EL1 registers (TFSR_EL1, TFSRE0_EL1, GCR_EL1, RGSR_EL1) written and
 * read back without trapping and an IRG/STG/LDG round trip on Normal tagged
 * memory; PACIA/AUTIA giving the pointer
 * back, and what a wrong modifier does (FEAT_FPAC: an exception; before it:
 * a poisoned pointer). "absent" where the CPU lacks the feature.
 */
#include "tests/arch/arm64/lib/a64.h"

#define TFSR_EL1   "S3_0_C5_C6_0"
#define TFSRE0_EL1 "S3_0_C5_C6_1"
#define GCR_EL1	   "S3_0_C1_C0_6"
#define RGSR_EL1   "S3_0_C1_C0_5"
#define APIAKEYLO  "S3_0_C2_C1_0"
#define APIAKEYHI  "S3_0_C2_C1_1"

#define SCTLR_ATA   (1ull << 43)
#define SCTLR_TCF   (3ull << 40)
#define SCTLR_ENIA  (1ull << 31)
#define MAIR_TAGGED 0xf0ull
#define MTE_ASM	    ".arch_extension memtag\n"
#define PAC_ASM	    ".arch_extension pauth\n"

static uint8_t granules[64] __attribute__((aligned(64)));

static void show_exc(const char *check, uint64_t value, bool with_value)
{
	if (a64_exc.count)
		ta_verdict(check, "exception EC 0x%02x ISS 0x%07x", a64_ec(a64_exc.esr),
			   a64_iss(a64_exc.esr));
	else if (with_value)
		ta_verdict(check, "ok, reads 0x%llx", (unsigned long long)value);
	else
		ta_verdict(check, "ok");
}

#define RW_CHECK(name, reg, val)                                                                   \
	do {                                                                                       \
		uint64_t old_ = 0, v_ = 0;                                                         \
		a64_exc_arm();                                                                     \
		__asm__ volatile("mrs %0, " reg : "+r"(old_)::"memory");                           \
		__asm__ volatile("msr " reg ", %0" ::"r"((uint64_t)(val)) : "memory");             \
		__asm__ volatile("isb; mrs %0, " reg : "+r"(v_)::"memory");                        \
		__asm__ volatile("msr " reg ", %0; isb" ::"r"(old_) : "memory");                   \
		show_exc(name, v_, true);                                                          \
	} while (0)

static void tlbi_el1(void)
{
	__asm__ volatile("dsb ishst; tlbi vmalle1; dsb ish; isb" ::: "memory");
}

/* The MAIR_EL1 index the firmware's stage 1 uses for `p` (AT S1E1R), or -1. */
static int mair_index_of(const void *p)
{
	__asm__ volatile("at s1e1r, %0; isb" ::"r"(p) : "memory");
	uint64_t par = a64_mrs("par_el1");
	if (par & 1)
		return -1;
	uint64_t attr = par >> 56, mair = a64_mrs("mair_el1");
	for (int i = 0; i < 8; i++)
		if (((mair >> (8 * i)) & 0xff) == attr)
			return i;
	return -1;
}

static uint64_t tag_of(uint64_t p)
{
	return (p >> 56) & 0xf;
}

/* IRG/STG/LDG with the firmware's write-back attribute made Tagged for a
 * moment (tag checks stay off: SCTLR_EL1.TCF 0). */
static void check_tags(void)
{
	int idx = mair_index_of(granules);
	if (idx < 0) {
		ta_verdict("mte-tags", "no write-back mapping found");
		return;
	}
	uint64_t sctlr = a64_mrs("sctlr_el1"), mair = a64_mrs("mair_el1");
	uint64_t gcr = a64_mrs(GCR_EL1), rgsr = a64_mrs(RGSR_EL1);
	uint64_t p = (uint64_t)(uintptr_t)granules, tagged = 0, loaded = 0;

	a64_msr("mair_el1", (mair & ~(0xffull << (8 * idx))) | MAIR_TAGGED << (8 * idx));
	a64_msr(GCR_EL1, 0x0001);	   /* exclude tag 0, RRND 0: IRG from RGSR_EL1 */
	a64_msr(RGSR_EL1, 0x1234ull << 8); /* SEED */
	a64_msr("sctlr_el1", (sctlr & ~SCTLR_TCF) | SCTLR_ATA);
	tlbi_el1();
	a64_exc_arm();
	__asm__ volatile(MTE_ASM "irg %0, %1" : "=r"(tagged) : "r"(p));
	__asm__ volatile(MTE_ASM "stg %0, [%1]" ::"r"(tagged), "r"(p) : "memory");
	__asm__ volatile(MTE_ASM "mov %0, %1; ldg %0, [%1]" : "=&r"(loaded) : "r"(p) : "memory");
	ta_verdict("mte-irg-stg-ldg", "exceptions %u, IRG tag %llu, LDG tag %llu", a64_exc.count,
		   (unsigned long long)tag_of(tagged), (unsigned long long)tag_of(loaded));

	/* Give the granules tag 0 again and put everything back. */
	a64_msr("sctlr_el1", (sctlr & ~SCTLR_TCF) | SCTLR_ATA);
	a64_isb();
	__asm__ volatile(MTE_ASM "stg %0, [%0]" ::"r"(p) : "memory");
	a64_msr("sctlr_el1", sctlr);
	a64_msr("mair_el1", mair);
	a64_msr(GCR_EL1, gcr);
	a64_msr(RGSR_EL1, rgsr);
	tlbi_el1();
}

static void check_mte(void)
{
	unsigned level = a64_field(a64_mrs(A64_ID_AA64PFR1), 11, 8);
	if (!level) {
		ta_verdict("mte", "absent");
		return;
	}
	ta_verdict("mte", "ID_AA64PFR1_EL1.MTE %u", level);
	if (level < 2)
		return; /* instructions only: no tag registers, no tags */
	RW_CHECK("tfsr_el1", TFSR_EL1, 0);
	RW_CHECK("tfsre0_el1", TFSRE0_EL1, 0);
	RW_CHECK("gcr_el1", GCR_EL1, 0x1ffff);
	RW_CHECK("rgsr_el1", RGSR_EL1, 0xabcd00);
	check_tags();
}

static void check_pac(void)
{
	uint64_t isar1 = a64_mrs(A64_ID_AA64ISAR1), isar2 = a64_mrs(A64_ID_AA64ISAR2);
	unsigned apa = a64_field(isar1, 7, 4), api = a64_field(isar1, 11, 8);
	unsigned apa3 = a64_field(isar2, 15, 12);
	if (!apa && !api && !apa3) {
		ta_verdict("pauth", "absent");
		return;
	}
	unsigned level = apa | api | apa3;
	ta_verdict("pauth", "APA %u API %u APA3 %u", apa, api, apa3);

	uint64_t sctlr = a64_mrs("sctlr_el1"), klo = a64_mrs(APIAKEYLO), khi = a64_mrs(APIAKEYHI);
	uint64_t ptr = (uint64_t)(uintptr_t)granules, mod = 0x1234, signed_ptr, back, bad;

	a64_exc_arm();
	a64_msr(APIAKEYLO, 0x0123456789abcdefull);
	a64_msr(APIAKEYHI, 0xfedcba9876543210ull);
	a64_msr("sctlr_el1", sctlr | SCTLR_ENIA);
	a64_isb();
	signed_ptr = ptr;
	__asm__ volatile(PAC_ASM "pacia %0, %1" : "+r"(signed_ptr) : "r"(mod));
	back = signed_ptr;
	__asm__ volatile(PAC_ASM "autia %0, %1" : "+r"(back) : "r"(mod));
	show_exc("pauth-keys-and-pacia", 0, false);
	ta_verdict("pacia-autia", "signed %s, authenticated %s",
		   signed_ptr != ptr ? "changed" : "unchanged",
		   back == ptr ? "the pointer" : "other");

	bad = signed_ptr;
	a64_exc_arm();
	__asm__ volatile(PAC_ASM "autia %0, %1" : "+r"(bad) : "r"(mod + 1));
	if (a64_exc.count)
		ta_verdict("autia-wrong-modifier", "exception EC 0x%02x ISS 0x%07x",
			   a64_ec(a64_exc.esr), a64_iss(a64_exc.esr));
	else
		ta_verdict("autia-wrong-modifier", "%s",
			   bad == ptr ? "the pointer (not detected)" : "poisoned pointer");
	ta_verdict("fpac", "%s", level >= 4 ? "implemented" : "not implemented");

	uint64_t stripped = signed_ptr;
	__asm__ volatile(PAC_ASM "xpaci %0" : "+r"(stripped));
	ta_verdict("xpaci", "%s", stripped == ptr ? "the pointer" : "other");

	a64_msr("sctlr_el1", sctlr);
	a64_msr(APIAKEYLO, klo);
	a64_msr(APIAKEYHI, khi);
	a64_isb();
}

void ta_main(void)
{
	a64_vectors_install();
	check_mte();
	check_pac();
	a64_vectors_restore();
}
