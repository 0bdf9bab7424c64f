// SPDX-License-Identifier: Apache-2.0
//
// Shared helpers of the mm/ unit tests (header only): a VM over the hosted
// backend, a structural checksum of a tree, and translation shortcuts.
#ifndef SLAT_TESTS_MM_TEST_H
#define SLAT_TESTS_MM_TEST_H

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
#include "mm_queries.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

struct mmt {
	struct host_be *be;
	struct s2_vm *vm;
	struct s2_root *root;
};

static inline void mmt_init_caps(struct mmt *t, const struct s2_fmt *f, unsigned ia_bits,
				 unsigned caps)
{
	t->be = host_be_new();
	struct s2_vm_config cfg = host_be_config(t->be, f);
	cfg.ia_bits = ia_bits;
	cfg.caps = caps;
	assert_int_equal(s2_vm_create(&cfg, &t->vm), 0);
	assert_int_equal(s2_root_get(t->vm, (struct s2_role){0, 0}, &t->root), 0);
	host_tlb_load(t->be, t->vm, t->root);
}

static inline void mmt_init(struct mmt *t, const struct s2_fmt *f)
{
	mmt_init_caps(t, f, 0, f->caps);
}

// Destroys the VM and checks every page came back.
static inline void mmt_fini(struct mmt *t)
{
	host_tlb_unload(t->be, t->root);
	s2_vm_destroy(t->vm);
	assert_int_equal(host_be_free(t->be), 0);
}

static inline struct host_counts mmt_counts(struct mmt *t)
{
	struct host_counts c;
	host_be_counts(t->be, &c);
	return c;
}

static inline struct s2_xlate mmt_walk(struct mmt *t, uint64_t gpa)
{
	struct s2_xlate x;
	s2_translate(t->vm, t->root, gpa, &x);
	return x;
}

static inline struct s2_xlate mmt_tlb(struct mmt *t, uint64_t gpa)
{
	struct s2_xlate x;
	host_tlb_translate(t->be, t->vm, t->root, gpa, &x);
	return x;
}

static inline uint64_t mmt_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

// Checksum of every entry (and table address) reachable from a table.
static inline uint64_t mmt_sum_table(const struct s2_vm *vm, uint64_t pa, unsigned level,
				     unsigned n, uint64_t *tables)
{
	const struct s2_fmt *f = s2_vm_fmt(vm);
	const s2_pte_t *t = (const s2_pte_t *)(uintptr_t)pa;
	uint64_t h = pa;

	(*tables)++;
	for (unsigned i = 0; i < n; i++) {
		h = mmt_mix(h, t[i]);
		if (level > 0 && f->is_present(t[i]) && !f->is_leaf(t[i], level))
			h = mmt_mix(
			    h, mmt_sum_table(vm, s2_pte_addr(f, t[i]), level - 1, S2_PTES, tables));
	}
	return h;
}

static inline uint64_t mmt_sum(struct mmt *t, uint64_t *tables)
{
	const struct s2_geom *g = s2_vm_geom(t->vm);
	uint64_t n = 0;
	uint64_t h = mmt_sum_table(t->vm, s2_root_pa(t->root), g->root_level, g->root_entries, &n);

	if (tables)
		*tables = n;
	return h;
}

#endif
