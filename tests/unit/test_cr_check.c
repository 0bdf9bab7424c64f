// SPDX-License-Identifier: Apache-2.0
//
// The CR0/CR3/CR4/EFER/XCR0 checks of arch/x86/cr_check.c (pure): reserved
// bits, bits for features the guest's CPUID does not enumerate, and the
// invalid combinations the manuals list.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cr_check.c"

// A CPUID with PAE, PGE, FXSR, PCID, XSAVE, FSGSBASE, SMEP, LM, NX, SYSCALL;
// no VMX, SMX, LA57, PKE, SVM, FFXSR. XCR0: x87, SSE, AVX. MAXPHYADDR 40.
static void fake_leaf(void *ctx, uint32_t l, uint32_t s, uint32_t o[4])
{
	memset(o, 0, 16);
	if (l == 0)
		o[0] = 0xd;
	else if (l == 1)
		o[2] = (1u << 17) | (1u << 26), o[3] = (1u << 6) | (1u << 13) | (1u << 24) | 0xff;
	else if (l == 7 && s == 0)
		o[1] = 1u | (1u << 7);
	else if (l == 0xd && s == 0)
		o[0] = 7;
	else if (l == 0x80000000)
		o[0] = 0x80000008;
	else if (l == 0x80000001)
		o[3] = (1u << 11) | (1u << 20) | (1u << 29);
	else if (l == 0x80000008)
		o[0] = 40;
}

// 64-bit mode, paging on: CR0 PE|PG|WP|ET, CR4 PAE|PGE|OSFXSR, EFER LME|LMA|NXE|SCE.
static const struct x86_cr_state lm = {
    .cr0 = 0x80010011, .cr3 = 0x1000, .cr4 = 0xa0, .efer = 0xd01, .cs_long = true};

static void test_caps(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);

	assert_true(c.cr4_ok & BIT(5));
	assert_true(c.cr4_ok & BIT(17));
	assert_true(c.cr4_ok & BIT(18));
	assert_false(c.cr4_ok & BIT(13)); // VMXE: not enumerated
	assert_false(c.cr4_ok & BIT(12)); // LA57
	assert_int_equal(c.xcr0_ok, 7);
	assert_int_equal(c.maxphyaddr, 40);
	assert_true(c.efer_ok & BIT(8));
	assert_false(c.efer_ok & BIT(12)); // SVME
	assert_false(c.efer_ok & BIT(14)); // FFXSR
}

static void test_cr0(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);
	struct x86_cr_state pm = {.cr0 = 0x11, .cr4 = 0, .efer = 0};

	assert_true(x86_cr0_ok(&lm, &c, lm.cr0));
	assert_true(x86_cr0_ok(&lm, &c, lm.cr0 | K_CR0_CD));
	assert_true(x86_cr0_ok(&lm, &c, lm.cr0 | K_CR0_CD | K_CR0_NW));
	assert_false(x86_cr0_ok(&lm, &c, lm.cr0 | K_CR0_NW));  // NW without CD
	assert_false(x86_cr0_ok(&lm, &c, lm.cr0 | BIT(32)));   // bits 63:32
	assert_false(x86_cr0_ok(&lm, &c, lm.cr0 & ~K_CR0_PE)); // PG without PE
	assert_false(x86_cr0_ok(&lm, &c, lm.cr0 & ~K_CR0_PG)); // PG off in 64-bit mode
	assert_true(x86_cr0_ok(&pm, &c, 0x80000011));	       // 32-bit paging on
	pm.efer = K_EFER_LME;				       // long mode without PAE
	assert_false(x86_cr0_ok(&pm, &c, 0x80000011));
	pm.cr4 = K_CR4_PAE;
	assert_true(x86_cr0_ok(&pm, &c, 0x80000011));
	struct x86_cr_state compat = lm;
	compat.cs_long = false; // compatibility mode may leave long mode
	assert_true(x86_cr0_ok(&compat, &c, lm.cr0 & ~K_CR0_PG));
	compat.cr4 |= K_CR4_PCIDE; // ... unless PCIDE is set
	assert_false(x86_cr0_ok(&compat, &c, lm.cr0 & ~K_CR0_PG));
}

