// SPDX-License-Identifier: Apache-2.0
//
// core/hcall_args: the hypercall decoder, and x86's decoder of its calls in
// the architecture's range (arch/x86/hv_cpuid.c) behind it, as
// hv_dispatch runs them. Each call accepted with its fields, each refusal
// with its precise code, and 10^5 random and hostile register sets: never a
// crash, and every accepted call meets its documented bounds (restated here
// independently of the decoders).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/hv_cpuid.c"
#include "core/hcall_args.h"

#define FN(n)	  (HC_FN_BASE + (n))
#define GPA_END	  (1ull << 52)
#define R(f, ...) ((struct hc_regs){.fn = (f), .a = {__VA_ARGS__}})

static int dec(enum hc_abi abi, struct hc_regs r, struct hc_call *c)
{
	memset(c, 0x5a, sizeof(*c));
	return hc_decode(abi, &r, c);
}

// A call of the x86 ABI as hv_dispatch decodes it: core's decoder, then
// x86's (x86_hv_call) for the architecture's range. *x is filled for those.
static int dec_x86(struct hc_regs r, struct hc_call *c, struct hc_call *x)
{
	int rc = dec(HC_ABI_X86, r, c);

	memset(x, 0x5a, sizeof(*x));
	if (rc == HC_OK && hc_fn_is_arch(c->fn))
		rc = x86_hv_call_decode(c->fn, r.a, x);
	return rc;
}

static void test_function_ids(void **state)
{
	struct hc_call c;

	assert_int_equal(dec(HC_ABI_ARM64, R(FN(0)), &c), HC_OK);
	assert_int_equal(c.fn, HC_VERSION_FN);
	assert_int_equal(dec(HC_ABI_X86, R(FN(0)), &c), HC_OK);
	// arm64: W0 only, the SVE hint ignored; x86: neither.
	assert_int_equal(dec(HC_ABI_ARM64, R(0xdead000000000000ull | FN(0)), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(1ull << 32 | FN(0)), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(0) | HC_FN_SVE_HINT), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(FN(0) | HC_FN_SVE_HINT), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(0xffff)), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_ARM64, R(0x86000000u), &c), HC_E_UNKNOWN); // 32-bit form
	assert_int_equal(dec(HC_ABI_ARM64, R(0x46000000u), &c), HC_E_UNKNOWN); // yielding
	assert_int_equal(dec(HC_ABI_ARM64, R(0xC5000000u), &c), HC_E_UNKNOWN); // owner 5
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(0) | 1u << 17), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_ARM64, R(0xC4000000u), &c), HC_E_UNKNOWN); // PSCI's owner
	// The architecture's range: only the function decoded, on both ABIs
	// (arm64 has no hook: core answers HC_E_UNKNOWN to all of it); x86 knows
	// 12..15 and nothing else there.
	struct hc_call x;
	for (unsigned fn = HC_FN_ARCH_FIRST; fn < HC_FN_ARCH_END; fn++) {
		assert_int_equal(dec(HC_ABI_ARM64, R(FN(fn), 1, 2, 3, 4, 5, 6), &c), HC_OK);
		assert_int_equal(c.fn, fn);
		assert_true(hc_fn_is_arch(c.fn));
		if (fn >= HC_FN_COUNT)
			assert_int_equal(dec_x86(R(FN(fn)), &c, &x), HC_E_UNKNOWN);
	}
	assert_false(hc_fn_is_arch(HC_HV_STATS));
	assert_false(hc_fn_is_arch(HC_LOG_READ));
	// 1.14: LOG_READ, the first generic call after the architecture's range.
	assert_int_equal(HC_LOG_READ, HC_FN_ARCH_END);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_LOG_READ), 0x42000, 7), &c), HC_OK);
	assert_int_equal(c.fn, HC_LOG_READ);
	assert_int_equal(c.pa, 0x42000);
	assert_int_equal(c.count, 7);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_LOG_READ), 0x42001, 0), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_LOG_READ), GPA_END, 0), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_LOG_READ), 0x42000, 0, 1), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_LOG_READ), 0x42000, ~0ull), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_FN_END)), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_FN_END)), &c), HC_E_UNKNOWN);
	assert_int_equal(dec(HC_ABI_X86, R(1ull << 32 | FN(HC_VCPU_MSRS)), &c), HC_E_UNKNOWN);
	// Unused registers must be zero, for every call.
	for (unsigned fn = 0; fn < HC_FN_END; fn++) {
		struct hc_regs r = R(FN(fn));

		if (fn >= HC_FN_COUNT && fn < HC_FN_ARCH_END)
			continue; // unknown numbers of the architecture's range

		r.a[5] = 1;
		if (fn != HC_SLOT_SET)
			assert_int_equal(dec_x86(r, &c, &x), HC_E_INVAL);
	}
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_VM_DESTROY), 1, 1), &c), HC_E_INVAL);
}

