// SPDX-License-Identifier: Apache-2.0
//
// Hypercall argument decoding (core/hcall_args.h, docs/hypercalls.md).
// Pure: registers in, struct or error out. Every argument register a call does
// not use must be zero (room for later versions); checks run in the order the
// document lists, so the error a bad call gets is deterministic.
#include "core/hcall_args.h"

#include <stdbool.h>

#define HC_PAGE	   4096ull
#define HC_GPA_END (1ull << HC_GPA_BITS)

_Static_assert(HC_FN_ARCH_END <= HC_FN_NUM_MASK, "function numbers fit 15:0");
_Static_assert(HC_FN_COUNT <= HC_FN_ARCH_END && HC_LOG_READ >= HC_FN_ARCH_END,
	       "every call is generic or the architecture's");
_Static_assert(HC_MAX_SLOTS == 32764u, "the slot count KVM_CAP_NR_MEMSLOTS reports");
_Static_assert(HC_DEPOSIT_MAX <= OWN_RANGE_MAX, "a deposit is one ownership request");

// Which argument registers each generic call uses (bit i: a[i]; none in the
// architecture's range).
static const uint8_t hc_used[HC_FN_END] = {
    [HC_VERSION_FN] = 0x00,    [HC_DEPOSIT] = 0x03,    [HC_WITHDRAW] = 0x03,
    [HC_VM_CREATE] = 0x03,     [HC_VM_DESTROY] = 0x01, [HC_VCPU_CREATE] = 0x03,
    [HC_SLOT_SET] = 0x3f,      [HC_VCPU_RUN] = 0x07,   [HC_VCPU_SET_REGS] = 0x07,
    [HC_VCPU_GET_REGS] = 0x07, [HC_VM_STATS] = 0x03,   [HC_HV_STATS] = 0x01,
    [HC_LOG_READ] = 0x03,
};

static int hc_fn_of(enum hc_abi abi, uint64_t raw, enum hc_fn *fn)
{
	uint32_t w = (uint32_t)raw;

	if (abi == HC_ABI_X86 && raw >> 32)
		return HC_E_UNKNOWN;
	if (abi == HC_ABI_ARM64)
		w &= ~HC_FN_SVE_HINT;
	if ((w & ~HC_FN_NUM_MASK) != HC_FN_BASE || (w & HC_FN_NUM_MASK) >= HC_FN_END)
		return HC_E_UNKNOWN;
	*fn = (enum hc_fn)(w & HC_FN_NUM_MASK);
	return HC_OK;
}

int hc_arg_unused_zero(unsigned used, const uint64_t *a)
{
	for (unsigned i = 0; i < HC_NARGS; i++)
		if (!(used >> i & 1) && a[i])
			return HC_E_INVAL;
	return HC_OK;
}

static int hc_vm(uint64_t v, uint32_t *vm)
{
	if (v == 0 || v > OWN_VM_MAX)
		return HC_E_BAD_VM;
	*vm = (uint32_t)v;
	return HC_OK;
}

static int hc_index(uint64_t v, uint64_t max, int err, uint32_t *out)
{
	if (v >= max)
		return err;
	*out = (uint32_t)v;
	return HC_OK;
}

// A page address: aligned and below HC_GPA_END.
int hc_arg_page(uint64_t pa)
{
	if (pa & (HC_PAGE - 1))
		return HC_E_ALIGN;
	return pa < HC_GPA_END ? HC_OK : HC_E_RANGE;
}

int hc_arg_vcpu_page(const uint64_t *a, struct hc_call *c)
{
	int rc;

	if ((rc = hc_vm(a[0], &c->vm)) ||
	    (rc = hc_index(a[1], HC_MAX_VCPUS, HC_E_BAD_VCPU, &c->vcpu)))
		return rc;
	c->pa = a[2];
	return hc_arg_page(a[2]);
}

// 1..max pages; [base, base + count pages) ends at or below HC_GPA_END.
static int hc_count(uint64_t base, uint64_t count, uint64_t max)
{
	if (count == 0)
		return HC_E_INVAL;
	if (count > max)
		return HC_E_TOO_MANY;
	return count <= (HC_GPA_END - base) / HC_PAGE ? HC_OK : HC_E_RANGE;
}

// Pages [first, first + count) of a slot: 1..max of them, inside the largest
// slot, a lazy one (the slot's own size is checked by the handler).
static int hc_pages_in_slot(uint64_t first, uint64_t count, uint64_t max)
{
	if (count == 0)
		return HC_E_INVAL;
	if (count > max)
		return HC_E_TOO_MANY;
	return first < HC_SLOT_LAZY_MAX_PAGES && count <= HC_SLOT_LAZY_MAX_PAGES - first
		   ? HC_OK
		   : HC_E_RANGE;
}

