// SPDX-License-Identifier: Apache-2.0
//
// The dirty bitmap of a logging slot (mm/dirty.c has the policy): a directory
// page of up to 512 bitmap pages of 32768 bits each, bit i for the slot's
// page i, 64 pages a word, least significant bit first (KVM_GET_DIRTY_LOG's
// layout). Marks are atomic ORs: faults run in parallel under the mmu lock
// for read. Below mm/slots.c (which allocates and frees bitmaps with slot
// records) and mm/dirty.c (which harvests them).
#include "core/mem.h"
#include "mm/s2_internal.h"

#define BITS_PER_PAGE (S2_PAGE_SIZE * 8)
#define DIR_ENTRIES   (S2_PAGE_SIZE / sizeof(uint64_t))
_Static_assert(S2_DIRTY_MAX_PAGES == DIR_ENTRIES * BITS_PER_PAGE, "one directory page");

static uint64_t bitmap_pages(uint64_t slot_pages)
{
	return (slot_pages + BITS_PER_PAGE - 1) / BITS_PER_PAGE;
}

void s2_dirty_free(struct s2_vm *vm, uint64_t dir, uint64_t slot_pages)
{
	const uint64_t *d = (const uint64_t *)(uintptr_t)dir;

	for (uint64_t i = 0; i < bitmap_pages(slot_pages); i++)
		if (d[i])
			s2_page_free(vm, d[i], 1, false);
	s2_page_free(vm, dir, 1, false);
}

uint64_t s2_dirty_alloc(struct s2_vm *vm, uint64_t slot_pages)
{
	uint64_t dir = s2_page_alloc(vm, 1, S2_PAGE_SIZE);

	if (!dir)
		return 0;
	memset((void *)(uintptr_t)dir, 0, S2_PAGE_SIZE);
	uint64_t *d = (uint64_t *)(uintptr_t)dir;
	for (uint64_t i = 0; i < bitmap_pages(slot_pages); i++) {
		d[i] = s2_page_alloc(vm, 1, S2_PAGE_SIZE);
		if (!d[i]) {
			s2_dirty_free(vm, dir, slot_pages); // all or nothing
			return 0;
		}
		memset((void *)(uintptr_t)d[i], 0, S2_PAGE_SIZE);
	}
	return dir;
}

uint64_t *s2_dirty_word(uint64_t dir, uint64_t page)
{
	const uint64_t *d = (const uint64_t *)(uintptr_t)dir;

	return (uint64_t *)(uintptr_t)d[page / BITS_PER_PAGE] + (page % BITS_PER_PAGE) / 64;
}

void s2_dirty_mark(struct s2_vm *vm, const struct s2_slot *sl, uint64_t gpa)
{
	uint64_t page = (gpa - sl->gpa) >> S2_PAGE_SHIFT, bit = 1ull << (page % 64);

	if (!(__atomic_fetch_or(s2_dirty_word(sl->dirty_dir, page), bit, __ATOMIC_RELAXED) & bit))
		S2_STAT_ADD(vm, dirty_marked, 1);
}
