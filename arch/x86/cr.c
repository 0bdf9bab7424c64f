// SPDX-License-Identifier: Apache-2.0
//
// The guest's control state and CPUID caps for the checks of cr_check.c,
// read through the back end's operations. See cr_check.h.
#include "arch/x86/cpu.h"
#include "arch/x86/cr_check.h"
#include "arch/x86/vcpu.h"
#include "core/log.h"

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
	case X86_GUEST_EFER:
		return x86_efer_ok(&st, &caps, val);
	default:
		return true;
	}
}

// The value a CR0-writing instruction at RIP loads: MOV CR0 (0F 22 /0, a
// 32-bit operand outside 64-bit mode), CLTS (0F 06), LMSW (0F 01 /6, a
// register or a 16-bit memory operand: PE can be set, not cleared).
// CR0_NOT_DECODED when it is none of them, CR0_OPERAND_FAULT when LMSW's
// operand cannot be read (*la: its linear address).
enum cr0_source { CR0_VALUE, CR0_NOT_DECODED, CR0_OPERAND_FAULT };
static enum cr0_source cr0_write_value(struct vcpu *v, const struct x86_insn *in, uint64_t cr0,
				       uint64_t *val, uint64_t *la)
{
	uint16_t src = 0;

	if (!in->two_byte)
		return CR0_NOT_DECODED;
	if (in->opcode == 0x06) {
		*val = cr0 & ~(1ull << 3);
		return CR0_VALUE;
	}
	if (in->opcode == 0x22 && in->reg == 0) {
		*val = in->long_mode ? v->arch.gpr[in->rm] : (uint32_t)v->arch.gpr[in->rm];
		return CR0_VALUE;
	}
	if (in->opcode != 0x01 || ((in->modrm >> 3) & 7) != 6)
		return CR0_NOT_DECODED;
	if ((in->modrm >> 6) == 3)
		src = (uint16_t)v->arch.gpr[in->rm];
	else if (!x86_read_mem_operand(v, in, &src, 2, la))
		return CR0_OPERAND_FAULT;
	*val = (cr0 & ~0xeull) | (src & 0xe) | ((cr0 | src) & 1);
	return CR0_VALUE;
}

static enum x86_action cr0_write_undecoded(struct vcpu *v)
{
	log_warn(
	    "x86: vcpu%u: CR0 write at RIP 0x%llx by an instruction Slat does not decode: #UD\n",
	    v->index, (unsigned long long)v->arch.rip);
	return x86_inject_ud(v);
}

enum x86_action x86_handle_cr0_write(struct vcpu *v, void (*apply)(struct vcpu *, uint64_t))
{
	struct x86_insn in;
	struct x86_seg ss;
	uint64_t val, la = 0;

	if (!x86_decode(v, &in))
		return cr0_write_undecoded(v);
	v->arch.ops->read_seg(v, X86_SS, &ss);
	if (((ss.attr >> 5) & 3) != 0) // CPL > 0: #GP before any operand is read
		return x86_inject_gp0(v);
	switch (cr0_write_value(v, &in, v->arch.ops->read_cr(v, 0), &val, &la)) {
	case CR0_NOT_DECODED:
		return cr0_write_undecoded(v);
	case CR0_OPERAND_FAULT:
		// Not present, a supervisor read: the only fault a CPL-0 read of a
		// page it can reach takes (SMAP is not modelled).
		v->arch.ops->write_cr2(v, la);
		v->arch.ops->inject(v, X86_EXC_PF, true, 0);
		return X86_CONTINUE;
	case CR0_VALUE:
		break;
	}
	if (!x86_guest_cr_ok(v, 0, val))
		return x86_inject_gp0(v);
	apply(v, val);
	x86_skip_insn(v);
	return X86_CONTINUE;
}
