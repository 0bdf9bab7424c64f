// SPDX-License-Identifier: Apache-2.0
//
// Reading guest memory and decoding the few instructions Slat has to step
// over or emulate when the CPU does not report their length (SVM without
// NRIPS, as under QEMU) or their operands (no decode assists):
//
//   CPUID 0F A2, RDMSR 0F 32, WRMSR 0F 30, RDTSC 0F 31, RDPMC 0F 33,
//   the 0F 01 group (XSETBV, VMMCALL, MWAIT, MONITOR, VMRUN, VMLOAD, VMSAVE,
//   STGI, CLGI, SKINIT, INVLPGA, RDTSCP, and the ModRM memory forms),
//   MOV to/from CRn 0F 22 / 0F 20, CLTS 0F 06,
//   HLT F4, IN/OUT E4-E7 EC-EF, INS/OUTS 6C-6F,
//   MOV 88 89 8A 8B C6 C7, MOV moffs A0-A3, XCHG 86 87 (the APIC-page writes),
//   CMPXCHG 0F B0 / 0F B1 (writes to the nested page tables Slat tracks),
//
// with legacy prefixes (66 67 F0 F2 F3, segment overrides) and REX. The
// guest's code is read through its own page tables: the second level is an
// identity map, so a guest-physical address is the host-physical one.
#include <stddef.h>

#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"

#define PTE_P	    1ull
#define PTE_PS	    (1ull << 7)
#define PTE_ADDR_64 0x000ffffffffff000ull

