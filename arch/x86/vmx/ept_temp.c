// SPDX-License-Identifier: Apache-2.0
//
// TEMPORARY EPT builder, used until the mm/ engine (s2_map_identity with the
// EPT format of arch/x86/fmt_ept.c) is in slat.efi; then ept_backend.c
// replaces this file and the functions below keep their contract.
//
// The primary's EPT: an identity map of [0, top) with the largest pages that
// alignment and uniform memory type allow (1 GiB, 2 MiB, 4 KiB), write-back
// for memory the firmware reports as RAM/ROM, uncached elsewhere, RWX, except
// Slat's region, which stays unmapped (a guest access is an EPT violation).
#include "arch/x86/fmt_x86.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

#define EPT_ADDR 0x000ffffffffff000ull

static struct region *ept_pages;
static uint64_t ept_root, ept_eptp_val;
static uint64_t ept_pages_live, ept_pages_max, ept_invalidations;
static struct vmx_ept_counts ept_counts;
static bool ept_big[3]; // level 0 = 4K always; [1] 2M, [2] 1G allowed

static uint64_t page_new(void)
{
	uint64_t pa = region_alloc(ept_pages, 1, 4096);

	if (pa && ++ept_pages_live > ept_pages_max)
		ept_pages_max = ept_pages_live;
	return pa;
}

// Kind of [base, base + size) inside the plan, or -1 when it is not uniform
// (a range boundary or Slat's region falls inside). 0: normal, 1: device,
// 2: hole (unmapped).
static int span_kind(const struct slat_plan *plan, uint64_t base, uint64_t size)
{
	uint64_t end = base + size;
	const struct region *h = &plan->region;

	if (base < h->base + h->size && h->base < end)
		return base >= h->base && end <= h->base + h->size ? 2 : -1;
	for (unsigned i = 0; i < plan->n_ranges; i++) {
		const struct plan_range *r = &plan->ranges[i];
		uint64_t rend = r->base + r->size;
		if (rend <= base || r->base >= end)
			continue;
		if (r->base <= base && rend >= end)
			return r->kind == PLAN_MEM_NORMAL ? 0 : 1;
		return -1; // partly covered
	}
	return 1; // in no range: device (uncached)
}

static uint64_t leaf(uint64_t pa, int kind, unsigned level)
{
	uint64_t mt = kind == 0 ? 6 : 0;

	return pa | EPT_R | EPT_W | EPT_X | (mt << EPT_MT_SHIFT) | (level ? EPT_LARGE : 0);
}

// Fills table `t` (at `level`: 3 = PML4 ... 0 = PT) covering `base`.
static bool fill(const struct slat_plan *plan, uint64_t t, unsigned level, uint64_t base,
		 uint64_t top)
{
	uint64_t *e = (uint64_t *)(uintptr_t)t;
	uint64_t step = 1ull << (12 + 9 * level);

	for (unsigned i = 0; i < 512; i++) {
		uint64_t a = base + i * step;
		if (a >= top)
			break;
		int k = span_kind(plan, a, step);
		if (k == 2)
			continue;
		if (k >= 0 && (level == 0 || (level <= 2 && ept_big[level]))) {
			e[i] = leaf(a, k, level);
			if (level == 2)
				ept_counts.leaves_1g++;
			else if (level == 1)
				ept_counts.leaves_2m++;
			else
				ept_counts.leaves_4k++;
			continue;
		}
		uint64_t sub = page_new();
		if (!sub || !fill(plan, sub, level - 1, a, top))
			return false;
		e[i] = sub | EPT_R | EPT_W | EPT_X;
	}
	return true;
}

bool vmx_ept_build(struct region *r, const struct slat_plan *plan, const struct vmx_config *c,
		   uint64_t top, uint64_t *eptp, struct vmx_ept_counts *counts)
{
	ept_pages = r;
	ept_big[1] = c->ept_2m;
	ept_big[2] = c->ept_1g;
	ept_root = page_new();
	if (!ept_root || !fill(plan, ept_root, 3, 0, top)) {
		log_err("vmx: out of table pages for the EPT\n");
		return false;
	}
	ept_counts.table_pages = ept_pages_live;
	ept_eptp_val = ept_eptp(ept_root, 4, false);
	*eptp = ept_eptp_val;
	*counts = ept_counts;
	return true;
}

