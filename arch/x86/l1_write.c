// SPDX-License-Identifier: Apache-2.0
//
// See l1_write.h.
#include "arch/x86/l1_write.h"
#include "arch/x86/vcpu.h"
#include "mm/shadow.h"

// RFLAGS after CMP of `a` with `b` (a - b), `size` bytes.
static uint64_t cmp_flags(uint64_t rflags, uint64_t a, uint64_t b, unsigned size)
{
	uint64_t m = x86_size_mask(size), d = (a - b) & m, sign = 1ull << (8 * size - 1);
	uint64_t f = rflags & ~0x8d5ull; // CF PF AF ZF SF OF

	f |= (a & m) < (b & m) ? 1 : 0;			    // CF
	f |= __builtin_parityll(d & 0xff) ? 0 : 1ull << 2;  // PF: even parity
	f |= ((a ^ b ^ d) & 0x10) ? 1ull << 4 : 0;	    // AF
	f |= d == 0 ? 1ull << 6 : 0;			    // ZF
	f |= (d & sign) ? 1ull << 7 : 0;		    // SF
	f |= (((a ^ b) & (a ^ d)) & sign) ? 1ull << 11 : 0; // OF
	return f;
}

bool x86_l1_write_emulate(struct vcpu *v, struct sh_mmu *sh, uint64_t gpa, uint64_t *rflags)
{
	struct x86_insn in;
	uint64_t val, old, expect;
	const uint64_t *cmp = NULL;

	if (!x86_decode(v, &in) || !in.has_modrm || (in.modrm >> 6) == 3 || !in.ea_ok)
		return false;
	// QEMU reports the faulting page, not the byte: the offset comes from
	// the operand's address (page offsets are the same in every space).
	gpa = (gpa & ~0xfffull) | (in.ea & 0xfff);
	unsigned size = in.op_size;
	if ((gpa & (size - 1)) || size < 2)
		return false;
	if (!in.two_byte && (in.opcode == 0x89 || in.opcode == 0x87))
		val = v->arch.gpr[in.reg];
	else if (!in.two_byte && in.opcode == 0xc7)
		val = in.imm;
	else if (in.two_byte && in.opcode == 0xb1) {
		val = v->arch.gpr[in.reg];
		expect = v->arch.gpr[X86_RAX] & x86_size_mask(size);
		cmp = &expect;
	} else
		return false;
	if (sh_emulate_update(sh, 0, gpa, size, cmp, val & x86_size_mask(size), &old))
		return false;
	if (!in.two_byte && in.opcode == 0x87)
		x86_put_reg(&v->arch.gpr[in.reg], old, size);
	if (cmp) {
		*rflags = cmp_flags(*rflags, expect, old, size);
		if (old != expect)
			x86_put_reg(&v->arch.gpr[X86_RAX], old, size);
	}
	unsigned len = v->arch.ops->insn_len(v);
	v->arch.rip += len ? len : in.len;
	return true;
}