static void test_memory_calls(void **state)
{
	struct hc_call c;

	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000000, 16), &c), HC_OK);
	assert_int_equal(c.fn, HC_DEPOSIT);
	assert_int_equal(c.pa, 0x80000000);
	assert_int_equal(c.count, 16);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000800, 1), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000000, 0), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000000, HC_DEPOSIT_MAX), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000000, HC_DEPOSIT_MAX + 1), &c),
			 HC_E_TOO_MANY);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), 0x80000000, ~0ull), &c), HC_E_TOO_MANY);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), GPA_END - 4096, 1), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), GPA_END - 4096, 2), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), GPA_END, 1), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_DEPOSIT), ~0xfffull, 1), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_WITHDRAW), 0x1000, HC_LIST_MAX), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_WITHDRAW), 0x1000, HC_LIST_MAX + 1), &c),
			 HC_E_TOO_MANY);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_WITHDRAW), 0x1001, 1), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(FN(HC_WITHDRAW), 0x1000, 0), &c), HC_E_INVAL);
}

static void test_vm_calls(void **state)
{
	struct hc_call c;

	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), HC_VM_FLAG_DONATE, 4), &c), HC_OK);
	assert_int_equal(c.flags, HC_VM_FLAG_DONATE);
	assert_int_equal(c.vcpu, 4);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), HC_VM_FLAG_ZAP_ALL, 4), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), 4, 4), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), 0, 0), &c), HC_E_BAD_VCPU);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), 0, HC_MAX_VCPUS), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_CREATE), 0, HC_MAX_VCPUS + 1), &c),
			 HC_E_BAD_VCPU);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_DESTROY), 0), &c), HC_E_BAD_VM);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_DESTROY), OWN_VM_MAX), &c), HC_OK);
	assert_int_equal(c.vm, OWN_VM_MAX);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_DESTROY), OWN_VM_MAX + 1ull), &c),
			 HC_E_BAD_VM);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VM_DESTROY), 1ull << 32 | 1), &c), HC_E_BAD_VM);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_CREATE), 3, HC_MAX_VCPUS - 1), &c), HC_OK);
	assert_int_equal(c.vm, 3);
	assert_int_equal(c.vcpu, HC_MAX_VCPUS - 1);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_CREATE), 3, HC_MAX_VCPUS), &c),
			 HC_E_BAD_VCPU);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_CREATE), 3, 0, 4096), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_RUN), 3, 1, 0x42000), &c), HC_OK);
	assert_int_equal(c.pa, 0x42000);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_RUN), 3, 1, 0x42008), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_RUN), 3, 1, GPA_END), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_ARM64, R(FN(HC_VCPU_RUN), 0, 1, 0x42000), &c), HC_E_BAD_VM);
}

