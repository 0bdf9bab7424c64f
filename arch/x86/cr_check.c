// SPDX-License-Identifier: Apache-2.0
//
// Control-register, EFER and XCR0 validation (see cr_check.h). Pure.
#include "arch/x86/cr_check.h"

#define BIT(n) (1ull << (n))

#define K_CR0_PE	 BIT(0)
#define K_CR0_WP	 BIT(16)
#define K_CR0_NW	 BIT(29)
#define K_CR0_CD	 BIT(30)
#define K_CR0_PG	 BIT(31)
#define K_CR4_PAE	 BIT(5)
#define K_CR4_PCE	 BIT(8)
#define K_CR4_OSXMMEXCPT BIT(10)
#define K_CR4_LA57	 BIT(12)
#define K_CR4_PCIDE	 BIT(17)
#define K_CR4_CET	 BIT(23)
#define K_EFER_LME	 BIT(8)
#define K_EFER_LMA	 BIT(10)

#define K_XCR0_X87    BIT(0)
#define K_XCR0_SSE    BIT(1)
#define K_XCR0_AVX    BIT(2)
#define K_XCR0_BNDREG BIT(3)
#define K_XCR0_BNDCSR BIT(4)
#define K_XCR0_AVX512 (7ull << 5)
#define K_XCR0_AMX    (3ull << 17)

// A CR4 bit and the CPUID bit that enumerates it.
struct feature_bit {
	uint8_t bit;  // in CR4 or EFER
	uint8_t reg;  // index into the flattened CPUID words below
	uint8_t flag; // bit in that word
};

enum { L1_ECX, L1_EDX, L7_EBX, L7_ECX, L7_EDX, L71_EAX, E1_ECX, E1_EDX, E8_EBX, E21_EAX, NWORDS };

static const struct feature_bit cr4_features[] = {
    {0, L1_EDX, 1},    // VME
    {1, L1_EDX, 1},    // PVI
    {2, L1_EDX, 4},    // TSD (TSC)
    {3, L1_EDX, 2},    // DE
    {4, L1_EDX, 3},    // PSE
    {5, L1_EDX, 6},    // PAE
    {6, L1_EDX, 7},    // MCE
    {7, L1_EDX, 13},   // PGE
    {9, L1_EDX, 24},   // OSFXSR (FXSR)
    {11, L7_ECX, 2},   // UMIP
    {12, L7_ECX, 16},  // LA57
    {13, L1_ECX, 5},   // VMXE
    {14, L1_ECX, 6},   // SMXE
    {16, L7_EBX, 0},   // FSGSBASE
    {17, L1_ECX, 17},  // PCIDE
    {18, L1_ECX, 26},  // OSXSAVE
    {19, L7_ECX, 23},  // KL
    {20, L7_EBX, 7},   // SMEP
    {21, L7_EBX, 20},  // SMAP
    {22, L7_ECX, 3},   // PKE
    {23, L7_ECX, 7},   // CET (shadow stacks)
    {23, L7_EDX, 20},  // CET (indirect branch tracking)
    {24, L7_ECX, 31},  // PKS
    {25, L7_EDX, 5},   // UINTR
    {28, L71_EAX, 26}, // LAM_SUP
};

static const struct feature_bit efer_features[] = {
    {0, E1_EDX, 11},  // SCE (SYSCALL)
    {8, E1_EDX, 29},  // LME (LM)
    {10, E1_EDX, 29}, // LMA (LM)
    {11, E1_EDX, 20}, // NXE (NX)
    {12, E1_ECX, 2},  // SVME (SVM)
    {14, E1_EDX, 25}, // FFXSR
    {15, E1_ECX, 17}, // TCE
    {21, E21_EAX, 8}, // AutoIBRS
};

