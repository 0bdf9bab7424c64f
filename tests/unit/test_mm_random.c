// SPDX-License-Identifier: Apache-2.0
//
// Randomized differential test: a long seeded sequence of slot add / delete
// / move / flag changes, faults, and explicit map / unmap / protect, with
// injected allocation failures, yields and zap-mode switches, checked after
// every step against a trivial reference model of what each GPA translates
// to, through the software TLB (so a missing flush shows as a mismatch).
//
// Address space 0 is the slot world (faults fill it lazily: a page is either
// unmapped or maps exactly what its current slot says); address space 1 gets
// explicit maps (a page maps exactly what the model says).
#include <stdio.h>

#include "mm_test.h"

#define WIN	 (64 * MiB) // slot world window
#define XWIN	 (16 * MiB) // explicit-map window
#define XPAGES	 (XWIN / 4096)
#define NSLOTS	 12
#define HPA_BASE 0x1000000000ull

struct mslot {
	bool used;
	uint64_t gpa, size, hpa;
	unsigned flags;
};

struct xpage {
	bool mapped;
	uint64_t hpa;
	unsigned prot;
};

struct rt {
	struct mmt t;
	struct mmt tx; // explicit maps: a second VM (zap-all in t must not touch it)
	uint64_t rng;
	struct mslot slot[NSLOTS];
	struct xpage x[XPAGES];
	unsigned step;
};

