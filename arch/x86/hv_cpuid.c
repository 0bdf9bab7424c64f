// SPDX-License-Identifier: Apache-2.0
//
// ABI 1.3's x86 calls: their decoder and a secondary vCPU's CPUID table
// (hv_cpuid.h).
#include "arch/x86/hv_cpuid.h"

_Static_assert(HC_VCPU_SET_CPUID >= HC_FN_ARCH_FIRST && HC_VCPU_MSRS < HC_FN_ARCH_END,
	       "x86's calls are in the architecture's range");

// Which argument registers each call uses (bit i: a[i]), from HC_VCPU_SET_CPUID on.
static const uint8_t call_used[] = {0x0f, 0x01, 0x1f, 0x0f};

int x86_hv_call_decode(uint32_t fn, const uint64_t *a, struct hc_call *out)
{
	struct hc_call c = {.fn = (enum hc_fn)fn};
	int rc;

	if (fn < HC_VCPU_SET_CPUID || fn > HC_VCPU_FPU)
		return HC_E_UNKNOWN;
	if ((rc = hc_arg_unused_zero(call_used[fn - HC_VCPU_SET_CPUID], a)))
		return rc;
	if (fn == HC_CPUID_SUPPORTED) {
		c.pa = a[0];
		rc = hc_arg_page(a[0]);
	} else if (fn == HC_VCPU_FPU) {
		if (!(rc = hc_arg_vcpu_page(a, &c)) && a[3] > 1)
			rc = HC_E_INVAL; // a3: the direction
		c.flags = (uint32_t)a[3];
	} else if (!(rc = hc_arg_vcpu_page(a, &c))) {
		if (a[3] > (fn == HC_VCPU_MSRS ? HC_MSR_MAX : HC_CPUID_MAX))
			rc = HC_E_TOO_MANY;
		else if (a[4] > 1) // only MSRS uses a4: its direction
			rc = HC_E_INVAL;
		c.count = a[3];
		c.flags = (uint32_t)a[4];
	}
	if (rc)
		return rc;
	*out = c;
	return HC_OK;
}

#define RANGE_MAX_LEAVES 0x80u // leaves taken from each range at most
#define SUBLEAF_MAX	 16u   // subleaves of one indexed leaf at most

// How the subleaves of an indexed leaf end.
enum sub_kind {
	SUB_NONE,     // not indexed
	SUB_CACHE,    // 4, 0x8000001d: until the cache type EAX[4:0] is 0
	SUB_TOPOLOGY, // 0xb, 0x1f: until the level type ECX[15:8] is 0
	SUB_COUNT,    // 7, 0x14, 0x17, 0x18, 0x1d, 0x20: EAX of subleaf 0 is the last one
	SUB_XSAVE,    // 0xd: 0 and 1, then 2..63 where EAX (the component's size) is not 0
	SUB_FIRST,    // 0xf, 0x10, 0x12, 0x1e, 0x80000020: subleaves 0 and 1
};

static enum sub_kind sub_kind_of(uint32_t leaf)
{
	switch (leaf) {
	case 4:
	case 0x8000001du:
		return SUB_CACHE;
	case 0xb:
	case 0x1f:
		return SUB_TOPOLOGY;
	case 7:
	case 0x14:
	case 0x17:
	case 0x18:
	case 0x1d:
	case 0x20:
		return SUB_COUNT;
	case 0xd:
		return SUB_XSAVE;
	case 0xf:
	case 0x10:
	case 0x12:
	case 0x1e:
	case 0x80000020u:
		return SUB_FIRST;
	default:
		return SUB_NONE;
	}
}

static bool sub_present(enum sub_kind k, uint32_t sub, const uint32_t r[4], uint32_t last)
{
	switch (k) {
	case SUB_CACHE:
		return (r[0] & 0x1f) != 0;
	case SUB_TOPOLOGY:
		return sub == 0 || ((r[2] >> 8) & 0xff) != 0;
	case SUB_COUNT:
		return sub <= last;
	case SUB_XSAVE:
		return sub <= 1 || r[0] != 0;
	case SUB_FIRST:
		return sub <= 1;
	default:
		return sub == 0;
	}
}

