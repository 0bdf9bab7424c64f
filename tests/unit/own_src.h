// SPDX-License-Identifier: Apache-2.0
//
// Test page source for core/own: a budget of pages the test "deposits", an
// optional failure injected at the k-th allocation, exact live/free counts.
// Pages are calloc'd and freed for real so that ASan sees any use after a
// page went back.
#ifndef SLAT_TESTS_UNIT_OWN_SRC_H
#define SLAT_TESTS_UNIT_OWN_SRC_H

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/own.h"

struct own_src {
	uint64_t budget;   // pages still available (a deposit adds to it)
	uint64_t live;	   // pages handed out and not yet freed
	uint64_t allocs;   // successful allocations
	int64_t fail_at;   // allocation number (counted from 0) that fails; -1: none
	uint64_t attempts; // allocation calls
};

static inline void *own_src_alloc(void *ctx)
{
	struct own_src *s = ctx;
	uint64_t n = __atomic_fetch_add(&s->attempts, 1, __ATOMIC_RELAXED);
	void *p;

	if ((int64_t)n == s->fail_at || !s->budget)
		return NULL;
	p = aligned_alloc(OWN_FRAME_SIZE, OWN_FRAME_SIZE);
	if (!p)
		return NULL;
	for (unsigned i = 0; i < OWN_FRAME_SIZE / 8; i++)
		((uint64_t *)p)[i] = 0;
	s->budget--;
	s->live++;
	s->allocs++;
	return p;
}

static inline void own_src_free(void *ctx, void *page)
{
	struct own_src *s = ctx;

	free(page);
	s->budget++;
	s->live--;
}

static inline void own_src_relax(void)
{
	sched_yield();
}

static inline struct own_page_src own_src_of(struct own_src *s)
{
	struct own_page_src p = {own_src_alloc, own_src_free, s, own_src_relax};

	s->fail_at = -1;
	return p;
}

#endif
