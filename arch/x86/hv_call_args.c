// SPDX-License-Identifier: Apache-2.0
//
// The decoder of x86's calls (hv_call.h), with core's argument checks.
#include "arch/x86/hv_call.h"

_Static_assert(HC_VCPU_MSRS < HC_FN_ARCH_END && HC_VCPU_SET_CPUID >= HC_FN_ARCH_FIRST,
	       "x86's calls are in the architecture's range");

// Which argument registers each call uses (bit i: a[i]), from HC_VCPU_SET_CPUID on.
static const uint8_t x86_hv_used[] = {0x0f, 0x01, 0x1f};

// a0 = VM, a1 = vCPU, a2 = page, a3 = entries (<= max), a4 = direction (MSRS).
static int x86_hv_vcpu_args(uint32_t fn, const uint64_t *a, struct x86_hv_call *c)
{
	int rc;

	if ((rc = hc_arg_vm(a[0], &c->vm)) || (rc = hc_arg_vcpu(a[1], &c->vcpu)) ||
	    (rc = hc_arg_page(a[2])))
		return rc;
	c->pa = a[2];
	if (a[3] > (fn == HC_VCPU_MSRS ? HC_MSR_MAX : HC_CPUID_MAX))
		return HC_E_TOO_MANY;
	c->count = (uint32_t)a[3];
	if (a[4] > 1) // only MSRS uses a4 (unused registers were checked)
		return HC_E_INVAL;
	c->write = a[4];
	return HC_OK;
}

int x86_hv_call_decode(uint32_t fn, const uint64_t *a, struct x86_hv_call *out)
{
	struct x86_hv_call c = {.fn = fn};
	int rc;

	if (fn < HC_VCPU_SET_CPUID || fn > HC_VCPU_MSRS)
		return HC_E_UNKNOWN;
	if ((rc = hc_arg_unused_zero(x86_hv_used[fn - HC_VCPU_SET_CPUID], a)))
		return rc;
	if (fn == HC_CPUID_SUPPORTED) {
		c.pa = a[0];
		rc = hc_arg_page(a[0]);
	} else {
		rc = x86_hv_vcpu_args(fn, a, &c);
	}
	if (rc)
		return rc;
	*out = c;
	return HC_OK;
}