static int hc_slot_set(const uint64_t *a, struct hc_call *c)
{
	int rc;

	if ((rc = hc_vm(a[0], &c->vm)) ||
	    (rc = hc_index(a[1], HC_MAX_SLOTS, HC_E_BAD_SLOT, &c->slot)))
		return rc;
	uint64_t op = a[2] & HC_SLOT_OP_MASK, flags = a[2] & ~HC_SLOT_OP_MASK;

	if (op >= HC_SLOT_OP_COUNT || op == 1) // 1: APPEND of the 0.1 draft, gone
		return HC_E_INVAL;
	if ((flags & ~(HC_SLOT_F_READONLY | HC_SLOT_F_DIRTY_LOG)) ||
	    (flags && op != HC_SLOT_ADD && op != HC_SLOT_ADD_EMPTY))
		return HC_E_INVAL;
	c->op = (enum hc_slot_op)op;
	c->flags = (uint32_t)flags;
	c->gpa = a[3];
	c->pa = a[4];
	c->count = a[5];
	switch (c->op) {
	case HC_SLOT_ADD:
		if ((rc = hc_arg_page(a[3])) || (rc = hc_arg_page(a[4])))
			return rc;
		return hc_count(a[3], a[5], HC_SLOT_PINNED_MAX_PAGES);
	case HC_SLOT_MOVE:
		if (a[4] || a[5])
			return HC_E_INVAL;
		return hc_arg_page(a[3]);
	case HC_SLOT_ADD_EMPTY:
		if (a[4])
			return HC_E_INVAL;
		if ((rc = hc_arg_page(a[3])))
			return rc;
		return hc_count(a[3], a[5], HC_SLOT_LAZY_MAX_PAGES);
	case HC_SLOT_FILL:
		if ((rc = hc_arg_page(a[4])))
			return rc;
		return hc_pages_in_slot(a[3], a[5], HC_LIST_MAX);
	case HC_SLOT_DROP:
		if (a[4])
			return HC_E_INVAL;
		return hc_pages_in_slot(a[3], a[5], HC_SLOT_LAZY_MAX_PAGES);
	case HC_SLOT_LOG:
		return a[3] > 1 || a[4] || a[5] ? HC_E_INVAL : HC_OK;
	case HC_SLOT_DIRTY_GET:
	case HC_SLOT_DIRTY_TAKE:
	case HC_SLOT_DIRTY_CLEAR:
		if ((rc = hc_arg_page(a[4])))
			return rc;
		return hc_pages_in_slot(a[3], a[5], HC_DIRTY_MAX_PAGES);
	default: // HC_SLOT_DELETE
		return a[3] || a[4] || a[5] ? HC_E_INVAL : HC_OK;
	}
}

static int hc_args(enum hc_fn fn, const uint64_t *a, struct hc_call *c)
{
	int rc;

	switch (fn) {
	case HC_VERSION_FN:
		return HC_OK;
	case HC_DEPOSIT:
		c->pa = a[0];
		c->count = a[1];
		if ((rc = hc_arg_page(a[0])))
			return rc;
		return hc_count(a[0], a[1], HC_DEPOSIT_MAX);
	case HC_WITHDRAW:
		c->pa = a[0];
		c->count = a[1];
		if ((rc = hc_arg_page(a[0])))
			return rc;
		return hc_count(0, a[1], HC_LIST_MAX);
	case HC_VM_CREATE:
		if (a[0] & ~(uint64_t)(HC_VM_FLAG_DONATE | HC_VM_FLAG_ZAP_ALL))
			return HC_E_INVAL;
		c->flags = (uint32_t)a[0];
		if (a[1] == 0)
			return HC_E_BAD_VCPU;
		return hc_index(a[1], HC_MAX_VCPUS + 1ull, HC_E_BAD_VCPU, &c->vcpu);
	case HC_VM_DESTROY:
		return hc_vm(a[0], &c->vm);
	case HC_VCPU_CREATE: // a2 is zero (unused), which passes as a page
	case HC_VCPU_RUN:
	case HC_VCPU_SET_REGS:
	case HC_VCPU_GET_REGS:
		return hc_arg_vcpu_page(a, c);
	case HC_VM_STATS:
		if ((rc = hc_vm(a[0], &c->vm)))
			return rc;
		c->pa = a[1];
		return hc_arg_page(a[1]);
	case HC_HV_STATS:
		c->pa = a[0];
		return hc_arg_page(a[0]);
	case HC_LOG_READ: // the position is checked against the log by the handler
		c->pa = a[0];
		c->count = a[1];
		return hc_arg_page(a[0]);
	default: // HC_SLOT_SET (the last generic call)
		return hc_slot_set(a, c);
	}
}

int hc_decode(enum hc_abi abi, const struct hc_regs *r, struct hc_call *out)
{
	struct hc_call c = {0};
	int rc;

	if ((rc = hc_fn_of(abi, r->fn, &c.fn)))
		return rc;
	// The architecture's calls: their arguments are its to check (hv_boot.arch_call).
	if (!hc_fn_is_arch(c.fn) &&
	    ((rc = hc_arg_unused_zero(hc_used[c.fn], r->a)) || (rc = hc_args(c.fn, r->a, &c))))
		return rc;
	*out = c;
	return HC_OK;
}
