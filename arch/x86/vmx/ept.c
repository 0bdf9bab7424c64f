// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's EPT, built and torn down by the mm/ engine (Intel EPT
// 4-level format, arch/x86/fmt_ept.c) over the VMX back end of
// ept_backend.c (pages from Slat's region, INVEPT).
//
// The map: guest-physical == host-physical over [0, 2^min(phys_bits, 40)),
// the largest leaves alignment allows (1 GiB, 2 MiB, 4 KiB):
//   - RAM and ROM the firmware reports as cacheable (plan ranges of kind
//     Normal): write-back; everything else (MMIO, holes): uncacheable;
//   - Slat's region: not present (a guest access is an EPT violation and the
//     guest gets #GP, see docs/x86-exits.md);
//   - the local APIC page: read-only when the INIT/SIPI mailbox is used, so
//     every write exits (arch/x86/apic_mailbox.c).
// Everything else stays readable, writable and executable.
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"
#include "mm/s2.h"

#define EPT_MAX_PHYS_BITS 40 // 1 TiB: two PDPT pages of 1 GiB leaves

static struct s2_vm *ept_vm;
static struct s2_root *ept_root;

struct ept_ctx {
	const struct region *slat;
	uint64_t apic;
	unsigned apic_prot;
	int err;
};

static void map(struct ept_ctx *c, uint64_t base, uint64_t size, unsigned prot, enum s2_memtype mt)
{
	if (!size || c->err)
		return;
	c->err = s2_map(ept_vm, ept_root, base, size, base, prot, mt);
	if (c->err)
		log_err("vmx: EPT map of 0x%llx+0x%llx failed (%d)\n", (unsigned long long)base,
			(unsigned long long)size, c->err);
}

// [base, end) of one kind, minus Slat's region, with the APIC page apart.
static void emit(struct ept_ctx *c, uint64_t base, uint64_t end, bool normal)
{
	uint64_t sb = c->slat->base, se = c->slat->base + c->slat->size;
	enum s2_memtype mt = normal ? S2_MT_WB : S2_MT_DEVICE;

	if (base >= end)
		return;
	if (base < se && sb < end) { // overlaps Slat's region: map around it
		emit(c, base, sb < base ? base : sb, normal);
		emit(c, se > end ? end : se, end, normal);
		return;
	}
	if (c->apic >= base && c->apic < end) {
		map(c, base, c->apic - base, S2_PROT_RWX, mt);
		map(c, c->apic, 4096, c->apic_prot, S2_MT_DEVICE);
		map(c, c->apic + 4096, end - c->apic - 4096, S2_PROT_RWX, mt);
		return;
	}
	map(c, base, end - base, S2_PROT_RWX, mt);
}

bool vmx_ept_build(struct region *r, const struct slat_plan *plan, const struct vmx_config *cf,
		   uint64_t apic, uint64_t *eptp, struct vmx_ept_counts *counts)
{
	unsigned phys =
	    cpuid(0x80000000u, 0).eax >= 0x80000008u ? cpuid(0x80000008u, 0).eax & 0xff : 36;
	unsigned bits = phys < EPT_MAX_PHYS_BITS ? phys : EPT_MAX_PHYS_BITS;
	uint64_t top = 1ull << bits, cursor = 0;
	struct s2_vm_config cfg = {.fmt = &s2_fmt_ept4, .be = &vmx_s2_backend};
	struct ept_ctx c = {
	    .slat = &plan->region,
	    .apic = apic,
	    .apic_prot = cf->native_sipi ? S2_PROT_RWX : S2_PROT_R,
	};
	struct s2_stats ss;

	// The engine's EPT format maps 2 MiB and 1 GiB leaves (every EPT CPU
	// since 2010 has both); refuse a CPU without them rather than fault.
	if (!cf->ept_2m || !cf->ept_1g) {
		log_err("vmx: EPT without 2 MiB and 1 GiB pages: not supported\n");
		return false;
	}
	vmx_mm_init(r);
	c.err = s2_vm_create(&cfg, &ept_vm);
	if (!c.err)
		c.err = s2_root_get(ept_vm, (struct s2_role){0, 0}, &ept_root);
	if (c.err) {
		log_err("vmx: cannot create the EPT (%d)\n", c.err);
		return false;
	}
	for (unsigned i = 0; i < plan->n_ranges && cursor < top; i++) {
		const struct plan_range *pr = &plan->ranges[i];
		uint64_t end = pr->base + pr->size < top ? pr->base + pr->size : top;
		if (pr->base > cursor)
			emit(&c, cursor, pr->base < top ? pr->base : top, false);
		if (end > pr->base && end > cursor)
			emit(&c, pr->base > cursor ? pr->base : cursor, end,
			     pr->kind == PLAN_MEM_NORMAL);
		if (end > cursor)
			cursor = end;
	}
	emit(&c, cursor, top, false);
	if (c.err) {
		log_err("vmx: cannot build the EPT (out of Slat memory?)\n");
		return false;
	}
	s2_vm_stats(ept_vm, &ss);
	struct slat_mm_counts mc;
	vmx_ept_mm_counts(&mc);
	*counts = (struct vmx_ept_counts){
	    .leaves_1g = ss.leaves_mapped[2],
	    .leaves_2m = ss.leaves_mapped[1],
	    .leaves_4k = ss.leaves_mapped[0],
	    .table_pages = mc.table_pages,
	    .top = top,
	};
	*eptp = ept_eptp(s2_root_pa(ept_root), 4, false);
	vmx_mm_set_live(*eptp);
	return true;
}

// Batched teardown by the engine: detach everything below the root (which
// stays, empty: other CPUs may still run on it), one invalidation, then free
// the tables with no per-entry invalidation.
void vmx_ept_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	struct slat_mm_counts before, after;

	*pages_freed = *invalidations = 0;
	if (!ept_vm || !ept_root)
		return;
	vmx_ept_mm_counts(&before);
	*pages_freed = s2_root_teardown(ept_vm, ept_root);
	vmx_ept_mm_counts(&after);
	*invalidations = after.invalidations - before.invalidations;
}
