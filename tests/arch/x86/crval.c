// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/crval.c - which CR0/CR3/CR4/EFER/XCR0 values the CPU takes:
 * one verdict per value, "#GP(0)" or "accepted" (with what reads back where
 * that is part of the answer). Bits that depend on a feature are judged
 * against CPUID ("as cpuid" when a refused bit is not enumerated or a taken
 * bit is), so that a feature a hypervisor hides is checked for consistency.
 * State is put back after each accepted value. Values a bare QEMU 7.2 takes
 * although the manuals refuse them, and that would break the payload
 * (clearing CR0.PG or CR4.PAE in 64-bit mode), are not tried here; Slat's
 * checks for them are unit-tested (tests/unit/test_cr_check.c).
 *
 * Bare QEMU 7.2 (TCG) does not raise #GP for a reserved CR4 bit or a CR3
 * bit above MAXPHYADDR: it takes an SVM "invalid state" exit even outside a
 * guest and the machine stops. Those values are tried only off QEMU (Bochs);
 * under QEMU they print "skipped (QEMU)" in both runs. Bare QEMU 7.2 also
 * ignores reserved EFER bits and a change of EFER.LME with paging on
 * (the manuals: #GP(0)); those are tried off QEMU only too.
 */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/exc.h"
#include "tests/arch/x86/lib/x86.h"

#define MSR_EFER 0xc0000080u

static char name_buf[48];
static int on_qemu;

static const char *outcome(const struct exc_record *r)
{
	return exc_name(r, name_buf, sizeof(name_buf));
}

static struct exc_record write_cr0(uint64_t val)
{
	struct exc_record r;
	EXC_TRY("movq %0, %%rbx", "movq %%rbx, %%cr0", &r, "r"(val));
	return r;
}

static struct exc_record write_cr3(uint64_t val)
{
	struct exc_record r;
	EXC_TRY("movq %0, %%rbx", "movq %%rbx, %%cr3", &r, "r"(val));
	return r;
}

static struct exc_record write_cr4(uint64_t val)
{
	struct exc_record r;
	EXC_TRY("movq %0, %%rbx", "movq %%rbx, %%cr4", &r, "r"(val));
	return r;
}

static struct exc_record write_efer(uint64_t val)
{
	struct exc_record r;
	EXC_TRY("movl $0xc0000080, %%ecx; movq %0, %%rax; movq %%rax, %%rdx; shrq $32, %%rdx",
		"wrmsr", &r, "r"(val));
	return r;
}

static struct exc_record write_xcr(uint32_t xcr, uint64_t val)
{
	struct exc_record r;
	EXC_TRY("movl %0, %%ecx; movq %1, %%rax; movq %%rax, %%rdx; shrq $32, %%rdx", "xsetbv", &r,
		"r"(xcr), "r"(val));
	return r;
}

static uint64_t read_xcr0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static void cr0_checks(void)
{
	uint64_t cr0 = read_cr0();
	struct exc_record r;

	ta_info("cr0 0x%llx", (unsigned long long)cr0);
	r = write_cr0(cr0 | (1ull << 30));
	ta_verdict("cr0-cd", "%s", outcome(&r));
	write_cr0(cr0);
	r = write_cr0(cr0 | (3ull << 29));
	ta_verdict("cr0-cd-nw", "%s", outcome(&r));
	write_cr0(cr0);
	r = write_cr0(cr0 ^ (1ull << 16));
	ta_verdict("cr0-wp-toggle", "%s", outcome(&r));
	write_cr0(cr0);
	r = write_cr0(cr0 & ~(1ull << 4));
	ta_verdict("cr0-et-clear", "%s reads et %u", outcome(&r), (unsigned)(read_cr0() >> 4) & 1);
	write_cr0(cr0);
	r = write_cr0(cr0 | (1ull << 7));
	ta_verdict("cr0-bit7", "%s reads %u", outcome(&r), (unsigned)(read_cr0() >> 7) & 1);
	write_cr0(cr0);
	if (on_qemu) {
		ta_verdict("cr0-invalid", "skipped (QEMU)");
		return;
	}
	r = write_cr0(cr0 | (1ull << 32));
	ta_verdict("cr0-bit32", "%s", outcome(&r));
	write_cr0(cr0);
	r = write_cr0(cr0 | (1ull << 63));
	ta_verdict("cr0-bit63", "%s", outcome(&r));
	write_cr0(cr0);
	r = write_cr0((cr0 | (1ull << 29)) & ~(1ull << 30));
	ta_verdict("cr0-nw-without-cd", "%s", outcome(&r));
	write_cr0(cr0);
}

/* One CR4 bit that depends on a CPUID feature: consistent or not. */
static void cr4_feature(const char *check, unsigned bit, int enumerated)
{
	uint64_t cr4 = read_cr4();
	struct exc_record r;

	if (cr4 & (1ull << bit)) {
		ta_verdict(check, "already set");
		return;
	}
	if (on_qemu && !enumerated) {
		ta_verdict(check, "not in cpuid, skipped (QEMU)");
		return;
	}
	r = write_cr4(cr4 | (1ull << bit));
	write_cr4(cr4);
	int taken = r.count == 0;
	ta_verdict(check, "%s",
		   taken == enumerated ? "as cpuid"
		   : taken	       ? "accepted but not in cpuid"
				       : outcome(&r));
}

static void cr4_checks(void)
{
	uint64_t cr4 = read_cr4(), cr3 = read_cr3();
	uint32_t l1[4], l7[4];
	struct exc_record r;
	static const unsigned reserved[] = {15, 19, 26, 27, 29, 30, 31, 32, 40, 63};

	cpuid(1, 0, l1);
	cpuid(7, 0, l7);
	for (unsigned i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (on_qemu) {
			ta_verdict("cr4-reserved", "skipped (QEMU)");
			break;
		}
		char check[32] = "cr4-reserved-bit";
		unsigned b = reserved[i], n = 16;
		if (b >= 10)
			check[n++] = (char)('0' + b / 10);
		check[n++] = (char)('0' + b % 10);
		check[n] = 0;
		r = write_cr4(cr4 | (1ull << b));
		write_cr4(cr4);
		ta_verdict(check, "%s", outcome(&r));
	}
	cr4_feature("cr4-vmxe", 13, !!(l1[2] & (1u << 5)));
	cr4_feature("cr4-smxe", 14, !!(l1[2] & (1u << 6)));
	cr4_feature("cr4-fsgsbase", 16, !!(l7[1] & 1));
	cr4_feature("cr4-umip", 11, !!(l7[2] & (1u << 2)));
	cr4_feature("cr4-pke", 22, !!(l7[2] & (1u << 3)));
	cr4_feature("cr4-osxsave", 18, !!(l1[2] & (1u << 26)));
	cr4_feature("cr4-pks", 24, !!(l7[2] & (1u << 31)));
	cr4_feature("cr4-kl", 19, !!(l7[2] & (1u << 23)));
	r = write_cr4(cr4 ^ (1ull << 12));
	if (!r.count)
		write_cr4(cr4);
	ta_verdict("cr4-la57-toggle-64bit", "%s", outcome(&r));
	r = write_cr4(cr4 | (1ull << 8));
	write_cr4(cr4);
	ta_verdict("cr4-pce", "%s", outcome(&r));
	/* PCIDE with CR3[11:0] != 0 (PWT set for the check). */
	if ((l1[2] & (1u << 17)) && !(cr4 & (1ull << 17))) {
		r = write_cr3(cr3 | 8);
		ta_verdict("cr3-pwt", "%s", outcome(&r));
		r = write_cr4(cr4 | (1ull << 17));
		if (!r.count)
			write_cr4(cr4);
		ta_verdict("cr4-pcide-with-cr3-low-bits", "%s", outcome(&r));
		write_cr3(cr3);
	} else {
		ta_verdict("cr4-pcide-with-cr3-low-bits", "no PCID or already on");
	}
	ta_info("cr4 0x%llx cr3 0x%llx", (unsigned long long)cr4, (unsigned long long)cr3);
}

static void cr3_checks(void)
{
	uint64_t cr3 = read_cr3();
	uint32_t ext[4];
	struct exc_record r;

	cpuid(0x80000008, 0, ext);
	unsigned maxphy = ext[0] & 0xff;
	if (on_qemu) {
		ta_verdict("cr3-reserved", "skipped (QEMU)");
		return;
	}
	r = write_cr3(cr3 | (1ull << maxphy));
	if (!r.count)
		write_cr3(cr3);
	ta_verdict("cr3-bit-maxphyaddr", "%s", outcome(&r));
	r = write_cr3(cr3 | (1ull << 62));
	if (!r.count)
		write_cr3(cr3);
	ta_verdict("cr3-bit62", "%s", outcome(&r));
	ta_info("maxphyaddr %u", maxphy);
}

static void efer_feature(const char *check, unsigned bit, int enumerated)
{
	uint64_t efer = rdmsr(MSR_EFER);
	struct exc_record r;

	if (efer & (1ull << bit)) {
		ta_verdict(check, "already set");
		return;
	}
	r = write_efer(efer | (1ull << bit));
	int taken = r.count == 0 && (rdmsr(MSR_EFER) >> bit & 1);
	write_efer(efer);
	ta_verdict(check, "%s",
		   taken == enumerated ? "as cpuid"
		   : taken	       ? "accepted but not in cpuid"
				       : outcome(&r));
}

static void efer_checks(void)
{
	uint64_t efer = rdmsr(MSR_EFER);
	uint32_t e1[4];
	struct exc_record r;
	static const unsigned reserved[] = {1, 2, 3, 4, 5, 6, 7, 9, 16, 22, 32, 63};

	cpuid(0x80000001, 0, e1);
	for (unsigned i = 0; on_qemu && i < 1; i++)
		ta_verdict("efer-reserved", "skipped (QEMU)");
	for (unsigned i = 0; !on_qemu && i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		r = write_efer(efer | (1ull << reserved[i]));
		uint64_t back = rdmsr(MSR_EFER);
		write_efer(efer);
		ta_verdict("efer-reserved", "bit %u: %s, reads %u", reserved[i], outcome(&r),
			   (unsigned)(back >> reserved[i]) & 1);
	}
	efer_feature("efer-svme", 12, !!(e1[2] & (1u << 2)));
	efer_feature("efer-ffxsr", 14, !!(e1[3] & (1u << 25)));
	efer_feature("efer-tce", 15, !!(e1[2] & (1u << 17)));
	if (!on_qemu) {
		r = write_efer(efer ^ (1ull << 8));
		if (!r.count)
			write_efer(efer);
		ta_verdict("efer-lme-toggle-paging", "%s", outcome(&r));
	}
	r = write_efer(efer);
	ta_verdict("efer-same", "%s", outcome(&r));
	ta_info("efer 0x%llx", (unsigned long long)efer);
}

static void xcr0_checks(void)
{
	uint32_t l1[4], d[4];
	struct exc_record r;

	cpuid(1, 0, l1);
	if (!(l1[2] & (1u << 26))) {
		ta_verdict("xcr0", "no XSAVE");
		return;
	}
	uint64_t cr4 = read_cr4();
	write_cr4(cr4 | (1ull << 18));
	uint64_t xcr0 = read_xcr0();
	cpuid(0xd, 0, d);
	uint64_t supported = ((uint64_t)d[3] << 32) | d[0];
	r = write_xcr(0, xcr0);
	ta_verdict("xcr0-same", "%s", outcome(&r));
	r = write_xcr(0, 3);
	ta_verdict("xcr0-x87-sse", "%s", outcome(&r));
	write_xcr(0, xcr0);
	r = write_xcr(0, 2);
	ta_verdict("xcr0-no-x87", "%s", outcome(&r));
	r = write_xcr(0, 5);
	ta_verdict("xcr0-avx-without-sse", "%s", outcome(&r));
	r = write_xcr(0, 3 | (1ull << 8));
	ta_verdict("xcr0-bit8-supervisor", "%s", outcome(&r));
	r = write_xcr(0, 3 | (1ull << 63));
	ta_verdict("xcr0-bit63", "%s", outcome(&r));
	for (unsigned b = 2; b < 20; b++)
		if (!(supported & (1ull << b)) && b != 8) {
			r = write_xcr(0, 3 | (1ull << b));
			ta_verdict("xcr0-unsupported-bit", "%s", outcome(&r));
			break;
		}
	r = write_xcr(1, 0);
	ta_verdict("xsetbv-ecx1", "%s", outcome(&r));
	write_xcr(0, xcr0);
	write_cr4(cr4);
	ta_info("xcr0 0x%llx supported 0x%llx", (unsigned long long)xcr0,
		(unsigned long long)supported);
}

void ta_main(void)
{
	on_qemu = ta_x86_on_qemu();
	ta_info("on QEMU: %d", on_qemu);
	exc_install();
	cr0_checks();
	cr4_checks();
	cr3_checks();
	efer_checks();
	xcr0_checks();
	exc_restore();
}