static void test_slot_set(void **state)
{
	struct hc_call c;
	const uint64_t s = FN(HC_SLOT_SET);

	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 7, HC_SLOT_ADD, 0x100000, 0x5000, 512), &c),
			 HC_OK);
	assert_int_equal(c.slot, 7);
	assert_int_equal(c.op, HC_SLOT_ADD);
	assert_int_equal(c.gpa, 0x100000);
	assert_int_equal(c.pa, 0x5000);
	assert_int_equal(c.count, 512);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, HC_MAX_SLOTS - 1, 0, 0, 0x5000, 1), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, HC_MAX_SLOTS, 0, 0, 0x5000, 1), &c),
			 HC_E_BAD_SLOT);
	assert_int_equal(dec(HC_ABI_X86, R(s, 0, 1, 0, 0, 0x5000, 1), &c), HC_E_BAD_VM);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_OP_COUNT, 0, 0, 0), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, 0x100, 0x5000, 1), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, 0, 0x5008, 1), &c), HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, 0, 0x5000, 0), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, 0, 0x5000, 513), &c), HC_OK); // directory
	// A pinned ADD: at most one directory of list pages (1 GiB), also in 1.10.
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, 0, 0x5000, HC_SLOT_PINNED_MAX_PAGES), &c),
			 HC_OK);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 1, 0, 0, 0x5000, HC_SLOT_PINNED_MAX_PAGES + 1), &c),
	    HC_E_TOO_MANY);
	assert_int_equal(HC_SLOT_PINNED_MAX_PAGES, 262144);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, GPA_END - 4096, 0x5000, 2), &c), HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 0, GPA_END - 4096, 0x5000, 1), &c), HC_OK);
	// op 1 was the draft's APPEND: refused like any unknown op
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, 1, 0, 0x5000, 3), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_DELETE), &c), HC_OK);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_DELETE, 0, 0, 1), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_MOVE, 0x200000), &c), HC_OK);
	assert_int_equal(c.gpa, 0x200000);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_MOVE, 0x200000, 0x5000), &c),
			 HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 1, HC_SLOT_MOVE, GPA_END), &c), HC_E_RANGE);
	// 1.1 lazy slots. ADD_EMPTY: gpa and pages, no list.
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0x100000, 0, 512), &c),
			 HC_OK);
	assert_int_equal(c.op, HC_SLOT_ADD_EMPTY);
	assert_int_equal(c.gpa, 0x100000);
	assert_int_equal(c.count, 512);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0x100000, 0x5000, 1), &c),
			 HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0x100800, 0, 1), &c),
			 HC_E_ALIGN);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0, 0, 0), &c), HC_E_INVAL);
	// 1.10: a lazy slot up to 64 GiB; 1 GiB + 3 pages (dirty_log_test's) is fine.
	assert_int_equal(HC_SLOT_LAZY_MAX_PAGES, 1u << 24);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0, 0, HC_SLOT_PINNED_MAX_PAGES + 3), &c),
	    HC_OK);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0, 0, HC_SLOT_LAZY_MAX_PAGES), &c),
	    HC_OK);
	assert_int_equal(c.count, HC_SLOT_LAZY_MAX_PAGES);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, 0, 0, HC_SLOT_LAZY_MAX_PAGES + 1), &c),
	    HC_E_TOO_MANY);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_ADD_EMPTY, GPA_END - 4096, 0, 2), &c),
			 HC_E_RANGE);
	// FILL: first index, list page, 1..512 frames inside the largest slot.
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, 7, 0x5000, 512), &c), HC_OK);
	assert_int_equal(c.gpa, 7); // the first page index
	assert_int_equal(c.pa, 0x5000);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, 7, 0x5000, 513), &c),
			 HC_E_TOO_MANY);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, 7, 0x5000, 0), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, 7, 0x5004, 1), &c), HC_E_ALIGN);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, HC_SLOT_PINNED_MAX_PAGES + 2, 0x5000, 1), &c),
	    HC_OK); // beyond 1 GiB: a lazy slot's page
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, HC_SLOT_LAZY_MAX_PAGES - 1, 0x5000, 1), &c),
	    HC_OK);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, HC_SLOT_LAZY_MAX_PAGES - 1, 0x5000, 2), &c),
	    HC_E_RANGE);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_FILL, HC_SLOT_LAZY_MAX_PAGES, 0x5000, 1), &c),
	    HC_E_RANGE);
	// DROP: first index and count, nothing else.
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DROP, 0, 0, HC_SLOT_LAZY_MAX_PAGES), &c), HC_OK);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DROP, 1, 0, HC_SLOT_LAZY_MAX_PAGES), &c),
	    HC_E_RANGE);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DROP, HC_SLOT_LAZY_MAX_PAGES - 1, 0, 1), &c), HC_OK);
	// The DIRTY calls: a range inside the largest (lazy) slot.
	assert_int_equal(dec(HC_ABI_X86,
			     R(s, 1, 3, HC_SLOT_DIRTY_GET, HC_SLOT_LAZY_MAX_PAGES - 64, 0x5000, 64),
			     &c),
			 HC_OK);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DIRTY_TAKE, HC_SLOT_LAZY_MAX_PAGES - 64, 0x5000, 65),
		&c),
	    HC_E_RANGE);
	assert_int_equal(
	    dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DIRTY_CLEAR, HC_SLOT_LAZY_MAX_PAGES, 0x5000, 1), &c),
	    HC_E_RANGE);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DROP, 0, 0x5000, 1), &c), HC_E_INVAL);
	assert_int_equal(dec(HC_ABI_X86, R(s, 1, 3, HC_SLOT_DROP, 0, 0, 0), &c), HC_E_INVAL);
}

