// SPDX-License-Identifier: Apache-2.0
//
// The CPUID table of a secondary vCPU (arch/x86/hv_cpuid.c, ABI 1.3): the
// supported table enumerated from a fake CPU, a VMM's table checked against
// it, and the lookup a guest's CPUID gets.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/hv_cpuid.c"

// A fake CPU: basic leaves up to 0xd, Slat's hypervisor range up to
// 0x40000001, extended up to 0x80000008; leaf 4 has three caches, 7 two
// subleaves, 0xb two levels, 0xd components 0, 1, 2 and 5.
static unsigned src_calls;
static void fake_cpu(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	src_calls++;
	out[0] = out[1] = out[2] = out[3] = 0;
	switch (leaf) {
	case 0:
		out[0] = 0xd;
		out[1] = 0x68747541; // "Auth"
		break;
	case 1:
		out[0] = 0x800f12;
		out[2] = 0x80002201; // SSE3, SSSE3, SSE4.2 area, hypervisor
		out[3] = 0x078bfbff;
		break;
	case 4:
		out[0] = sub < 3 ? 0x121 + sub : 0;
		break;
	case 7:
		if (sub == 0) {
			out[0] = 1;
			out[1] = 0x209; // FSGSBASE, BMI1, BMI2... as the policy leaves them
		}
		break;
	case 0xb:
		if (sub < 2) {
			out[0] = sub;
			out[2] = (sub + 1) << 8 | sub;
		}
		break;
	case 0xd:
		if (sub <= 2 || sub == 5)
			out[0] = 0x100 + sub;
		break;
	case 0x40000000:
		out[0] = 0x40000001;
		out[1] = out[2] = out[3] = 0x74616c53;
		break;
	case 0x80000000:
		out[0] = 0x80000008;
		break;
	case 0x80000001:
		out[2] = 0x1f3;
		out[3] = 0x2fd3fbff;
		break;
	case 0x80000008:
		out[0] = 0x3028;
		break;
	default:
		break;
	}
}

static struct hc_cpuid_entry table[HC_CPUID_MAX + 8];

static const struct hc_cpuid_entry *find(unsigned n, uint32_t leaf, uint32_t sub)
{
	for (unsigned i = 0; i < n; i++)
		if (table[i].function == leaf && table[i].index == sub)
			return &table[i];
	return NULL;
}

static void test_enumerate_leaves_and_subleaves(void **state)
{
	unsigned n = x86_cpuid_enumerate(fake_cpu, table, HC_CPUID_MAX);

	// 0..0xd: 14 leaves, plus 2 more caches (4), 1 more subleaf (7), 1 more
	// level (0xb) and 3 more components (0xd: 1, 2, 5); 2 hypervisor leaves;
	// 9 extended ones.
	assert_int_equal(n, 14 + 2 + 1 + 1 + 3 + 2 + 9);
	assert_int_equal(table[0].function, 0);
	assert_int_equal(table[0].flags, 0);
	assert_int_equal(table[0].eax, 0xd);
	assert_int_equal(table[n - 1].function, 0x80000008);
	assert_int_equal(table[n - 1].eax, 0x3028);
	for (uint32_t s = 0; s < 3; s++) {
		assert_non_null(find(n, 4, s));
		assert_int_equal(find(n, 4, s)->flags, HC_CPUID_F_INDEXED);
	}
	assert_null(find(n, 4, 3));
	assert_non_null(find(n, 7, 1));
	assert_null(find(n, 7, 2));
	assert_non_null(find(n, 0xb, 1));
	assert_null(find(n, 0xb, 2));
	assert_non_null(find(n, 0xd, 5));
	assert_null(find(n, 0xd, 3));
	assert_non_null(find(n, 0x40000001, 0));
	assert_null(find(n, 0x40000002, 0));
	assert_int_equal(find(n, 1, 0)->flags, 0);
	assert_int_equal(find(n, 1, 0)->ecx, 0x80002201);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(table[i].pad, 0);
}

// The table never grows past `max`, whatever the CPU claims.
static void test_enumerate_bounded(void **state)
{
	memset(table, 0xee, sizeof(table));
	assert_int_equal(x86_cpuid_enumerate(fake_cpu, table, 5), 5);
	assert_int_equal(table[5].function, 0xeeeeeeee);
	assert_int_equal(table[4].function, 4);
	assert_int_equal(table[4].index, 0); // 0, 1, 2, 3, then 4.0
}

static unsigned fetch(struct hc_cpuid_entry *t)
{
	unsigned n = x86_cpuid_enumerate(fake_cpu, table, HC_CPUID_MAX);

	memcpy(t, table, n * sizeof(*t));
	return n;
}

static struct hc_cpuid_entry *entry(struct hc_cpuid_entry *t, unsigned n, uint32_t leaf,
				    uint32_t sub)
{
	for (unsigned i = 0; i < n; i++)
		if (t[i].function == leaf && t[i].index == sub)
			return &t[i];
	fail_msg("leaf %#x.%u missing", leaf, sub);
	return NULL;
}