struct x86_cr_caps
x86_cr_caps_from(void (*leaf)(void *ctx, uint32_t l, uint32_t s, uint32_t out[4]), void *ctx)
{
	uint32_t r[4], w[NWORDS] = {0};
	struct x86_cr_caps c = {.cr4_ok = K_CR4_PCE | K_CR4_OSXMMEXCPT};

	leaf(ctx, 0, 0, r);
	uint32_t max = r[0];
	leaf(ctx, 1, 0, r);
	w[L1_ECX] = r[2], w[L1_EDX] = r[3];
	if (max >= 7) {
		leaf(ctx, 7, 0, r);
		w[L7_EBX] = r[1], w[L7_ECX] = r[2], w[L7_EDX] = r[3];
		if (r[0] >= 1) {
			leaf(ctx, 7, 1, r);
			w[L71_EAX] = r[0];
		}
	}
	if (max >= 0xd) {
		leaf(ctx, 0xd, 0, r);
		c.xcr0_ok = ((uint64_t)r[3] << 32) | r[0];
	}
	leaf(ctx, 0x80000000, 0, r);
	uint32_t emax = r[0];
	if (emax >= 0x80000001) {
		leaf(ctx, 0x80000001, 0, r);
		w[E1_ECX] = r[2], w[E1_EDX] = r[3];
	}
	c.maxphyaddr = 36;
	if (emax >= 0x80000008) {
		leaf(ctx, 0x80000008, 0, r);
		c.maxphyaddr = r[0] & 0xff;
		w[E8_EBX] = r[1];
	}
	if (emax >= 0x80000021) {
		leaf(ctx, 0x80000021, 0, r);
		w[E21_EAX] = r[0];
	}
	for (unsigned i = 0; i < sizeof(cr4_features) / sizeof(cr4_features[0]); i++)
		if (w[cr4_features[i].reg] & (1u << cr4_features[i].flag))
			c.cr4_ok |= BIT(cr4_features[i].bit);
	for (unsigned i = 0; i < sizeof(efer_features) / sizeof(efer_features[0]); i++)
		if (w[efer_features[i].reg] & (1u << efer_features[i].flag))
			c.efer_ok |= BIT(efer_features[i].bit);
	// LMSLE (AMD): offered unless 0x80000008 EBX[20] says it is not, and
	// only by CPUs that have SVM's vendor (the bit is reserved on Intel).
	if ((w[E1_ECX] & (1u << 2)) && !(w[E8_EBX] & (1u << 20)) && emax >= 0x80000008)
		c.efer_ok |= BIT(13);
	return c;
}

bool x86_cr0_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val)
{
	if (val >> 32)
		return false; // bits 63:32 are reserved
	if ((val & K_CR0_PG) && !(val & K_CR0_PE))
		return false;
	if ((val & K_CR0_NW) && !(val & K_CR0_CD))
		return false;
	// Turning paging on with LME set enters long mode: PAE must be on.
	if ((val & K_CR0_PG) && !(s->cr0 & K_CR0_PG) && (s->efer & K_EFER_LME) &&
	    !(s->cr4 & K_CR4_PAE))
		return false;
	// Paging cannot be turned off in 64-bit mode, nor with PCIDE set.
	if (!(val & K_CR0_PG) && (s->cr0 & K_CR0_PG) && (s->cs_long || (s->cr4 & K_CR4_PCIDE)))
		return false;
	if (!(val & K_CR0_WP) && (s->cr4 & K_CR4_CET))
		return false;
	return true;
}

bool x86_cr3_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val)
{
	if (!(s->efer & K_EFER_LMA))
		return true; // legacy modes use bits 31:0 only
	if (s->cr4 & K_CR4_PCIDE)
		val &= ~BIT(63); // "do not invalidate", not part of CR3
	return c->maxphyaddr >= 64 || !(val >> c->maxphyaddr);
}

bool x86_cr4_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val)
{
	if (val & ~c->cr4_ok)
		return false;
	if (s->efer & K_EFER_LMA) {
		if (!(val & K_CR4_PAE) || ((val ^ s->cr4) & K_CR4_LA57))
			return false;
	}
	if ((val & K_CR4_PCIDE) && !(s->cr4 & K_CR4_PCIDE) &&
	    (!(s->efer & K_EFER_LMA) || (s->cr3 & 0xfff)))
		return false;
	if ((val & K_CR4_CET) && !(s->cr0 & K_CR0_WP))
		return false;
	return true;
}

bool x86_efer_ok(const struct x86_cr_state *s, const struct x86_cr_caps *c, uint64_t val)
{
	if (val & ~(c->efer_ok | (s->efer & ~K_EFER_LMA)))
		return false;
	// LME cannot change while paging is on.
	return !((s->cr0 & K_CR0_PG) && ((val ^ s->efer) & K_EFER_LME));
}

bool x86_xcr_ok(const struct x86_cr_caps *c, uint32_t xcr, uint64_t val)
{
	if (xcr != 0 || !(val & K_XCR0_X87) || (val & ~c->xcr0_ok))
		return false;
	if ((val & K_XCR0_AVX) && !(val & K_XCR0_SSE))
		return false;
	if (!!(val & K_XCR0_BNDREG) != !!(val & K_XCR0_BNDCSR))
		return false;
	if ((val & K_XCR0_AVX512) &&
	    ((val & K_XCR0_AVX512) != K_XCR0_AVX512 || !(val & K_XCR0_AVX)))
		return false;
	if ((val & K_XCR0_AMX) && (val & K_XCR0_AMX) != K_XCR0_AMX)
		return false;
	return true;
}