// ---- fuzz -----------------------------------------------------------------------

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint64_t hostile(void)
{
	static const uint64_t v[] = {0,
				     1,
				     2,
				     4095,
				     4096,
				     4097,
				     511,
				     512,
				     513,
				     HC_MAX_SLOTS - 1,
				     HC_MAX_SLOTS,
				     HC_MAX_VCPUS,
				     HC_DEPOSIT_MAX,
				     OWN_VM_MAX,
				     OWN_VM_MAX + 1ull,
				     GPA_END - 4096,
				     GPA_END,
				     1ull << 63,
				     ~0ull,
				     ~0xfffull,
				     0xffffffffull};

	switch (rnd() % 4) {
	case 0:
		return v[rnd() % (sizeof(v) / sizeof(v[0]))];
	case 1:
		return rnd() & ~0xfffull & (GPA_END - 1);
	case 2:
		return rnd() % 16;
	default:
		return rnd();
	}
}

// The documented bounds of an accepted x86 call of the architecture's range.
static void check_x86_bounds(const struct hc_regs *r, const struct hc_call *x)
{
	const uint64_t *a = r->a;
	bool page_pa = !(x->pa & 4095) && x->pa < GPA_END;

	assert_int_equal(x->fn, (uint32_t)r->fn & 0xffff);
	switch (x->fn) {
	case HC_CPUID_SUPPORTED:
		assert_true(page_pa && x->pa == a[0] && !a[1]);
		break;
	case HC_VCPU_SET_CPUID:
	case HC_VCPU_MSRS:
		assert_true(x->vm >= 1 && x->vm <= OWN_VM_MAX && x->vcpu < HC_MAX_VCPUS && page_pa);
		assert_true(x->vm == a[0] && x->vcpu == a[1] && x->pa == a[2]);
		assert_true(x->count == a[3] && x->flags == a[4] && a[4] <= 1 && !a[5]);
		assert_true(x->count <= (x->fn == HC_VCPU_MSRS ? HC_MSR_MAX : HC_CPUID_MAX));
		assert_true(x->fn == HC_VCPU_MSRS || !a[4]);
		break;
	case HC_VCPU_FPU:
		assert_true(x->vm >= 1 && x->vm <= OWN_VM_MAX && x->vcpu < HC_MAX_VCPUS && page_pa);
		assert_true(x->vm == a[0] && x->vcpu == a[1] && x->pa == a[2]);
		assert_true(x->flags == a[3] && a[3] <= 1 && !a[4] && !a[5]);
		break;
	default:
		fail_msg("accepted unknown x86 function %u", x->fn);
	}
}

// The documented bounds of an accepted call, restated.
static void check_bounds(const struct hc_regs *r, const struct hc_call *c)
{
	const uint64_t *a = r->a;
	bool page_pa = !(c->pa & 4095) && c->pa < GPA_END;

	assert_int_equal(c->fn, (uint32_t)r->fn & 0xffff);
	switch (c->fn) {
	case HC_VERSION_FN:
		assert_true(!a[0] && !a[1] && !a[2] && !a[3] && !a[4] && !a[5]);
		break;
	case HC_DEPOSIT:
		assert_true(page_pa && c->count >= 1 && c->count <= HC_DEPOSIT_MAX);
		assert_true(c->pa + c->count * 4096 <= GPA_END);
		assert_true(c->pa == a[0] && c->count == a[1] && !a[2] && !a[5]);
		break;
	case HC_WITHDRAW:
		assert_true(page_pa && c->count >= 1 && c->count <= HC_LIST_MAX && !a[2]);
		break;
	case HC_VM_CREATE:
		assert_true(c->flags <= 3 && c->vcpu >= 1 && c->vcpu <= HC_MAX_VCPUS && !a[2]);
		break;
	case HC_VM_DESTROY:
		assert_true(c->vm >= 1 && c->vm <= OWN_VM_MAX && c->vm == a[0] && !a[1]);
		break;
	case HC_VCPU_CREATE:
	case HC_VCPU_RUN:
	case HC_VCPU_SET_REGS:
	case HC_VCPU_GET_REGS:
		assert_true(c->vm >= 1 && c->vm <= OWN_VM_MAX && c->vcpu < HC_MAX_VCPUS);
		assert_true(c->vm == a[0] && c->vcpu == a[1] && !a[3]);
		assert_true(c->fn == HC_VCPU_CREATE ? !a[2] : page_pa);
		break;
	case HC_VM_STATS:
		assert_true(c->vm >= 1 && c->vm <= OWN_VM_MAX && c->vm == a[0] && page_pa && !a[2]);
		break;
	case HC_HV_STATS:
		assert_true(page_pa && c->pa == a[0] && !a[1]);
		break;
	case HC_LOG_READ:
		assert_true(page_pa && c->pa == a[0] && c->count == a[1] && !a[2] && !a[5]);
		break;
	case HC_SLOT_SET:
		assert_true(c->vm >= 1 && c->vm <= OWN_VM_MAX && c->slot < HC_MAX_SLOTS);
		assert_true(c->slot == a[1] && c->op == a[2] && c->op < HC_SLOT_OP_COUNT);
		assert_true(c->op != 1);
		if (c->op == HC_SLOT_ADD)
			assert_true(page_pa && c->count >= 1 &&
				    c->count <= HC_SLOT_PINNED_MAX_PAGES);
		if (c->op == HC_SLOT_ADD_EMPTY)
			assert_true(c->count >= 1 && c->count <= HC_SLOT_LAZY_MAX_PAGES);
		if (c->op == HC_SLOT_ADD)
			assert_true(!(c->gpa & 4095) && c->gpa + c->count * 4096 <= GPA_END);
		if (c->op == HC_SLOT_MOVE)
			assert_true(!(c->gpa & 4095) && c->gpa < GPA_END && !c->pa && !c->count);
		if (c->op == HC_SLOT_DELETE)
			assert_true(!c->gpa);
		if (c->op == HC_SLOT_DELETE)
			assert_true(!c->pa && !c->count);
		break;
	default:
		fail_msg("accepted unknown function %u", c->fn);
	}
}