bool x86_guest_read_phys(uint64_t gpa, void *buf, unsigned len)
{
	const struct vm *vm = &x86_primary;

	if (!len || gpa + len < gpa || gpa + len > vm->arch.host_map_top ||
	    region_overlaps(&vm->hidden, gpa, len))
		return false;
	const uint8_t *src = (const uint8_t *)(uintptr_t)gpa;
	uint8_t *dst = buf;
	for (unsigned i = 0; i < len; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return true;
}

// The vCPU's guest-physical memory: the primary's is identity-mapped, a
// secondary's goes through its back end (ops->read_phys).
static bool read_phys(struct vcpu *v, uint64_t gpa, void *buf, unsigned len)
{
	if (v->arch.ops->read_phys)
		return v->arch.ops->read_phys(v, gpa, buf, len);
	return x86_guest_read_phys(gpa, buf, len);
}

static bool read_pte(struct vcpu *v, uint64_t pa, bool wide, uint64_t *pte)
{
	uint32_t narrow;

	if (wide)
		return read_phys(v, pa, pte, 8);
	if (!read_phys(v, pa, &narrow, 4))
		return false;
	*pte = narrow;
	return true;
}

// Linear -> physical for one address through the guest's paging structures.
static bool translate(struct vcpu *v, uint64_t la, uint64_t *pa)
{
	uint64_t cr0 = v->arch.ops->read_cr(v, 0), cr3 = v->arch.ops->read_cr(v, 3);
	uint64_t cr4 = v->arch.ops->read_cr(v, 4), efer = v->arch.ops->read_efer(v);
	uint64_t e;

	if (!(cr0 & CR0_PG)) {
		*pa = (efer & EFER_LMA) ? la : (uint32_t)la;
		return true;
	}
	if (efer & EFER_LMA) {
		unsigned levels = (cr4 & CR4_LA57) ? 5 : 4;
		uint64_t table = cr3 & PTE_ADDR_64;
		for (unsigned l = levels; l >= 1; l--) {
			unsigned shift = 12 + 9 * (l - 1);
			if (!read_pte(v, table + ((la >> shift) & 511) * 8, true, &e) ||
			    !(e & PTE_P))
				return false;
			if (l == 1 || (l <= 3 && (e & PTE_PS))) {
				uint64_t mask = (1ull << shift) - 1;
				*pa = ((e & PTE_ADDR_64) & ~mask) | (la & mask);
				return true;
			}
			table = e & PTE_ADDR_64;
		}
		return false;
	}
	la = (uint32_t)la;
	if (cr4 & CR4_PAE) {
		if (!read_pte(v, (cr3 & 0xffffffe0u) + (la >> 30) * 8, true, &e) || !(e & PTE_P))
			return false;
		if (!read_pte(v, (e & PTE_ADDR_64) + ((la >> 21) & 511) * 8, true, &e) ||
		    !(e & PTE_P))
			return false;
		if (e & PTE_PS) {
			*pa = ((e & PTE_ADDR_64) & ~0x1fffffull) | (la & 0x1fffff);
			return true;
		}
		if (!read_pte(v, (e & PTE_ADDR_64) + ((la >> 12) & 511) * 8, true, &e) ||
		    !(e & PTE_P))
			return false;
		*pa = (e & PTE_ADDR_64) | (la & 0xfff);
		return true;
	}
	if (!read_pte(v, (cr3 & 0xfffff000u) + (la >> 22) * 4, false, &e) || !(e & PTE_P))
		return false;
	if ((e & PTE_PS) && (cr4 & CR4_PSE)) {
		*pa = (e & 0xffc00000u) | (la & 0x3fffff);
		return true;
	}
	if (!read_pte(v, (e & 0xfffff000u) + ((la >> 12) & 1023) * 4, false, &e) || !(e & PTE_P))
		return false;
	*pa = (e & 0xfffff000u) | (la & 0xfff);
	return true;
}

bool x86_guest_read_linear(struct vcpu *v, uint64_t la, void *buf, unsigned len)
{
	uint8_t *dst = buf;

	while (len) {
		unsigned chunk = 4096 - (unsigned)(la & 0xfff);
		uint64_t pa;
		if (chunk > len)
			chunk = len;
		if (!translate(v, la, &pa) || !read_phys(v, pa, dst, chunk))
			return false;
		la += chunk, dst += chunk, len -= chunk;
	}
	return true;
}

// ---- decoder ------------------------------------------------------------------
struct fetch {
	uint8_t b[15];
	unsigned n, pos; // bytes available, next to decode
	// The memory operand's parts (32/64-bit addressing), for x86_insn.ea.
	uint8_t rex;
	const uint64_t *gpr;
	uint64_t ea;
	bool ea_ok, rip_rel, ss_based; // ss_based: (E)BP/(E)SP-based, SS by default
};

static uint64_t signed_disp(uint64_t v, unsigned bytes)
{
	return bytes == 1   ? (uint64_t)(int64_t)(int8_t)v
	       : bytes == 4 ? (uint64_t)(int64_t)(int32_t)v
			    : v;
}

static bool next(struct fetch *f, uint8_t *out)
{
	if (f->pos >= f->n)
		return false;
	*out = f->b[f->pos++];
	return true;
}

static bool take(struct fetch *f, unsigned n, uint64_t *val)
{
	uint64_t v = 0;

	if (f->pos + n > f->n)
		return false;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)f->b[f->pos + i] << (8 * i);
	f->pos += n;
	if (val)
		*val = v;
	return true;
}

