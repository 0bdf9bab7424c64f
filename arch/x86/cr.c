// SPDX-License-Identifier: Apache-2.0
//
// The guest's control state and CPUID caps for the checks of cr_check.c,
// read through the back end's operations. See cr_check.h.
#include "arch/x86/cpu.h"
#include "arch/x86/cr_check.h"
#include "arch/x86/vcpu.h"

void x86_guest_cr_state(struct vcpu *v, struct x86_cr_state *out)
{
	const struct x86_vcpu_ops *ops = v->arch.ops;
	struct x86_seg cs;

	ops->read_seg(v, X86_CS, &cs);
	*out = (struct x86_cr_state){
	    .cr0 = ops->read_cr(v, 0),
	    .cr3 = ops->read_cr(v, 3),
	    .cr4 = ops->read_cr(v, 4),
	    .efer = ops->read_efer(v),
	};
	out->cs_long = (out->efer & EFER_LMA) && (cs.attr & X86_SEG_ATTR_L);
}

static void policy_leaf(void *ctx, uint32_t leaf, uint32_t sub, uint32_t out[4])
{
	x86_cpuid_policy(ctx, leaf, sub, out);
}

void x86_guest_cr_caps(struct vcpu *v, struct x86_cr_caps *out)
{
	*out = x86_cr_caps_from(policy_leaf, v);
}

bool x86_guest_cr_ok(struct vcpu *v, unsigned n, uint64_t val)
{
	struct x86_cr_state st;
	struct x86_cr_caps caps;

	x86_guest_cr_state(v, &st);
	x86_guest_cr_caps(v, &caps);
	switch (n) {
	case 0:
		return x86_cr0_ok(&st, &caps, val);
	case 3:
		return x86_cr3_ok(&st, &caps, val);
	case 4:
		return x86_cr4_ok(&st, &caps, val);
	default:
		return true;
	}
}