// ABI 1.3's x86 vCPU configuration (x86's decoder behind core's): bounded
// counts, a page, VCPU_MSRS's direction 0 or 1. arm64 has no call there: core
// answers HC_E_UNKNOWN (test_function_ids).
static void test_x86_config_calls(void **state)
{
	struct hc_call c;
	struct hc_call x;

	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, 2, 0x42000, HC_CPUID_MAX), &c, &x),
			 HC_OK);
	assert_int_equal(x.fn, HC_VCPU_SET_CPUID);
	assert_int_equal(x.vm, 3);
	assert_int_equal(x.vcpu, 2);
	assert_int_equal(x.pa, 0x42000);
	assert_int_equal(x.count, HC_CPUID_MAX);
	assert_int_equal(x.flags, 0);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, 2, 0x42000, 0), &c, &x), HC_OK);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, 2, 0x42000, HC_CPUID_MAX + 1), &c, &x),
			 HC_E_TOO_MANY);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, 2, 0x42000, 1, 1), &c, &x),
			 HC_E_INVAL); // a4 unused
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, 2, 0x42010, 1), &c, &x), HC_E_ALIGN);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 0, 2, 0x42000, 1), &c, &x), HC_E_BAD_VM);
	assert_int_equal(
	    dec_x86(R(FN(HC_VCPU_SET_CPUID), OWN_VM_MAX + 1ull, 2, 0x42000, 1), &c, &x),
	    HC_E_BAD_VM);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_SET_CPUID), 3, HC_MAX_VCPUS, 0x42000, 1), &c, &x),
			 HC_E_BAD_VCPU);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, 0x42000, HC_MSR_MAX, 1), &c, &x), HC_OK);
	assert_int_equal(x.flags, 1);
	assert_int_equal(x.count, HC_MSR_MAX);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, 0x42000, 4, 0), &c, &x), HC_OK);
	assert_int_equal(x.flags, 0);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, 0x42000, HC_MSR_MAX + 1, 0), &c, &x),
			 HC_E_TOO_MANY);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, 0x42000, 4, 2), &c, &x), HC_E_INVAL);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, 0x42000, 4, 0, 1), &c, &x),
			 HC_E_INVAL); // a5 unused
	assert_int_equal(dec_x86(R(FN(HC_VCPU_MSRS), 3, 2, GPA_END, 4, 0), &c, &x), HC_E_RANGE);
	// VCPU_FPU (1.9): a3 is the direction, a4 and a5 unused.
	assert_int_equal(dec_x86(R(FN(HC_VCPU_FPU), 3, 2, 0x42000, 1), &c, &x), HC_OK);
	assert_int_equal(x.flags, 1);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_FPU), 3, 2, 0x42000, 0), &c, &x), HC_OK);
	assert_int_equal(x.flags, 0);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_FPU), 3, 2, 0x42000, 2), &c, &x), HC_E_INVAL);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_FPU), 3, 2, 0x42000, 0, 1), &c, &x), HC_E_INVAL);
	assert_int_equal(dec_x86(R(FN(HC_VCPU_FPU), 3, 2, 0x42010, 0), &c, &x), HC_E_ALIGN);
	assert_int_equal(dec_x86(R(FN(HC_CPUID_SUPPORTED), 0x42000), &c, &x), HC_OK);
	assert_int_equal(x.pa, 0x42000);
	assert_int_equal(dec_x86(R(FN(HC_CPUID_SUPPORTED), 0x42001), &c, &x), HC_E_ALIGN);
	assert_int_equal(dec_x86(R(FN(HC_CPUID_SUPPORTED), 0x42000, 1), &c, &x), HC_E_INVAL);
	// A refusal leaves the decoded call untouched.
	struct hc_call before = x;
	assert_int_equal(x86_hv_call_decode(HC_VCPU_MSRS, R(0, 3, 2, 0x42000, 4, 2).a, &x),
			 HC_E_INVAL);
	assert_memory_equal(&x, &before, sizeof(x));
}

