// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's nested page tables, built and torn down by the mm/ engine
// (AMD64 NPT format, arch/x86/fmt_npt.c) over the SVM back end of
// npt_backend.c (pages from Slat's region, ASID flushes through TLB_CONTROL).
//
// The map: guest-physical == host-physical over [0, 2^min(phys_bits, 40)),
// the largest leaves alignment allows (1 GiB, 2 MiB, 4 KiB):
//   - RAM and ROM the firmware reports as cacheable (plan ranges of kind
//     Normal): write-back; everything else (MMIO, holes): uncacheable, so
//     the guest's own PAT/MTRR types only get stronger;
//   - Slat's region: not present (a guest access exits as a nested page
//     fault and the guest gets #GP, see docs/x86-exits.md);
//   - the local APIC page: present, read-only, so every write exits to the
//     INIT/SIPI mailbox (arch/x86/apic_mailbox.c).
// Everything stays executable, as it was before Slat took over.
#include "arch/x86/fmt_x86.h"
#include "arch/x86/svm/svm.h"
#include "core/config.h"
#include "core/log.h"
#include "mm/s2.h"

#define NPT_MAX_PHYS_BITS 40 // 1 TiB: two PDPT pages of 1 GiB leaves

static struct s2_vm *npt_vm;
static struct s2_root *npt_root;

struct npt_ctx {
	const struct region *slat;
	uint64_t apic;
	int err;
};

static void map(struct npt_ctx *c, uint64_t base, uint64_t size, unsigned prot, enum s2_memtype mt)
{
	if (!size || c->err)
		return;
	c->err = s2_map(npt_vm, npt_root, base, size, base, prot, mt);
	if (c->err)
		log_err("svm: NPT map of 0x%llx+0x%llx failed (%d)\n", (unsigned long long)base,
			(unsigned long long)size, c->err);
}

// [base, end) of one kind, minus Slat's region, with the APIC page apart.
static void emit(struct npt_ctx *c, uint64_t base, uint64_t end, bool normal)
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
		map(c, c->apic, 4096, S2_PROT_R, S2_MT_DEVICE);
		map(c, c->apic + 4096, end - c->apic - 4096, S2_PROT_RWX, mt);
		return;
	}
	map(c, base, end - base, S2_PROT_RWX, mt);
}

bool svm_npt_build(const struct slat_plan *plan, uint64_t apic_page, unsigned phys_bits,
		   uint64_t *root, struct svm_npt_stats *st)
{
	unsigned bits = phys_bits < NPT_MAX_PHYS_BITS ? phys_bits : NPT_MAX_PHYS_BITS;
	uint64_t top = 1ull << bits, cursor = 0;
	struct s2_vm_config cfg = {
	    .fmt = &s2_fmt_npt4,
	    .be = &svm_s2_backend,
	    .zap_mode = plan->zap_mode == CFG_ZAP_ALL ? S2_ZAP_ALL : S2_ZAP_SLOT,
	};
	struct npt_ctx c = {.slat = &plan->region, .apic = apic_page};
	struct s2_stats ss;

	c.err = s2_vm_create(&cfg, &npt_vm);
	if (!c.err)
		c.err = s2_root_get(npt_vm, (struct s2_role){0, 0}, &npt_root);
	if (c.err) {
		log_err("svm: cannot create the NPT (%d)\n", c.err);
		return false;
	}
	for (unsigned i = 0; i < plan->n_ranges && cursor < top; i++) {
		const struct plan_range *r = &plan->ranges[i];
		uint64_t end = r->base + r->size < top ? r->base + r->size : top;
		if (r->base > cursor)
			emit(&c, cursor, r->base < top ? r->base : top, false);
		if (end > r->base && end > cursor)
			emit(&c, r->base > cursor ? r->base : cursor, end,
			     r->kind == PLAN_MEM_NORMAL);
		if (end > cursor)
			cursor = end;
	}
	emit(&c, cursor, top, false);
	if (c.err) {
		log_err("svm: cannot build the NPT (out of Slat memory?)\n");
		return false;
	}
	s2_vm_stats(npt_vm, &ss);
	*st = (struct svm_npt_stats){
	    .leaves_1g = ss.leaves_mapped[2],
	    .leaves_2m = ss.leaves_mapped[1],
	    .leaves_4k = ss.leaves_mapped[0],
	    .top = top,
	};
	*root = s2_root_pa(npt_root);
	return true;
}

// Batched teardown by the engine: detach everything below the root (which
// stays, empty: other CPUs may still run on it), one invalidation for every
// vCPU, then free the tables with no per-entry invalidation.
void svm_npt_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	struct slat_mm_counts before, after;

	*pages_freed = *invalidations = 0;
	if (!npt_vm || !npt_root)
		return;
	svm_mm_counts(&before);
	*pages_freed = s2_root_teardown(npt_vm, npt_root);
	svm_mm_counts(&after);
	*invalidations = after.invalidations - before.invalidations;
}
