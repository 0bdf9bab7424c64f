// SPDX-License-Identifier: Apache-2.0
//
// TRANSITIONAL: the primary VM's nested page tables, built here until the
// mm/ engine (AMD64 NPT format, eager identity map of ranges, batched
// teardown) is usable from slat.efi. svm_npt_build() and svm_npt_teardown()
// are the only two functions that change then; table pages, invalidation and
// counters already go through npt_backend.c.
//
// The map: guest-physical == host-physical over [0, 2^min(phys_bits, 40)),
// the largest pages alignment allows (1 GiB when the CPU has them, else
// 2 MiB), except
//   - Slat's region: not present (a guest access exits as a nested page
//     fault and the guest gets #GP, see docs/x86-exits.md);
//   - the local APIC page: present, read-only, so every write exits to the
//     INIT/SIPI mailbox (arch/x86/apic_mailbox.c).
// Every entry has U/S set (nested walks are user accesses) and A/D preset.
// Memory types come from the guest's PAT and the MTRRs (leaves use PAT
// index 0, write-back, which lets the guest's type win).
#include "arch/x86/svm/svm.h"
#include "core/log.h"

#define NPT_P	 (1ull << 0)
#define NPT_RW	 (1ull << 1)
#define NPT_US	 (1ull << 2)
#define NPT_A	 (1ull << 5)
#define NPT_D	 (1ull << 6)
#define NPT_PS	 (1ull << 7)
#define NPT_ADDR 0x000ffffffffff000ull

#define NPT_MAX_PHYS_BITS 40 // 1 TiB: two PDPT pages of 1 GiB leaves

struct npt_ctx {
	const struct region *slat;
	uint64_t apic;
	bool gb_pages;
	struct svm_npt_stats *st;
};

static uint64_t npt_root;

static uint64_t level_size(unsigned level)
{
	return 1ull << (12 + 9 * (level - 1));
}

// Fills `table` (a level-`level` table covering `base`) up to `top`.
static bool fill(struct npt_ctx *c, uint64_t *table, unsigned level, uint64_t base, uint64_t top)
{
	uint64_t size = level_size(level);

	for (unsigned i = 0; i < 512; i++) {
		uint64_t a = base + i * size;
		if (a >= top)
			break;
		if (a >= c->slat->base && a + size <= c->slat->base + c->slat->size)
			continue; // inside Slat's region: not present
		bool split = region_overlaps(c->slat, a, size) ||
			     (c->apic >= a && c->apic < a + size && level > 1) || level == 4 ||
			     (level == 3 && !c->gb_pages);
		if (!split) {
			uint64_t e = a | NPT_P | NPT_RW | NPT_US | NPT_A | NPT_D;
			if (level > 1)
				e |= NPT_PS;
			if (level == 1 && a == c->apic)
				e &= ~NPT_RW;
			table[i] = e;
			if (level == 3)
				c->st->leaves_1g++;
			else if (level == 2)
				c->st->leaves_2m++;
			else
				c->st->leaves_4k++;
			continue;
		}
		uint64_t child = svm_mm_page_alloc();
		if (!child)
			return false;
		table[i] = child | NPT_P | NPT_RW | NPT_US | NPT_A;
		uint64_t end = a + size < top ? a + size : top;
		if (!fill(c, (uint64_t *)(uintptr_t)child, level - 1, a, end))
			return false;
	}
	return true;
}

bool svm_npt_build(const struct region *slat, uint64_t apic_page, unsigned phys_bits, bool gb_pages,
		   uint64_t *root, struct svm_npt_stats *st)
{
	unsigned bits = phys_bits < NPT_MAX_PHYS_BITS ? phys_bits : NPT_MAX_PHYS_BITS;
	struct npt_ctx c = {.slat = slat, .apic = apic_page, .gb_pages = gb_pages, .st = st};

	*st = (struct svm_npt_stats){.top = 1ull << bits};
	npt_root = svm_mm_page_alloc();
	if (!npt_root || !fill(&c, (uint64_t *)(uintptr_t)npt_root, 4, 0, st->top)) {
		log_err("svm: out of Slat memory building the NPT\n");
		return false;
	}
	*root = npt_root;
	return true;
}

static uint64_t free_tables(uint64_t *table, unsigned level)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < 512 && level > 1; i++) {
		uint64_t e = table[i];
		if ((e & NPT_P) && !(e & NPT_PS) && level > 1)
			n += free_tables((uint64_t *)(uintptr_t)(e & NPT_ADDR), level - 1);
	}
	svm_mm_page_free((uint64_t)(uintptr_t)table);
	return n + 1;
}

// Batched teardown: detach everything under the root, one invalidation for
// every vCPU, then free the tables with no per-entry invalidation.
void svm_npt_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	uint64_t *root = (uint64_t *)(uintptr_t)npt_root;
	uint64_t detached[512];
	struct slat_mm_counts before, after;

	*pages_freed = 0;
	*invalidations = 0;
	if (!root)
		return;
	svm_mm_counts(&before);
	for (unsigned i = 0; i < 512; i++) {
		detached[i] = root[i];
		__atomic_store_n(&root[i], 0, __ATOMIC_RELEASE);
	}
	svm_mm_flush_all_cpus();
	for (unsigned i = 0; i < 512; i++) {
		if (detached[i] & NPT_P)
			*pages_freed +=
			    free_tables((uint64_t *)(uintptr_t)(detached[i] & NPT_ADDR), 3);
	}
	svm_mm_counts(&after);
	*invalidations = after.invalidations - before.invalidations;
}