static void test_table_ok_narrowing_only(void **state)
{
	static struct hc_cpuid_entry t[HC_CPUID_MAX];
	unsigned n = fetch(t), bad = 99;

	assert_true(x86_cpuid_table_ok(fake_cpu, t, n, &bad)); // the supported table itself
	entry(t, n, 1, 0)->ecx &= ~1u;			       // fewer features: fine
	entry(t, n, 0x80000001, 0)->edx = 0;
	entry(t, n, 0, 0)->ebx = 0x12345678;	  // vendor: not a feature register
	entry(t, n, 0x80000008, 0)->eax = 0x3030; // address sizes: the VMM's
	entry(t, n, 7, 0)->eax = 0;		  // 7.0 EAX: the last subleaf, not features
	entry(t, n, 1, 0)->ebx = 0x3000800;	  // APIC ID, CLFLUSH size: the VMM's
	assert_true(x86_cpuid_table_ok(fake_cpu, t, n, &bad));

	struct hc_cpuid_entry *e = entry(t, n, 1, 0);
	unsigned idx = (unsigned)(e - t);
	e->ecx |= 1u << 26; // XSAVE: Slat does not give it
	assert_false(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
	assert_int_equal(bad, idx);
	e->ecx &= ~(1u << 26);
	e->edx |= 1u << 31; // reserved in the fake CPU: refused too
	assert_false(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
	e->edx &= ~(1u << 31);
	entry(t, n, 7, 0)->ebx |= 1u << 5; // AVX2
	assert_false(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
	entry(t, n, 7, 0)->ebx &= ~(1u << 5);
	entry(t, n, 0xd, 2)->eax = 0x103; // the component size of 0xd.2 is 0x102
	assert_false(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
	entry(t, n, 0xd, 2)->eax = 0x102;
	entry(t, n, 0x40000001, 0)->eax = 1; // a paravirtual feature Slat lacks
	assert_false(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
	entry(t, n, 0x40000001, 0)->eax = 0;
	assert_true(x86_cpuid_table_ok(fake_cpu, t, n, &bad));
}

// An indexed entry is checked against its own subleaf; an unindexed one
// against subleaf 0; padding and unknown flags are refused.
static void test_table_ok_indexing_and_format(void **state)
{
	struct hc_cpuid_entry t[2] = {
	    {.function = 7, .index = 1, .flags = HC_CPUID_F_INDEXED, .ebx = 0x200},
	    {.function = 1, .index = 5, .ecx = 0x1},
	};
	unsigned bad = 99;

	assert_false(x86_cpuid_table_ok(fake_cpu, t, 1, &bad)); // 7.1 has no bits
	assert_int_equal(bad, 0);
	t[0].index = 0;
	assert_true(x86_cpuid_table_ok(fake_cpu, t, 2, &bad)); // 1 (index ignored): subset
	t[1].pad = 1;
	assert_false(x86_cpuid_table_ok(fake_cpu, t, 2, &bad));
	assert_int_equal(bad, 1);
	t[1].pad = 0;
	t[1].flags = 2;
	assert_false(x86_cpuid_table_ok(fake_cpu, t, 2, &bad));
	t[1].flags = 0;
	assert_true(x86_cpuid_table_ok(fake_cpu, t, 0, &bad)); // empty: nothing to refuse
}

static void test_lookup(void **state)
{
	const struct hc_cpuid_entry t[] = {
	    {.function = 1, .eax = 0x11},
	    {.function = 4, .index = 0, .flags = HC_CPUID_F_INDEXED, .eax = 0x40},
	    {.function = 4, .index = 1, .flags = HC_CPUID_F_INDEXED, .eax = 0x41},
	    {.function = 1, .eax = 0x99}, // a duplicate: the first one answers
	    {.function = 0x80000000, .eax = 0x80000001, .ebx = 2, .ecx = 3, .edx = 4},
	};
	uint32_t r[4];
	unsigned n = sizeof(t) / sizeof(t[0]);

	x86_cpuid_lookup(t, n, 1, 7, r); // not indexed: any ECX
	assert_int_equal(r[0], 0x11);
	x86_cpuid_lookup(t, n, 4, 1, r);
	assert_int_equal(r[0], 0x41);
	x86_cpuid_lookup(t, n, 4, 0, r);
	assert_int_equal(r[0], 0x40);
	memset(r, 0xff, sizeof(r));
	x86_cpuid_lookup(t, n, 4, 2, r); // no such subleaf: zeros
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	x86_cpuid_lookup(t, n, 0x80000000, 0, r);
	assert_int_equal(r[0], 0x80000001);
	assert_int_equal(r[1], 2);
	assert_int_equal(r[2], 3);
	assert_int_equal(r[3], 4);
	memset(r, 0xff, sizeof(r));
	x86_cpuid_lookup(t, n, 0x40000000, 0, r); // missing leaf: zeros
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	x86_cpuid_lookup(t, 0, 1, 0, r); // empty table
	assert_int_equal(r[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_enumerate_leaves_and_subleaves),
	    cmocka_unit_test(test_enumerate_bounded),
	    cmocka_unit_test(test_table_ok_narrowing_only),
	    cmocka_unit_test(test_table_ok_indexing_and_format),
	    cmocka_unit_test(test_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