// Skips ModRM's SIB and displacement for the given address size and sums
// the memory operand's effective address (segment base not added;
// RIP-relative finished by x86_decode).
static bool modrm_tail(struct fetch *f, uint8_t modrm, unsigned addr_size)
{
	unsigned mod = modrm >> 6, rm = modrm & 7;
	uint64_t base = 0, index = 0, d = 0;
	unsigned scale = 0;

	if (mod == 3)
		return true;
	if (addr_size == 2) { // [BX+SI] [BX+DI] [BP+SI] [BP+DI] [SI] [DI] [BP]/disp16 [BX]
		static const uint8_t base16[8] = {X86_RBX, X86_RBX, X86_RBP, X86_RBP,
						  X86_RSI, X86_RDI, X86_RBP, X86_RBX};
		unsigned disp = mod == 1 ? 1 : mod == 2 ? 2 : (rm == 6 ? 2 : 0);
		if (!take(f, disp, &d))
			return false;
		f->ea = signed_disp(d, disp) + ((mod || rm != 6) ? f->gpr[base16[rm]] : 0) +
			(rm < 4 ? f->gpr[(rm & 1) ? X86_RDI : X86_RSI] : 0);
		f->ea = (uint16_t)f->ea;
		f->ss_based = rm == 2 || rm == 3 || (rm == 6 && mod);
		f->ea_ok = true;
		return true;
	}
	unsigned disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
	bool has_base = true;
	unsigned breg = rm | ((f->rex & 1) ? 8 : 0);
	if (rm == 4) {
		uint8_t sib;
		if (!next(f, &sib))
			return false;
		unsigned ireg = ((sib >> 3) & 7) | ((f->rex & 2) ? 8 : 0);
		breg = (sib & 7) | ((f->rex & 1) ? 8 : 0);
		if (ireg != 4)
			index = f->gpr[ireg], scale = sib >> 6;
		if (mod == 0 && (sib & 7) == 5)
			disp = 4, has_base = false;
	} else if (mod == 0 && rm == 5) {
		disp = 4; // disp32, RIP-relative in 64-bit mode
		has_base = false;
		f->rip_rel = addr_size == 8;
	}
	if (!take(f, disp, &d))
		return false;
	if (has_base)
		base = f->gpr[breg];
	f->ss_based = has_base && (breg == X86_RSP || breg == X86_RBP);
	f->ea = base + (index << scale) + signed_disp(d, disp);
	if (addr_size == 4)
		f->ea = (uint32_t)f->ea;
	f->ea_ok = true;
	return true;
}

// Fetches up to 15 bytes at CS:RIP, fewer when the next page is not mapped.
static bool fetch_code(struct vcpu *v, struct fetch *f, bool *long_mode, unsigned *def_size)
{
	struct x86_seg cs;
	uint64_t efer = v->arch.ops->read_efer(v);

	v->arch.ops->read_seg(v, X86_CS, &cs);
	*long_mode = (efer & EFER_LMA) && (cs.attr & X86_SEG_ATTR_L);
	*def_size = *long_mode ? 4 : (cs.attr & X86_SEG_ATTR_D) ? 4 : 2;
	uint64_t la = *long_mode ? v->arch.rip : (uint32_t)(cs.base + v->arch.rip);
	unsigned first = 4096 - (unsigned)(la & 0xfff);

	if (first > 15)
		first = 15;
	*f = (struct fetch){0};
	if (!x86_guest_read_linear(v, la, f->b, first))
		return false;
	f->n = first;
	if (first < 15 && x86_guest_read_linear(v, la + first, f->b + first, 15 - first))
		f->n = 15;
	return true;
}

static bool decode_0f(struct fetch *f, struct x86_insn *in, unsigned addr_size)
{
	uint8_t op;

	if (!next(f, &op))
		return false;
	in->two_byte = true;
	in->opcode = op;
	switch (op) {
	case 0xa2: // CPUID
	case 0x30: // WRMSR
	case 0x31: // RDTSC
	case 0x32: // RDMSR
	case 0x33: // RDPMC
		return true;
	case 0x06: // CLTS
		return true;
	case 0x20: // MOV r64, CRn
	case 0x22: // MOV CRn, r64 (always the register form)
		if (!next(f, &in->modrm))
			return false;
		in->has_modrm = true;
		return true;
	case 0x01: // group 7: register forms (XSETBV, VMMCALL, MWAIT, ...) and memory forms
	case 0xb0:
	case 0xb1: // CMPXCHG r/m, r (a write to a page Slat tracks)
	case 0xb6:
	case 0xb7: // MOVZX r, r/m8 / r/m16 (a secondary's MMIO read)
		if (!next(f, &in->modrm))
			return false;
		in->has_modrm = true;
		return modrm_tail(f, in->modrm, addr_size);
	default:
		return false;
	}
}