static void test_fuzz_registers(void **state)
{
	const char *env = getenv("HC_SEED");
	unsigned ok[HC_FN_END] = {0}, refused = 0;

	rs = env ? strtoull(env, NULL, 0) : 0x4c11ab1eull;
	printf("hcall fuzz: seed %#llx\n", (unsigned long long)rs);
	for (unsigned i = 0; i < 100000; i++) {
		struct hc_regs r;
		struct hc_call c, before;
		enum hc_abi abi = rnd() % 2 ? HC_ABI_X86 : HC_ABI_ARM64;
		unsigned nz = rnd() % 7; // how many registers get values

		unsigned span = rnd() % 4 ? HC_FN_COUNT + 1 : HC_FN_ARCH_END + 1; // + arch range
		r.fn = rnd() % 8 ? FN(rnd() % span) : hostile();
		if (rnd() % 16 == 0)
			r.fn = FN(HC_LOG_READ + rnd() % 2); // LOG_READ and the first unknown
		if (r.fn == FN(HC_LOG_READ) && rnd() % 2)
			nz = 2;
		if (rnd() % 16 == 0)
			r.fn ^= 1ull << (rnd() % 64);
		for (unsigned k = 0; k < HC_NARGS; k++)
			r.a[k] = k < nz ? hostile() : 0;
		if ((r.fn & 0xffff) == HC_SLOT_SET && rnd() % 2)
			r.a[2] = rnd() % HC_SLOT_OP_COUNT;
		memset(&c, 0x77, sizeof(c));
		before = c;
		int rc = hc_decode(abi, &r, &c);

		if (rc == HC_OK && hc_fn_is_arch(c.fn)) { // the architecture's turn
			struct hc_call x, xbefore;
			memset(&x, 0x77, sizeof(x));
			xbefore = x;
			rc = abi == HC_ABI_X86 ? x86_hv_call_decode(c.fn, r.a, &x) : HC_E_UNKNOWN;
			if (rc == HC_OK) {
				check_x86_bounds(&r, &x);
				ok[x.fn]++;
			} else {
				assert_true(rc < 0 && rc >= HC_E_EXISTS);
				assert_memory_equal(&x, &xbefore, sizeof(x)); // untouched
				refused++;
			}
			continue;
		}
		if (rc != HC_OK) {
			assert_true(rc < 0 && rc >= HC_E_EXISTS);
			assert_memory_equal(&c, &before, sizeof(c)); // untouched
			refused++;
			continue;
		}
		check_bounds(&r, &c);
		ok[c.fn]++;
	}
	printf("hcall fuzz: %u refused; accepted per function:", refused);
	for (unsigned f = 0; f < HC_FN_COUNT; f++)
		printf(" %u", ok[f]);
	printf(" %u (LOG_READ)\n", ok[HC_LOG_READ]);
	for (unsigned f = 0; f < HC_FN_COUNT; f++)
		assert_true(ok[f] > 10); // every function's accept path was reached
	assert_true(ok[HC_LOG_READ] > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_ids),     cmocka_unit_test(test_memory_calls),
	    cmocka_unit_test(test_vm_calls),	     cmocka_unit_test(test_slot_set),
	    cmocka_unit_test(test_x86_config_calls), cmocka_unit_test(test_fuzz_registers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