// Walks to the 4 KiB entry of `pa`, splitting large leaves on the way.
static uint64_t *entry_4k(uint64_t pa)
{
	uint64_t t = ept_root;

	for (unsigned level = 3; level > 0; level--) {
		uint64_t *e = (uint64_t *)(uintptr_t)t + ((pa >> (12 + 9 * level)) & 511);
		if (!(*e & (EPT_R | EPT_X)))
			return NULL;
		if (*e & EPT_LARGE) {
			uint64_t sub = page_new();
			if (!sub)
				return NULL;
			uint64_t step = 1ull << (12 + 9 * (level - 1));
			uint64_t attrs = *e & ~EPT_ADDR & ~(level == 1 ? EPT_LARGE : 0);
			for (unsigned i = 0; i < 512; i++)
				((uint64_t *)(uintptr_t)sub)[i] =
				    ((*e & EPT_ADDR) + i * step) | attrs;
			*e = sub | EPT_R | EPT_W | EPT_X;
		}
		t = *e & EPT_ADDR;
	}
	return (uint64_t *)(uintptr_t)t + ((pa >> 12) & 511);
}

bool vmx_ept_protect_4k(uint64_t pa, bool r, bool w, bool x, bool flush)
{
	uint64_t *e = entry_4k(pa);

	if (!e)
		return false;
	*e = (*e & ~(EPT_R | EPT_W | EPT_X)) | (r ? EPT_R : 0) | (w ? EPT_W : 0) | (x ? EPT_X : 0);
	if (flush) // only in VMX operation (before the first launch, INVEPT would #UD)
		vmx_ept_invalidate();
	return true;
}

void vmx_ept_invalidate(void)
{
	if (vmx_cfg.invept_single)
		vmx_invept(INVEPT_SINGLE, ept_eptp_val);
	else
		vmx_invept(INVEPT_ALL, 0);
	__atomic_fetch_add(&ept_invalidations, 1, __ATOMIC_RELAXED);
}

static uint64_t free_tree(uint64_t t, unsigned level)
{
	uint64_t n = 0;
	uint64_t *e = (uint64_t *)(uintptr_t)t;

	for (unsigned i = 0; level > 0 && i < 512; i++) {
		if ((e[i] & (EPT_R | EPT_X)) && !(e[i] & EPT_LARGE)) {
			n += free_tree(e[i] & EPT_ADDR, level - 1) + 1;
			e[i] = 0;
		}
	}
	return n;
}

// Batched: empty the root, one INVEPT, then forget every table below it (the
// region never hands pages back; the count is what the teardown released).
void vmx_ept_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	static uint64_t snapshot[512];
	uint64_t *root = (uint64_t *)(uintptr_t)ept_root;
	uint64_t before = ept_invalidations;

	if (!ept_root) {
		*pages_freed = *invalidations = 0;
		return;
	}
	for (unsigned i = 0; i < 512; i++) {
		snapshot[i] = root[i];
		__atomic_store_n(&root[i], 0, __ATOMIC_RELAXED);
	}
	vmx_ept_invalidate();
	uint64_t n = free_tree((uint64_t)(uintptr_t)snapshot, 3);
	ept_pages_live -= n;
	*pages_freed = n;
	*invalidations = ept_invalidations - before;
}

void vmx_ept_mm_counts(struct slat_mm_counts *out)
{
	*out = (struct slat_mm_counts){
	    .table_pages = ept_pages_live,
	    .table_pages_max = ept_pages_max,
	    .invalidations = __atomic_load_n(&ept_invalidations, __ATOMIC_RELAXED),
	    .cmos = 0,
	};
}
