// SPDX-License-Identifier: Apache-2.0
//
// Helpers of the nested shadow MMU tests (header only): an L1 VM over the
// hosted backend whose memory is a real buffer (memslots backed by it), an
// L1 "hypervisor" that builds EPT12 tables in that memory (its writes to
// write-tracked pages go through sh_emulate_write, like a trapped write), and
// shortcuts for faults and translations.
#ifndef SLAT_TESTS_SHADOW_TEST_H
#define SLAT_TESTS_SHADOW_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/arm64/fmt_s2.h"
#include "arch/host/host_be.h"
#include "arch/x86/fmt_x86.h"
#include "mm/s2.h"
#include "mm/shadow.h"
#include "mm_queries.h"

#define SHT_PAGE 4096ull

struct sht {
	struct host_be *be;
	struct s2_vm *vm;
	struct sh_mmu *m;
	const struct s2_fmt *f;
	uint8_t *mem; // L1 memory: L1 gpa 0 .. size
	uint64_t size;
	uint64_t next_table; // bump allocator of L1 table pages (gpa)
};

// L1 with `size` bytes of memory in slot 0 at gpa 0 (the first `table_area`
// bytes hold EPT12 tables), EPT 4-level, shadow MMU with `cfg` (may be NULL).
static inline void sht_init_fmt(struct sht *t, const struct s2_fmt *f, unsigned ia_bits,
				uint64_t size, struct sh_config *cfg)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->be = host_be_new();
	struct s2_vm_config vc = host_be_config(t->be, t->f);
	vc.ia_bits = ia_bits;
	assert_int_equal(s2_vm_create(&vc, &t->vm), 0);
	t->mem = aligned_alloc(SHT_PAGE, size);
	assert_non_null(t->mem);
	memset(t->mem, 0, size);
	t->size = size;
	t->next_table = SHT_PAGE; // gfn 0 left unused
	assert_int_equal(s2_slot_add(t->vm, 0, 0, 0, size, (uint64_t)(uintptr_t)t->mem, 0), 0);
	struct sh_config def = {.guest_pages = size / SHT_PAGE};
	assert_int_equal(sh_create(t->vm, cfg ? cfg : &def, &t->m), 0);
}

static inline void sht_init_cfg(struct sht *t, uint64_t size, struct sh_config *cfg)
{
	sht_init_fmt(t, &s2_fmt_ept4, 0, size, cfg);
}

static inline void sht_init(struct sht *t, uint64_t size)
{
	sht_init_cfg(t, size, NULL);
}

// Tears everything down and checks every page came back.
static inline void sht_fini(struct sht *t)
{
	sh_destroy(t->m);
	s2_vm_destroy(t->vm);
	assert_int_equal(host_be_free(t->be), 0);
	free(t->mem);
}

static inline uint64_t sht_read(struct sht *t, uint64_t gpa)
{
	uint64_t v;
	memcpy(&v, t->mem + gpa, 8);
	return v;
}

// L1 writes one entry of its memory: trapped and emulated when the page is
// write-tracked, a plain store otherwise.
static inline void sht_l1_write(struct sht *t, uint64_t gpa, uint64_t val)
{
	if (sh_gfn_tracked(t->m, 0, gpa / SHT_PAGE))
		assert_int_equal(sh_emulate_write(t->m, 0, gpa, val, 8), 0);
	else
		memcpy(t->mem + gpa, &val, 8);
}

static inline uint64_t sht_new_table(struct sht *t)
{
	uint64_t gpa = t->next_table;

	t->next_table += SHT_PAGE;
	assert_true(t->next_table <= t->size);
	for (uint64_t o = 0; o < SHT_PAGE; o += 8)
		sht_l1_write(t, gpa + o, 0);
	return gpa;
}

static inline unsigned sht_idx(uint64_t l2_gpa, unsigned level)
{
	return (unsigned)((l2_gpa >> (12 + 9 * level)) & 511);
}

// gpa of the L1 entry for l2_gpa at `level` below root_gpa (creating tables
// down to that level as needed).
static inline uint64_t sht_entry(struct sht *t, uint64_t root_gpa, uint64_t l2_gpa, unsigned level)
{
	uint64_t table = root_gpa;

	for (unsigned l = 3; l > level; l--) {
		uint64_t e_gpa = table + 8 * sht_idx(l2_gpa, l);
		uint64_t e = sht_read(t, e_gpa);

		if (!t->f->is_present(e)) {
			uint64_t nt = sht_new_table(t);

			e = t->f->make_table(nt);
			sht_l1_write(t, e_gpa, e);
		}
		table = s2_pte_addr(t->f, e);
	}
	return table + 8 * sht_idx(l2_gpa, level);
}

// L1 maps the L2 page l2_gpa to its page l1_gpa with `prot`.
static inline void sht_map(struct sht *t, uint64_t root_gpa, uint64_t l2_gpa, uint64_t l1_gpa,
			   unsigned prot)
{
	sht_l1_write(t, sht_entry(t, root_gpa, l2_gpa, 0),
		     t->f->make_leaf(l1_gpa, 0, prot, S2_MT_WB, 0));
}

// L2 touches l2_gpa: the shadow fault must map it.
static inline void sht_touch(struct sht *t, struct sh_page *root, uint64_t l2_gpa, unsigned access)
{
	struct sh_fault_info fi;
	assert_int_equal(sh_fault(t->m, root, l2_gpa, access, &fi), SH_FAULT_MAPPED);
}

static inline struct s2_xlate sht_xlate(struct sht *t, struct sh_page *root, uint64_t l2_gpa)
{
	struct s2_xlate x;
	sh_translate(t->m, root, l2_gpa, &x);
	return x;
}

static inline struct sh_stats sht_stats(struct sht *t)
{
	struct sh_stats s;
	sh_stats(t->m, &s);
	return s;
}

static inline uint64_t sht_flushes(struct sht *t)
{
	struct host_counts c;
	host_be_counts(t->be, &c);
	return c.inval_context;
}

// Host address L1's page l1_gpa is backed by.
static inline uint64_t sht_hpa(struct sht *t, uint64_t l1_gpa)
{
	return (uint64_t)(uintptr_t)t->mem + l1_gpa;
}

#endif