static void test_cr4(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);
	struct x86_cr_state s = lm;

	assert_true(x86_cr4_ok(&s, &c, lm.cr4));
	assert_true(x86_cr4_ok(&s, &c, lm.cr4 | K_CR4_PCE | BIT(18) | BIT(16)));
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 | BIT(15)));    // reserved
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 | BIT(63)));    // reserved
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 | BIT(13)));    // VMXE hidden
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 | BIT(22)));    // PKE not enumerated
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 & ~K_CR4_PAE)); // PAE off in long mode
	assert_true(x86_cr4_ok(&s, &c, lm.cr4 | K_CR4_PCIDE));
	s.cr3 = 0x1008; // CR3[11:0] != 0
	assert_false(x86_cr4_ok(&s, &c, lm.cr4 | K_CR4_PCIDE));
	c.cr4_ok |= K_CR4_LA57;
	assert_false(x86_cr4_ok(&lm, &c, lm.cr4 | K_CR4_LA57)); // LA57 in long mode
}

static void test_cr3(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);
	struct x86_cr_state pcid = lm, legacy = {.cr0 = 0x80000011};

	assert_true(x86_cr3_ok(&lm, &c, 0x12345000));
	assert_false(x86_cr3_ok(&lm, &c, BIT(40))); // above MAXPHYADDR
	assert_false(x86_cr3_ok(&lm, &c, BIT(63)));
	pcid.cr4 |= K_CR4_PCIDE;
	assert_true(x86_cr3_ok(&pcid, &c, BIT(63) | 0x1001)); // no-invalidate flag
	assert_true(x86_cr3_ok(&legacy, &c, 0xfffff000));
}

static void test_efer(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);
	struct x86_cr_state real = {.cr0 = 0x10};

	assert_true(x86_efer_ok(&lm, &c, lm.efer));
	assert_true(x86_efer_ok(&lm, &c, lm.efer & ~K_EFER_LMA)); // LMA ignored on write
	assert_false(x86_efer_ok(&lm, &c, lm.efer | BIT(1)));	  // reserved
	assert_false(x86_efer_ok(&lm, &c, lm.efer | BIT(63)));
	assert_false(x86_efer_ok(&lm, &c, lm.efer | BIT(12)));	   // SVME hidden
	assert_false(x86_efer_ok(&lm, &c, lm.efer | BIT(14)));	   // FFXSR not enumerated
	assert_false(x86_efer_ok(&lm, &c, lm.efer & ~K_EFER_LME)); // LME with paging on
	assert_true(x86_efer_ok(&real, &c, K_EFER_LME | BIT(0)));
}

static void test_xcr0(void **state)
{
	struct x86_cr_caps c = x86_cr_caps_from(fake_leaf, NULL);

	assert_true(x86_xcr_ok(&c, 0, 3));
	assert_true(x86_xcr_ok(&c, 0, 7));
	assert_false(x86_xcr_ok(&c, 1, 3));	     // XCR1 is not writable
	assert_false(x86_xcr_ok(&c, 0, 2));	     // x87 must stay
	assert_false(x86_xcr_ok(&c, 0, 5));	     // AVX without SSE
	assert_false(x86_xcr_ok(&c, 0, 3 | BIT(3))); // not enumerated (and BNDREG alone)
	assert_false(x86_xcr_ok(&c, 0, 3 | BIT(63)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_caps), cmocka_unit_test(test_cr0),  cmocka_unit_test(test_cr4),
	    cmocka_unit_test(test_cr3),	 cmocka_unit_test(test_efer), cmocka_unit_test(test_xcr0),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