static bool put(struct hc_cpuid_entry *t, unsigned *n, unsigned max, uint32_t leaf, uint32_t sub,
		bool indexed, const uint32_t r[4])
{
	if (*n >= max)
		return false;
	t[*n] = (struct hc_cpuid_entry){.function = leaf,
					.index = sub,
					.flags = indexed ? HC_CPUID_F_INDEXED : 0,
					.eax = r[0],
					.ebx = r[1],
					.ecx = r[2],
					.edx = r[3]};
	(*n)++;
	return true;
}

static bool enumerate_leaf(x86_cpuid_source src, uint32_t leaf, struct hc_cpuid_entry *t,
			   unsigned *n, unsigned max)
{
	enum sub_kind k = sub_kind_of(leaf);
	uint32_t r[4], last = 0;
	unsigned subs = k == SUB_XSAVE ? 64 : SUBLEAF_MAX;

	for (uint32_t sub = 0; sub < subs; sub++) {
		src(leaf, sub, r);
		if (sub == 0)
			last = r[0];
		if (!sub_present(k, sub, r, last)) {
			if (k == SUB_XSAVE)
				continue; // components need not be contiguous
			break;
		}
		if (!put(t, n, max, leaf, sub, k != SUB_NONE, r))
			return false;
		if (k == SUB_NONE)
			break;
	}
	return true;
}

unsigned x86_cpuid_enumerate(x86_cpuid_source src, struct hc_cpuid_entry *t, unsigned max)
{
	static const uint32_t bases[] = {0, 0x40000000u, 0x80000000u};
	unsigned n = 0;

	for (unsigned b = 0; b < 3; b++) {
		uint32_t r[4];
		src(bases[b], 0, r);
		uint32_t top = r[0];
		if (top < bases[b] || top - bases[b] >= RANGE_MAX_LEAVES)
			top = top < bases[b] ? bases[b] : bases[b] + RANGE_MAX_LEAVES - 1;
		for (uint32_t leaf = bases[b]; leaf <= top; leaf++)
			if (!enumerate_leaf(src, leaf, t, &n, max))
				return n;
	}
	return n;
}

// The feature registers of a leaf (bit i: EAX, EBX, ECX, EDX), which a VMM
// may only narrow: these are what the guest may use. 0x40000001 is Slat's
// (empty) paravirtual feature leaf: a VMM may not claim KVM's features there.
static unsigned feature_regs(uint32_t leaf, uint32_t sub)
{
	switch (leaf) {
	case 1:
	case 0x80000001u:
		return 0xc; // ECX, EDX
	case 7:
		return sub == 0 ? 0xe : 0xf; // 7.0 EAX is the last subleaf
	case 0xd:
	case 0x8000000au:
	case 0x40000001u:
		return 0xf;
	default:
		return 0;
	}
}

bool x86_cpuid_table_ok(x86_cpuid_source src, const struct hc_cpuid_entry *t, unsigned n,
			unsigned *bad)
{
	for (unsigned i = 0; i < n; i++) {
		const struct hc_cpuid_entry *e = &t[i];
		uint32_t sup[4], want[4] = {e->eax, e->ebx, e->ecx, e->edx};
		uint32_t sub = (e->flags & HC_CPUID_F_INDEXED) ? e->index : 0;
		unsigned regs = feature_regs(e->function, sub);

		*bad = i;
		if (e->pad || (e->flags & ~HC_CPUID_F_INDEXED))
			return false;
		if (!regs)
			continue;
		src(e->function, sub, sup);
		for (unsigned r = 0; r < 4; r++)
			if ((regs >> r & 1) && (want[r] & ~sup[r]))
				return false;
	}
	return true;
}

void x86_cpuid_lookup(const struct hc_cpuid_entry *t, unsigned n, uint32_t leaf, uint32_t sub,
		      uint32_t out[4])
{
	out[0] = out[1] = out[2] = out[3] = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct hc_cpuid_entry *e = &t[i];
		if (e->function != leaf || ((e->flags & HC_CPUID_F_INDEXED) && e->index != sub))
			continue;
		out[0] = e->eax, out[1] = e->ebx, out[2] = e->ecx, out[3] = e->edx;
		return;
	}
}