bool x86_decode(struct vcpu *v, struct x86_insn *in)
{
	struct fetch f;
	bool lm;
	unsigned def;

	*in = (struct x86_insn){0};
	if (!fetch_code(v, &f, &lm, &def))
		return false;

	bool opsize = false, adsize = false;
	uint8_t rex = 0, b;
	int seg = -1; // a segment override prefix (the last one counts)
	for (;;) {
		if (!next(&f, &b))
			return false;
		if (b == 0x66)
			opsize = true;
		else if (b == 0x67)
			adsize = true;
		else if (b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e)
			seg = (b >> 3) & 3; // ES CS SS DS
		else if (b == 0x64 || b == 0x65)
			seg = b == 0x64 ? X86_FS : X86_GS;
		else if (b != 0xf0 && b != 0xf2 && b != 0xf3)
			break;
	}
	if (lm && (b & 0xf0) == 0x40) {
		rex = b;
		if (!next(&f, &b))
			return false;
	}
	unsigned addr_size = lm ? (adsize ? 4 : 8) : (def == 4) != adsize ? 4 : 2;
	f.rex = rex;
	f.gpr = v->arch.gpr;
	in->op_size = (rex & 8) ? 8 : ((def == 4) != opsize ? 4 : 2);
	in->opcode = b;

	bool ok;
	switch (b) {
	case 0x0f:
		ok = decode_0f(&f, in, addr_size);
		break;
	case 0xf4: // HLT
	case 0xec:
	case 0xed: // IN AL/eAX, DX
	case 0xee:
	case 0xef: // OUT DX, AL/eAX
	case 0x6c:
	case 0x6d: // INS
	case 0x6e:
	case 0x6f: // OUTS
		ok = true;
		break;
	case 0xe4:
	case 0xe5:
	case 0xe6:
	case 0xe7: // IN/OUT with an imm8 port
		ok = take(&f, 1, &in->imm);
		in->has_imm = true;
		break;
	case 0x88:
	case 0x89:
	case 0x8a:
	case 0x8b: // MOV r/m, r and r, r/m
	case 0x86:
	case 0x87: // XCHG r/m, r
	case 0xc6:
	case 0xc7: // MOV r/m, imm
		ok = next(&f, &in->modrm);
		in->has_modrm = true;
		ok = ok && modrm_tail(&f, in->modrm, addr_size);
		if (ok && b == 0xc6) {
			ok = take(&f, 1, &in->imm);
			in->has_imm = true;
		} else if (ok && b == 0xc7) {
			ok = take(&f, in->op_size == 2 ? 2 : 4, &in->imm);
			if (in->op_size == 8 && (in->imm & 0x80000000u))
				in->imm |= 0xffffffff00000000ull; // imm32 sign-extended
			in->has_imm = true;
		}
		break;
	case 0xa0:
	case 0xa1:
	case 0xa2:
	case 0xa3: // MOV AL/eAX <-> moffs
		ok = take(&f, addr_size, NULL);
		break;
	default:
		ok = false;
		break;
	}
	if (!ok)
		return false;
	in->rex = rex != 0;
	in->reg = (uint8_t)(((in->modrm >> 3) & 7) | ((rex & 4) ? 8 : 0));
	in->rm = (uint8_t)((in->modrm & 7) | ((rex & 1) ? 8 : 0));
	in->len = (uint8_t)f.pos;
	in->ea_ok = f.ea_ok;
	in->ea = f.rip_rel ? v->arch.rip + in->len + f.ea : f.ea;
	in->seg = (uint8_t)(seg >= 0 ? seg : f.ss_based ? X86_SS : X86_DS);
	in->long_mode = lm;
	return true;
}

// The segment base is added outside 64-bit mode, and for FS and GS in it.
// Limits and SMAP are not checked: a read Slat cannot make is reported with
// its linear address (the caller's #PF).
bool x86_read_mem_operand(struct vcpu *v, const struct x86_insn *in, void *buf, unsigned len,
			  uint64_t *la)
{
	struct x86_seg s;

	v->arch.ops->read_seg(v, in->seg, &s);
	*la = in->ea + ((!in->long_mode || in->seg >= X86_FS) ? s.base : 0);
	if (!in->long_mode)
		*la = (uint32_t)*la;
	return in->ea_ok && x86_guest_read_linear(v, *la, buf, len);
}