static uint64_t rnd(struct rt *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static uint64_t rnd_below(struct rt *r, uint64_t n)
{
	return rnd(r) % n;
}

static const struct mslot *model_slot_at(struct rt *r, uint64_t gpa)
{
	for (int i = 0; i < NSLOTS; i++) {
		const struct mslot *s = &r->slot[i];

		if (s->used && gpa >= s->gpa && gpa < s->gpa + s->size)
			return s;
	}
	return NULL;
}

static bool model_overlaps(struct rt *r, uint64_t gpa, uint64_t size, int skip)
{
	for (int i = 0; i < NSLOTS; i++) {
		const struct mslot *s = &r->slot[i];

		if (i != skip && s->used && gpa < s->gpa + s->size && s->gpa < gpa + size)
			return true;
	}
	return false;
}

// The vCPU reloads its root when zap-all mode invalidated it.
static void reload(struct rt *r)
{
	if (!s2_root_is_invalid(r->t.root))
		return;
	r->t.be->fail_at = 0;
	host_tlb_unload(r->t.be, r->t.root);
	s2_root_put(r->t.vm, r->t.root);
	assert_int_equal(s2_root_get(r->t.vm, (struct s2_role){0, 0}, &r->t.root), 0);
	host_tlb_load(r->t.be, r->t.vm, r->t.root);
}

static void check_slot_page(struct rt *r, uint64_t gpa)
{
	struct s2_xlate x;
	const struct mslot *s = model_slot_at(r, gpa);

	host_tlb_translate(r->t.be, r->t.vm, r->t.root, gpa, &x);
	if (!x.mapped)
		return;
	if (!s) {
		struct s2_xlate w;
		s2_translate(r->t.vm, r->t.root, gpa, &w);
		fail_msg("step %u: gpa 0x%llx mapped with no slot (walk %d level %u)", r->step,
			 (unsigned long long)gpa, w.mapped, w.level);
	}
	assert_int_equal(x.hpa, s->hpa + (gpa - s->gpa));
	assert_int_equal(x.prot, s->flags & S2_SLOT_READONLY ? S2_PROT_R | S2_PROT_X : S2_PROT_RWX);
}

static void check_x_page(struct rt *r, uint64_t gpa)
{
	struct s2_xlate x;
	const struct xpage *m = &r->x[gpa / 4096];

	host_tlb_translate(r->tx.be, r->tx.vm, r->tx.root, gpa, &x);
	if (x.mapped != m->mapped) {
		struct s2_xlate w;
		s2_translate(r->tx.vm, r->tx.root, gpa, &w);
		fail_msg("step %u: gpa 0x%llx mapped %d (walk %d), model %d", r->step,
			 (unsigned long long)gpa, x.mapped, w.mapped, m->mapped);
	}
	if (m->mapped) {
		assert_int_equal(x.hpa, m->hpa);
		assert_int_equal(x.prot, m->prot);
	}
}

// A vCPU kicked by zap-all mode reloads its root (and so flushes) before it
// runs again: translations are checked through the current root.
static void check(struct rt *r, uint64_t lo, uint64_t size, bool full)
{
	reload(r);
	if (full) {
		for (uint64_t a = 0; a < WIN; a += 4096)
			check_slot_page(r, a);
		for (uint64_t a = 0; a < XWIN; a += 4096)
			check_x_page(r, a);
		assert_int_equal(host_tlb_stale(r->t.be), 0);
		assert_int_equal(host_tlb_stale(r->tx.be), 0);
		return;
	}
	for (int i = 0; i < 32; i++) {
		check_slot_page(r, rnd_below(r, WIN / 4096) * 4096);
		check_x_page(r, rnd_below(r, XPAGES) * 4096);
	}
	for (uint64_t a = lo; a < lo + size && a<WIN; a += size> 64 * 4096 ? size / 64 : 4096)
		check_slot_page(r, a & ~0xfffull);
}

static uint64_t rand_size(struct rt *r)
{
	static const uint64_t sizes[] = {4 * KiB, 64 * KiB, 2 * MiB, 4 * MiB, 6 * MiB + 8 * KiB};
	return sizes[rnd_below(r, 5)];
}

static uint64_t rand_hpa(struct rt *r)
{
	uint64_t hpa = HPA_BASE + rnd_below(r, 64) * 2 * MiB;
	return rnd_below(r, 3) ? hpa : hpa + rnd_below(r, 512) * 4096;
}

static void op_slot(struct rt *r, unsigned kind)
{
	int id = (int)rnd_below(r, NSLOTS);
	struct mslot *s = &r->slot[id];
	int want, got;

	if (getenv("MMT_TRACE"))
		fprintf(stderr,
			"%u: slot op %u id %d (used %d gpa %llx size %llx hpa %llx fl %u)\n",
			r->step, kind, id, s->used, (unsigned long long)s->gpa,
			(unsigned long long)s->size, (unsigned long long)s->hpa, s->flags);
	switch (kind) {
	case 0: { // add
		uint64_t size = rand_size(r);
		uint64_t gpa = rnd_below(r, WIN / (64 * KiB)) * 64 * KiB;
		uint64_t hpa = rand_hpa(r);
		unsigned flags = rnd_below(r, 4) == 0 ? S2_SLOT_READONLY : 0;

		if (rnd_below(r, 4) == 0)
			gpa = rnd_below(r, WIN / (2 * MiB)) * 2 * MiB; // room for 2M leaves
		if (gpa + size > WIN)
			gpa = WIN - size;
		want = s->used ? S2_E_EXIST : model_overlaps(r, gpa, size, -1) ? S2_E_OVERLAP : 0;
		got = s2_slot_add(r->t.vm, 0, (uint32_t)id, gpa, size, hpa, flags);
		if (got == S2_E_NOMEM)
			return;
		assert_int_equal(got, want);
		if (!got)
			*s = (struct mslot){true, gpa, size, hpa, flags};
		check(r, gpa, size, false);
		return;
	}
	case 1: // delete
		want = s->used ? 0 : S2_E_NOENT;
		assert_int_equal(s2_slot_delete(r->t.vm, 0, (uint32_t)id), want);
		if (!want)
			s->used = false;
		check(r, want ? 0 : s->gpa, want ? 0 : s->size, false);
		return;
	case 2: { // move
		uint64_t gpa = rnd_below(r, WIN / (64 * KiB)) * 64 * KiB, old = s->gpa;

		if (s->used && gpa + s->size > WIN)
			gpa = WIN - s->size;
		want = !s->used				     ? S2_E_NOENT
		       : model_overlaps(r, gpa, s->size, id) ? S2_E_OVERLAP
							     : 0;
		assert_int_equal(s2_slot_move(r->t.vm, 0, (uint32_t)id, gpa), want);
		if (!want)
			s->gpa = gpa;
		check(r, old, want ? 0 : s->size, false);
		return;
	}
	default: { // flags
		unsigned flags = s->flags ^ S2_SLOT_READONLY;

		want = s->used ? 0 : S2_E_NOENT;
		assert_int_equal(s2_slot_set_flags(r->t.vm, 0, (uint32_t)id, flags), want);
		if (!want)
			s->flags = flags;
		check(r, s->gpa, want ? 0 : s->size, false);
		return;
	}
	}
}

static void op_fault(struct rt *r)
{
	uint64_t gpa = rnd_below(r, WIN / 4096) * 4096;
	unsigned access = rnd_below(r, 2) ? S2_PROT_W : S2_PROT_R;
	const struct mslot *s = model_slot_at(r, gpa);
	struct s2_fault_info fi;
	int got = s2_fault(r->t.vm, r->t.root, gpa, access, &fi);

	if (getenv("MMT_TRACE"))
		fprintf(stderr, "%u: fault %llx acc %u -> %d level %u\n", r->step,
			(unsigned long long)gpa, access, got, fi.level);

	if (got == S2_E_NOMEM)
		return;
	if (!s)
		assert_int_equal(got, S2_FAULT_MMIO);
	else if ((access & S2_PROT_W) && (s->flags & S2_SLOT_READONLY))
		assert_int_equal(got, S2_E_PERM);
	else {
		assert_int_equal(got, S2_FAULT_MAPPED);
		struct s2_xlate x;
		host_tlb_translate(r->t.be, r->t.vm, r->t.root, gpa, &x);
		assert_true(x.mapped);
	}
	check(r, gpa, 4096, false);
}

static void op_explicit(struct rt *r, unsigned kind)
{
	uint64_t size = rand_size(r);
	uint64_t gpa = rnd_below(r, XPAGES) * 4096;
	unsigned prot = rnd_below(r, 2) ? S2_PROT_RWX : S2_PROT_R;
	uint64_t hpa = rand_hpa(r);
	int got;

	if (rnd_below(r, 3) == 0)
		gpa &= ~(2 * MiB - 1);
	if (gpa + size > XWIN)
		gpa = XWIN - size;
	if (kind == 0)
		got = s2_map(r->tx.vm, r->tx.root, gpa, size, hpa, prot, S2_MT_WB);
	else if (kind == 1)
		got = s2_unmap(r->tx.vm, r->tx.root, gpa, size);
	else
		got = s2_protect(r->tx.vm, r->tx.root, gpa, size, prot);
	if (getenv("MMT_TRACE"))
		fprintf(stderr, "%u: x%u gpa %llx size %llx hpa %llx prot %u -> %d\n", r->step,
			kind, (unsigned long long)gpa, (unsigned long long)size,
			(unsigned long long)hpa, prot, got);
	if (got == S2_E_NOMEM) {
		check(r, 0, 0, false); // unchanged
		return;
	}
	assert_int_equal(got, 0);
	for (uint64_t i = 0; i < size / 4096; i++) {
		struct xpage *m = &r->x[gpa / 4096 + i];

		if (kind == 0)
			*m = (struct xpage){true, hpa + i * 4096, prot};
		else if (kind == 1)
			m->mapped = false;
		else if (m->mapped)
			m->prot = prot;
	}
	for (uint64_t a = gpa; a < gpa + size; a += 4096)
		check_x_page(r, a);
	check(r, 0, 0, false);
}

static void run(const struct s2_fmt *f, unsigned ia, uint64_t seed, unsigned steps)
{
	struct rt *r = calloc(1, sizeof(*r));

	r->rng = seed;
	mmt_init_caps(&r->t, f, ia, f->caps);
	mmt_init_caps(&r->tx, f, ia, f->caps);
	for (r->step = 0; r->step < steps; r->step++) {
		unsigned k = (unsigned)rnd_below(r, 100);

		// Faults of the allocator and the scheduler, now and then.
		uint64_t fail = rnd_below(r, 8) == 0 ? 1 + rnd_below(r, 4) : 0;
		unsigned resched = rnd_below(r, 4) == 0 ? 1 + (unsigned)rnd_below(r, 3) : 0;
		r->t.be->fail_at = fail ? r->t.be->alloc_seq + fail : 0;
		r->tx.be->fail_at = fail ? r->tx.be->alloc_seq + fail : 0;
		r->t.be->resched_every = r->tx.be->resched_every = resched;
		if (k < 2 && getenv("MMT_TRACE"))
			fprintf(stderr, "%u: mode switch\n", r->step);
		if (k < 2)
			s2_vm_set_zap_mode(r->t.vm, rnd_below(r, 2) ? S2_ZAP_ALL : S2_ZAP_SLOT);
		else if (k < 30)
			op_slot(r, (unsigned)rnd_below(r, 4));
		else if (k < 70)
			op_fault(r);
		else
			op_explicit(r, (unsigned)rnd_below(r, 3));
		r->t.be->fail_at = 0;
		reload(r);
		if (getenv("MMT_TRACE") && host_tlb_stale(r->t.be))
			fprintf(stderr, "%u: STALE %u (mode k %u)\n", r->step,
				host_tlb_stale(r->t.be), k);
		if (r->step % 2000 == 1999)
			check(r, 0, 0, true);
	}
	r->t.be->fail_at = r->tx.be->fail_at = 0;
	r->t.be->resched_every = r->tx.be->resched_every = 0;
	check(r, 0, 0, true);
	struct host_counts c = mmt_counts(&r->t), cx = mmt_counts(&r->tx);
	assert_int_equal(c.stale_at_yield + cx.stale_at_yield, 0);
	assert_true(c.alloc_failures > 0 && c.yields > 0 && cx.alloc_failures > 0);
	mmt_fini(&r->t);
	mmt_fini(&r->tx);
	free(r);
}

static void test_random_ept(void **state)
{
	run(&s2_fmt_ept4, 48, 0x5eed0001, 6000);
}

static void test_random_npt(void **state)
{
	run(&s2_fmt_npt4, 48, 0x5eed0002, 6000);
}

static void test_random_arm64(void **state)
{
	run(&s2_fmt_arm64_4k, 40, 0x5eed0003, 6000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_ept),
	    cmocka_unit_test(test_random_npt),
	    cmocka_unit_test(test_random_arm64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
