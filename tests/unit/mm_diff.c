// SPDX-License-Identifier: Apache-2.0
//
// Randomized differential test of the SLAT engine against a reference model
// (see mm_diff.h). Two VMs of one format:
// - `t`, the slot world (address space 0): faults fill it lazily. The model
//   keeps, for every page of the window, the level of the leaf that maps it
//   or "unmapped": a fault that answers MAPPED at level L maps exactly its
//   aligned L-sized block (which must lie inside its slot); a slot delete,
//   move or flag change in slot mode unmaps exactly the leaves that intersect
//   the old range and leaves every other leaf in place (I1.1, I1.3); in
//   zap-all mode, or when the MMIO generation wraps (I1.4), everything goes.
//   A slot is contiguous (one hpa) or a frame list (s2_backing, as Slat's
//   secondaries have): its pages gain frames (FILL, in runs that are one
//   aligned huge page or scattered) and lose them (DROP: the page zap). The
//   model decides the leaf size a fault must map, the block decision: the
//   largest aligned block inside the slot whose frames are all there, in one
//   run, aligned (a 2 MiB block whose 4K leaves are mapped collapses).
// - `tx`, explicit maps: each page maps exactly what the last map said.
// Every check is two-sided through the software TLB (a missing flush shows
// as a stale hit): a page the model maps must translate to the model's
// address, permission and leaf level; a page it does not map must not
// translate. After each step every page the step touched is checked through
// the TLB; after a slot update every leaf of the slot world's tree is
// compared with the model (so a leaf that should have stayed and is gone
// fails as surely as one that stayed); every 2000 steps both trees, and at
// the end of a seeded run every page of both windows through the TLB.
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arm64/fmt_s2.h"
#include "arch/host/host_be.h"
#include "arch/x86/fmt_x86.h"
#include "mm/s2.h"
#include "mm_diff.h"
#include "mm_queries.h"

#define KiB		 1024ull
#define MiB		 (1024ull * KiB)
#define WIN		 (64 * MiB) // slot world window
#define WPAGES		 (WIN / 4096)
#define XWIN		 (16 * MiB) // explicit-map window
#define XPAGES		 (XWIN / 4096)
#define NSLOTS		 12
#define HPA_BASE	 0x1000000000ull
#define UNMAPPED	 0xff
#define FULL_CHECK_EVERY 2000
#define SLOT_MAX_PAGES	 1538 // the largest rand_size, in pages
#define PFN_ABSENT	 (~0ull)

struct dslot {
	bool used;
	uint64_t gpa, size, hpa;
	unsigned flags;
	bool backed; // a frame list (pfn[] of its dback), else contiguous from hpa
};

// A frame-list slot's backing: the engine reads pfn[] through it.
struct dback {
	struct s2_backing b;
	uint64_t run; // page i's frame when a fill gives the slot's run: run + i * 4K
	uint64_t pfn[SLOT_MAX_PAGES];
};

struct xpage {
	bool mapped;
	uint64_t hpa;
	unsigned prot;
};

struct dvm {
	struct host_be *be;
	struct s2_vm *vm;
	struct s2_root *root;
};

struct drun {
	const struct mm_diff_opts *o;
	const struct s2_fmt *fmt;
	unsigned ia_bits, gen_bits;
	struct dvm t, tx;
	enum s2_zap_mode mode;
	uint64_t rng, step;
	size_t pos; // next byte of o->data
	bool ended; // o->data used up
	bool trace; // MMT_TRACE set
	struct dslot slot[NSLOTS];
	struct dback back[NSLOTS];
	uint64_t backed_blocks, absent_faults; // coverage of the frame-list cases
	uint64_t hot;			       // a page the last fill or drop changed
	uint8_t lvl[WPAGES]; // slot world: level of the leaf mapping each page
	struct xpage x[XPAGES];
	jmp_buf fail;
	char *msg;
	size_t msg_len;
};

const char *const mm_diff_fmt_names[4] = {"ept4", "ept5", "npt4", "arm64"};

const struct s2_fmt *mm_diff_fmt(const char *name, unsigned *ia_bits)
{
	static const struct s2_fmt *const fmts[4] = {&s2_fmt_ept4, &s2_fmt_ept5, &s2_fmt_npt4,
						     &s2_fmt_arm64_4k};
	static const unsigned ia[4] = {48, 57, 48, 40};

	for (unsigned i = 0; i < 4; i++) {
		if (name && !strcmp(name, mm_diff_fmt_names[i])) {
			*ia_bits = ia[i];
			return fmts[i];
		}
	}
	return NULL;
}

// ---- failure reporting -----------------------------------------------------------------

__attribute__((noreturn, format(printf, 2, 3))) static void diff_fail(struct drun *r,
								      const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (r->o->data)
		n = (size_t)snprintf(r->msg, r->msg_len,
				     "mm_diff %s (fuzzer input) step %llu: ", r->o->fmt_name,
				     (unsigned long long)r->step);
	else
		n = (size_t)snprintf(r->msg, r->msg_len,
				     "mm_diff %s seed 0x%llx step %llu: ", r->o->fmt_name,
				     (unsigned long long)r->o->seed, (unsigned long long)r->step);
	if (n < r->msg_len) {
		va_start(ap, fmt);
		n += (size_t)vsnprintf(r->msg + n, r->msg_len - n, fmt, ap);
		va_end(ap);
	}
	if (n < r->msg_len && !r->o->data)
		snprintf(r->msg + n, r->msg_len - n,
			 "\n  replay: build/hosted/asan/bin/test_mm_random --fmt %s --seed 0x%llx "
			 "--ops %llu (MMT_TRACE=1 to trace)",
			 r->o->fmt_name, (unsigned long long)r->o->seed,
			 (unsigned long long)r->step + 1);
	longjmp(r->fail, 1);
}

#define DIFF_EXPECT_EQ(r, got, want, what)                                                         \
	do {                                                                                       \
		long long g_ = (long long)(got), w_ = (long long)(want);                           \
		if (g_ != w_)                                                                      \
			diff_fail(r, "%s: engine %lld (0x%llx), model %lld (0x%llx)", what, g_,    \
				  (unsigned long long)g_, w_, (unsigned long long)w_);             \
	} while (0)

// ---- the operation source: a seed or the fuzzer's bytes ---------------------------------

static uint64_t rnd(struct drun *r)
{
	if (r->o->data) {
		uint64_t v = 0;

		for (unsigned i = 0; i < 2; i++) {
			if (r->pos < r->o->len)
				v |= (uint64_t)r->o->data[r->pos++] << (8 * i);
			else
				r->ended = true;
		}
		return v;
	}
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static uint64_t rnd_below(struct drun *r, uint64_t n)
{
	return rnd(r) % n;
}

// ---- the model -------------------------------------------------------------------------

static const struct dslot *model_slot_at(const struct drun *r, uint64_t gpa)
{
	for (int i = 0; i < NSLOTS; i++) {
		const struct dslot *s = &r->slot[i];

		if (s->used && gpa >= s->gpa && gpa < s->gpa + s->size)
			return s;
	}
	return NULL;
}

static bool model_overlaps(const struct drun *r, uint64_t gpa, uint64_t size, int skip)
{
	for (int i = 0; i < NSLOTS; i++) {
		const struct dslot *s = &r->slot[i];

		if (i != skip && s->used && gpa < s->gpa + s->size && s->gpa < gpa + size)
			return true;
	}
	return false;
}

static uint64_t back_hpa(const struct s2_backing *b, uint64_t i)
{
	uint64_t pfn = ((const struct dback *)b)->pfn[i];

	return pfn == PFN_ABSENT ? S2_HPA_ABSENT : pfn << 12;
}

static bool back_contiguous(const struct s2_backing *b, uint64_t i, uint64_t n)
{
	const uint64_t *pfn = ((const struct dback *)b)->pfn;

	for (uint64_t k = 0; k < n; k++)
		if (pfn[i + k] == PFN_ABSENT || pfn[i + k] != pfn[i] + k)
			return false;
	return true;
}

static const struct dback *slot_back(const struct drun *r, const struct dslot *s)
{
	return &r->back[s - r->slot];
}

// The model's frame of slot page `gpa` (S2_HPA_ABSENT: none).
static uint64_t model_page_hpa(const struct drun *r, const struct dslot *s, uint64_t gpa)
{
	if (!s->backed)
		return s->hpa + (gpa - s->gpa);
	return back_hpa(&slot_back(r, s)->b, (gpa - s->gpa) / 4096);
}

// The block decision: the leaf a fault at `gpa` must map (2M at most: the
// window holds no 1G block).
static unsigned model_level(const struct drun *r, const struct dslot *s, uint64_t gpa)
{
	uint64_t base = gpa & ~(2 * MiB - 1), first = (base - s->gpa) / 4096;

	if (base < s->gpa || base + 2 * MiB > s->gpa + s->size)
		return 0;
	if (!s->backed)
		return (s->hpa - s->gpa) & (2 * MiB - 1) ? 0 : 1;
	const struct dback *d = slot_back(r, s);
	return back_contiguous(&d->b, first, 512) && !(d->pfn[first] & 511) ? 1 : 0;
}

static unsigned slot_prot(const struct dslot *s)
{
	return s->flags & S2_SLOT_READONLY ? S2_PROT_R | S2_PROT_X : S2_PROT_RWX;
}

// A fault mapped `gpa` with a leaf of `level`: its whole aligned block, which
// must lie inside the faulting page's slot.
static void model_map_leaf(struct drun *r, uint64_t gpa, unsigned level, const struct dslot *s)
{
	uint64_t size = s2_level_size(level), base = gpa & ~(size - 1);

	if (level > 2 || base < s->gpa || base + size > s->gpa + s->size)
		diff_fail(r,
			  "fault at 0x%llx mapped a level-%u leaf [0x%llx, 0x%llx) outside its "
			  "slot [0x%llx, 0x%llx)",
			  (unsigned long long)gpa, level, (unsigned long long)base,
			  (unsigned long long)(base + size), (unsigned long long)s->gpa,
			  (unsigned long long)(s->gpa + s->size));
	memset(&r->lvl[base / 4096], (int)level, size / 4096);
}

// Slot mode: whole leaves that intersect [lo, hi) go, nothing else.
static void model_zap_range(struct drun *r, uint64_t lo, uint64_t hi)
{
	for (uint64_t a = lo; a < hi && a < WIN; a += 4096) {
		uint8_t l = r->lvl[a / 4096];

		if (l != UNMAPPED) {
			uint64_t size = s2_level_size(l);

			memset(&r->lvl[(a & ~(size - 1)) / 4096], UNMAPPED, size / 4096);
		}
	}
}

static void model_zap_all(struct drun *r)
{
	memset(r->lvl, UNMAPPED, sizeof(r->lvl));
}

// ---- checks (two-sided, through the software TLB) ----------------------------------------

static void check_slot_page(struct drun *r, uint64_t gpa)
{
	struct s2_xlate x;
	uint8_t l = r->lvl[gpa / 4096];
	const struct dslot *s = model_slot_at(r, gpa);

	host_tlb_translate(r->t.be, r->t.vm, r->t.root, gpa, &x);
	if (l == UNMAPPED) {
		if (x.mapped)
			diff_fail(r,
				  "gpa 0x%llx is mapped (level %u, hpa 0x%llx), the model has it "
				  "unmapped",
				  (unsigned long long)gpa, x.level, (unsigned long long)x.hpa);
		return;
	}
	if (!s)
		diff_fail(r, "model bug: gpa 0x%llx mapped with no slot", (unsigned long long)gpa);
	if (!x.mapped)
		diff_fail(r,
			  "gpa 0x%llx is not mapped, the model maps it (level %u leaf of slot "
			  "[0x%llx, 0x%llx))",
			  (unsigned long long)gpa, l, (unsigned long long)s->gpa,
			  (unsigned long long)(s->gpa + s->size));
	DIFF_EXPECT_EQ(r, x.hpa, model_page_hpa(r, s, gpa), "slot page hpa");
	DIFF_EXPECT_EQ(r, x.prot, slot_prot(s), "slot page prot");
	DIFF_EXPECT_EQ(r, x.level, l, "slot page leaf level");
}

static void check_slot_range(struct drun *r, uint64_t lo, uint64_t size)
{
	for (uint64_t a = lo & ~0xfffull; a < lo + size && a < WIN; a += 4096)
		check_slot_page(r, a);
}

static void check_x_page(struct drun *r, uint64_t gpa)
{
	struct s2_xlate x;
	const struct xpage *m = &r->x[gpa / 4096];

	host_tlb_translate(r->tx.be, r->tx.vm, r->tx.root, gpa, &x);
	if (x.mapped != m->mapped)
		diff_fail(r, "explicit gpa 0x%llx: engine mapped %d, model %d",
			  (unsigned long long)gpa, x.mapped, m->mapped);
	if (m->mapped) {
		DIFF_EXPECT_EQ(r, x.hpa, m->hpa, "explicit page hpa");
		DIFF_EXPECT_EQ(r, x.prot, m->prot, "explicit page prot");
	}
}

static void check_x_range(struct drun *r, uint64_t lo, uint64_t size)
{
	for (uint64_t a = lo; a < lo + size; a += 4096)
		check_x_page(r, a);
}

// A vCPU kicked by zap-all mode reloads its root (and so flushes) before it
// runs again: translations are checked through the current root.
static void reload(struct drun *r)
{
	if (!s2_root_is_invalid(r->t.root))
		return;
	r->t.be->fail_at = 0;
	host_tlb_unload(r->t.be, r->t.root);
	s2_root_put(r->t.vm, r->t.root);
	if (s2_root_get(r->t.vm, (struct s2_role){0, 0}, &r->t.root))
		diff_fail(r, "root reload failed");
	host_tlb_load(r->t.be, r->t.vm, r->t.root);
}

// ---- whole-tree comparison ------------------------------------------------------------------
//
// Every leaf of the tree must be one of the model's, with the model's level,
// address and permission, and the tree must map as many pages as the model:
// so the two map exactly the same pages. With no stale TLB entry
// (host_tlb_stale, every 2000 steps and at the end) the TLB agrees too.

struct leaf_cmp {
	struct drun *r;
	bool slot_world;
	uint64_t pages;
};

static void compare_slot_leaf(struct drun *r, uint64_t gpa, unsigned level,
			      const struct s2_xlate *x)
{
	uint64_t size = s2_level_size(level);
	const struct dslot *s = model_slot_at(r, gpa);

	if (gpa + size > WIN)
		diff_fail(r, "a level-%u leaf maps 0x%llx, outside the slot window", level,
			  (unsigned long long)gpa);
	for (uint64_t p = gpa / 4096; p < (gpa + size) / 4096; p++) {
		if (r->lvl[p] != level)
			diff_fail(r, "a level-%u leaf maps gpa 0x%llx, the model has %s (level %u)",
				  level, (unsigned long long)p * 4096,
				  r->lvl[p] == UNMAPPED ? "it unmapped" : "another leaf",
				  r->lvl[p]);
	}
	if (!s)
		diff_fail(r, "model bug: leaf at 0x%llx with no slot", (unsigned long long)gpa);
	DIFF_EXPECT_EQ(r, x->hpa, model_page_hpa(r, s, gpa), "slot leaf hpa");
	DIFF_EXPECT_EQ(r, x->prot, slot_prot(s), "slot leaf prot");
}

static void compare_x_leaf(struct drun *r, uint64_t gpa, unsigned level, const struct s2_xlate *x)
{
	uint64_t size = s2_level_size(level);

	if (gpa + size > XWIN)
		diff_fail(r, "a level-%u leaf maps 0x%llx, outside the explicit window", level,
			  (unsigned long long)gpa);
	for (uint64_t off = 0; off < size; off += 4096) {
		const struct xpage *m = &r->x[(gpa + off) / 4096];

		if (!m->mapped)
			diff_fail(r,
				  "a level-%u leaf maps explicit gpa 0x%llx, the model has it "
				  "unmapped",
				  level, (unsigned long long)(gpa + off));
		DIFF_EXPECT_EQ(r, x->hpa + off, m->hpa, "explicit leaf hpa");
		DIFF_EXPECT_EQ(r, x->prot, m->prot, "explicit leaf prot");
	}
}

// Decodes the leaf itself (one translation per leaf would take an epoch
// section each: the per-page checks already go through translation).
static int compare_leaf(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind, void *ctx)
{
	struct leaf_cmp *c = ctx;
	const struct s2_fmt *f = c->r->fmt;
	struct s2_xlate x = {.hpa = s2_pte_addr(f, e->old), .prot = f->leaf_prot(e->old)};

	if (c->slot_world)
		compare_slot_leaf(c->r, e->addr, e->level, &x);
	else
		compare_x_leaf(c->r, e->addr, e->level, &x);
	c->pages += s2_level_size(e->level) / 4096;
	return 0;
}

static uint64_t model_pages(const struct drun *r, bool slot_world)
{
	uint64_t n = 0;

	for (uint64_t p = 0; p < (slot_world ? WPAGES : XPAGES); p++)
		n += slot_world ? r->lvl[p] != UNMAPPED : r->x[p].mapped;
	return n;
}

static void compare_leaves(struct drun *r, bool slot_world)
{
	struct dvm *d = slot_world ? &r->t : &r->tx;
	struct leaf_cmp c = {.r = r, .slot_world = slot_world};

	s2_walk(d->vm, d->root, 0, ~0ull, 0, S2_WALK_LEAF, compare_leaf, &c);
	DIFF_EXPECT_EQ(r, c.pages, model_pages(r, slot_world),
		       slot_world ? "pages mapped (slot world)" : "pages mapped (explicit maps)");
}

static void check_all(struct drun *r)
{
	reload(r);
	compare_leaves(r, true);
	compare_leaves(r, false);
	DIFF_EXPECT_EQ(r, host_tlb_stale(r->t.be), 0, "stale TLB entries (slot world)");
	DIFF_EXPECT_EQ(r, host_tlb_stale(r->tx.be), 0, "stale TLB entries (explicit maps)");
}

// At the end of a seeded run: every page of both windows through the TLB.
static void check_every_page(struct drun *r)
{
	check_slot_range(r, 0, WIN);
	check_x_range(r, 0, XWIN);
}

// ---- operations ----------------------------------------------------------------------------

static uint64_t rand_size(struct drun *r)
{
	static const uint64_t sizes[] = {4 * KiB, 64 * KiB, 2 * MiB, 4 * MiB, 6 * MiB + 8 * KiB};
	return sizes[rnd_below(r, 5)];
}

static uint64_t rand_hpa(struct drun *r)
{
	uint64_t hpa = HPA_BASE + rnd_below(r, 64) * 2 * MiB;
	return rnd_below(r, 3) ? hpa : hpa + rnd_below(r, 512) * 4096;
}

static uint64_t rand_slot_gpa(struct drun *r)
{
	return rnd_below(r, WIN / (64 * KiB)) * 64 * KiB;
}

static void trace_slot(struct drun *r, unsigned kind, int id)
{
	const struct dslot *s = &r->slot[id];

	if (r->trace)
		fprintf(stderr,
			"%llu: slot op %u id %d (used %d gpa %llx size %llx hpa %llx fl %u)\n",
			(unsigned long long)r->step, kind, id, s->used, (unsigned long long)s->gpa,
			(unsigned long long)s->size, (unsigned long long)s->hpa, s->flags);
}

static int slot_add(struct drun *r, int id, struct dslot *s)
{
	uint64_t size = rand_size(r), gpa = rand_slot_gpa(r), hpa = rand_hpa(r);
	unsigned flags = rnd_below(r, 4) == 0 ? S2_SLOT_READONLY : 0;
	int want, got;

	if (rnd_below(r, 4) == 0)
		gpa = rnd_below(r, WIN / (2 * MiB)) * 2 * MiB; // room for 2M leaves
	if (gpa + size > WIN)
		gpa = WIN - size;
	want = s->used ? S2_E_EXIST : model_overlaps(r, gpa, size, -1) ? S2_E_OVERLAP : 0;
	bool backed = rnd_below(r, 2) == 0;
	if (backed) {
		struct dback *d = &r->back[id];

		if (rnd_below(r, 3) == 0)
			gpa = rnd_below(r, WIN / (2 * MiB)) * 2 * MiB; // more room for blocks
		if (gpa + size > WIN)
			gpa = WIN - size;
		want = s->used ? S2_E_EXIST : model_overlaps(r, gpa, size, -1) ? S2_E_OVERLAP : 0;
		d->b = (struct s2_backing){back_hpa, back_contiguous, 1};
		if (!s->used) { // a live slot's frames stay as they are
			// Its huge pages: each block's frames one aligned run
			// (now and then off by the slot's hpa offset).
			d->run = rnd_below(r, 4) ? (hpa & ~(2 * MiB - 1)) + gpa : hpa;
			for (uint64_t i = 0; i < size / 4096; i++)
				d->pfn[i] = PFN_ABSENT; // a lazy slot: frames come with fills
		}
		got = s2_slot_add_backed(r->t.vm, 0, (uint32_t)id, gpa, size, &d->b, flags);
	} else {
		got = s2_slot_add(r->t.vm, 0, (uint32_t)id, gpa, size, hpa, flags);
	}
	if (got == S2_E_NOMEM)
		return got;
	DIFF_EXPECT_EQ(r, got, want, "slot add result");
	if (!got)
		*s = (struct dslot){true, gpa, size, hpa, flags, backed};
	return got;
}

static int slot_move(struct drun *r, int id, struct dslot *s)
{
	uint64_t gpa = rand_slot_gpa(r);
	int want;

	if (s->used && gpa + s->size > WIN)
		gpa = WIN - s->size;
	want = !s->used ? S2_E_NOENT : model_overlaps(r, gpa, s->size, id) ? S2_E_OVERLAP : 0;
	int got = s2_slot_move(r->t.vm, 0, (uint32_t)id, gpa);

	if (got == S2_E_NOMEM)
		return got;
	DIFF_EXPECT_EQ(r, got, want, "slot move result");
	if (!want)
		s->gpa = gpa;
	return want;
}

// Applies what a successful update that zaps [lo, lo + size) does.
static void model_slot_zap(struct drun *r, uint64_t lo, uint64_t size)
{
	if (r->mode == S2_ZAP_ALL)
		model_zap_all(r);
	else
		model_zap_range(r, lo, lo + size);
}

// The MMIO generation kept in markers wrapped during this update: the engine
// zaps everything once (I1.4).
static bool gen_wrapped(const struct drun *r, uint64_t g0, uint64_t g1)
{
	uint64_t mask = (1ull << r->gen_bits) - 1;

	return r->gen_bits && g1 != g0 && (g1 & mask) < ((g1 - 2) & mask);
}

static void op_slot(struct drun *r, unsigned kind)
{
	int id = (int)rnd_below(r, NSLOTS);
	// A failed allocation (S2_E_NOMEM) changes nothing: no model change.
	struct dslot *s = &r->slot[id];
	struct dslot old = *s;
	uint64_t g0 = s2_slots_generation(r->t.vm);
	int got;

	trace_slot(r, kind, id);
	switch (kind) {
	case 0:
		got = slot_add(r, id, s); // adds zap nothing
		break;
	case 1:
		got = s2_slot_delete(r->t.vm, 0, (uint32_t)id);
		if (got != S2_E_NOMEM)
			DIFF_EXPECT_EQ(r, got, s->used ? 0 : S2_E_NOENT, "slot delete result");
		s->used = got ? s->used : false;
		break;
	case 2:
		got = slot_move(r, id, s);
		break;
	default:
		got = s2_slot_set_flags(r->t.vm, 0, (uint32_t)id, s->flags ^ S2_SLOT_READONLY);
		if (got != S2_E_NOMEM)
			DIFF_EXPECT_EQ(r, got, s->used ? 0 : S2_E_NOENT, "slot flags result");
		s->flags ^= got ? 0 : S2_SLOT_READONLY;
		break;
	}
	if (!got && kind != 0)
		model_slot_zap(r, old.gpa, old.size);
	if (gen_wrapped(r, g0, s2_slots_generation(r->t.vm)))
		model_zap_all(r);
	reload(r);
	// Every page the update touched, and every leaf of the tree.
	if (old.used)
		check_slot_range(r, old.gpa, old.size);
	if (s->used)
		check_slot_range(r, s->gpa, s->size);
	compare_leaves(r, true);
}

// Faults land anywhere in the window, but mostly on a slot, and often on its
// first or last page (the edges a zap of the wrong range gets wrong).
static uint64_t rand_fault_gpa(struct drun *r)
{
	const struct dslot *s = &r->slot[rnd_below(r, NSLOTS)];
	unsigned pick = (unsigned)rnd_below(r, 4);

	if (!s->used || pick == 0)
		return r->hot && rnd_below(r, 2) ? r->hot : rnd_below(r, WPAGES) * 4096;
	if (pick == 1)
		return s->gpa;
	if (pick == 2)
		return s->gpa + s->size - 4096;
	return s->gpa + rnd_below(r, s->size / 4096) * 4096;
}

static void fault_at(struct drun *r, uint64_t gpa)
{
	unsigned access = rnd_below(r, 2) ? S2_PROT_W : S2_PROT_R;
	const struct dslot *s = model_slot_at(r, gpa);
	struct s2_fault_info fi = {0};
	int got = s2_fault(r->t.vm, r->t.root, gpa, access, &fi);

	if (r->trace)
		fprintf(stderr, "%llu: fault %llx acc %u -> %d level %u\n",
			(unsigned long long)r->step, (unsigned long long)gpa, access, got,
			fi.level);
	if (got == S2_E_NOMEM) {
		check_slot_page(r, gpa); // unchanged
		return;
	}
	if (!s) {
		DIFF_EXPECT_EQ(r, got, S2_FAULT_MMIO, "fault result (no slot)");
	} else if ((access & S2_PROT_W) && (s->flags & S2_SLOT_READONLY)) {
		DIFF_EXPECT_EQ(r, got, S2_E_PERM, "fault result (write to read-only)");
	} else if (model_page_hpa(r, s, gpa) == S2_HPA_ABSENT) {
		DIFF_EXPECT_EQ(r, got, S2_FAULT_ABSENT, "fault result (page without a frame)");
		r->absent_faults++;
	} else {
		DIFF_EXPECT_EQ(r, got, S2_FAULT_MAPPED, "fault result");
		DIFF_EXPECT_EQ(r, fi.level, model_level(r, s, gpa), "fault leaf level");
		r->backed_blocks += s->backed && fi.level;
		model_map_leaf(r, gpa, fi.level, s);
		check_slot_range(r, gpa & ~(s2_level_size(fi.level) - 1), s2_level_size(fi.level));
		return;
	}
	check_slot_page(r, gpa);
}

static void op_fault(struct drun *r)
{
	fault_at(r, rand_fault_gpa(r));
}

// A frame-list slot's pages gain frames (fill: absent pages only, as FILL;
// the frames are the slot's aligned run, i.e. a huge page, or scattered) or
// lose them (drop: absent, then the engine's page zap, as DROP). Runs are
// often one aligned 2 MiB block, so blocks are split and collapse again.
static void op_frames(struct drun *r)
{
	const struct dslot *h = r->hot && rnd_below(r, 2) ? model_slot_at(r, r->hot) : NULL;
	int id = h ? (int)(h - r->slot) : (int)rnd_below(r, NSLOTS);
	struct dslot *s = &r->slot[id];
	struct dback *d = &r->back[id];

	if (!s->used || !s->backed)
		return;
	uint64_t pages = s->size / 4096, first, n;
	// Half the time where the last one was: a block is split, faulted in
	// with 4K leaves and made whole again.
	uint64_t page = h ? (r->hot - s->gpa) / 4096 : rnd_below(r, pages);
	if (rnd_below(r, 3)) { // the 2 MiB block around a page
		uint64_t gpa = (s->gpa + page * 4096) & ~(2 * MiB - 1);
		first = gpa < s->gpa ? 0 : (gpa - s->gpa) / 4096;
		n = 512;
	} else {
		first = page;
		n = 1 + rnd_below(r, 16);
	}
	if (n > pages - first)
		n = pages - first;
	r->hot = s->gpa + (first + rnd_below(r, n)) * 4096; // faults follow fills and drops
	bool fill = rnd_below(r, 3) != 0, scattered = rnd_below(r, 6) == 0;
	if (r->trace)
		fprintf(stderr, "%llu: %s slot %d pages %llu+%llu%s\n", (unsigned long long)r->step,
			fill ? "fill" : "drop", id, (unsigned long long)first,
			(unsigned long long)n, scattered ? " scattered" : "");
	if (fill) {
		// The vCPU ran in the block before: a fault at its first page
		// with a frame maps it (a 4K leaf if the block was incomplete);
		// after the fill, a fault in it (a block that is whole now
		// collapses).
		for (uint64_t i = first; n == 512 && i < first + n; i++)
			if (d->pfn[i] != PFN_ABSENT) {
				fault_at(r, s->gpa + i * 4096);
				break;
			}
		for (uint64_t i = first; i < first + n; i++)
			if (d->pfn[i] == PFN_ABSENT)
				d->pfn[i] = scattered ? 0x2000000 + rnd_below(r, 1 << 20) * 3
						      : (d->run >> 12) + i;
		if (n == 512)
			fault_at(r, r->hot);
		return;
	}
	for (uint64_t i = first; i < first + n; i++)
		d->pfn[i] = PFN_ABSENT;
	DIFF_EXPECT_EQ(r, s2_slot_zap_pages(r->t.vm, 0, (uint32_t)id, first, n), 0,
		       "page zap result");
	model_slot_zap(r, s->gpa + first * 4096, n * 4096);
	reload(r);
	check_slot_range(r, s->gpa + first * 4096, n * 4096);
}

static void op_explicit(struct drun *r, unsigned kind)
{
	uint64_t size = rand_size(r), gpa = rnd_below(r, XPAGES) * 4096, hpa;
	unsigned prot = rnd_below(r, 2) ? S2_PROT_RWX : S2_PROT_R;
	int got;

	hpa = rand_hpa(r);
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
	if (r->trace)
		fprintf(stderr, "%llu: x%u gpa %llx size %llx hpa %llx prot %u -> %d\n",
			(unsigned long long)r->step, kind, (unsigned long long)gpa,
			(unsigned long long)size, (unsigned long long)hpa, prot, got);
	if (got != S2_E_NOMEM) { // NOMEM: nothing changed
		DIFF_EXPECT_EQ(r, got, 0, "explicit op result");
		for (uint64_t i = 0; i < size / 4096; i++) {
			struct xpage *m = &r->x[gpa / 4096 + i];

			if (kind == 0)
				*m = (struct xpage){true, hpa + i * 4096, prot};
			else if (kind == 1)
				m->mapped = false;
			else if (m->mapped)
				m->prot = prot;
		}
	}
	check_x_range(r, gpa, size);
}

static void op_mode(struct drun *r)
{
	r->mode = rnd_below(r, 2) ? S2_ZAP_ALL : S2_ZAP_SLOT;
	if (r->trace)
		fprintf(stderr, "%llu: mode %s\n", (unsigned long long)r->step,
			r->mode == S2_ZAP_ALL ? "all" : "slot");
	s2_vm_set_zap_mode(r->t.vm, r->mode);
}

// One step: now and then an allocation failure and a resched request, then
// one operation (2% mode switch, 28% slot update, 28% fault, 14% frames of a
// frame-list slot, 28% explicit).
static void step(struct drun *r)
{
	unsigned k = (unsigned)rnd_below(r, 100);
	uint64_t fail = rnd_below(r, 8) == 0 ? 1 + rnd_below(r, 4) : 0;
	unsigned resched = rnd_below(r, 4) == 0 ? 1 + (unsigned)rnd_below(r, 3) : 0;

	r->t.be->fail_at = fail ? r->t.be->alloc_seq + fail : 0;
	r->tx.be->fail_at = fail ? r->tx.be->alloc_seq + fail : 0;
	r->t.be->resched_every = r->tx.be->resched_every = resched;
	if (k < 2)
		op_mode(r);
	else if (k < 30)
		op_slot(r, (unsigned)rnd_below(r, 4));
	else if (k < 58)
		op_fault(r);
	else if (k < 72)
		op_frames(r);
	else
		op_explicit(r, (unsigned)rnd_below(r, 3));
	r->t.be->fail_at = r->tx.be->fail_at = 0;
	reload(r);
	if (r->step % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1)
		check_all(r);
}

// ---- life cycle ----------------------------------------------------------------------------

static void dvm_init(struct drun *r, struct dvm *d)
{
	d->be = host_be_new();
	struct s2_vm_config cfg = host_be_config(d->be, r->fmt);
	cfg.ia_bits = r->ia_bits;
	if (s2_vm_create(&cfg, &d->vm) || s2_root_get(d->vm, (struct s2_role){0, 0}, &d->root))
		diff_fail(r, "VM creation failed");
	host_tlb_load(d->be, d->vm, d->root);
}

static void dvm_fini(struct drun *r, struct dvm *d)
{
	host_tlb_unload(d->be, d->root);
	s2_vm_destroy(d->vm);
	DIFF_EXPECT_EQ(r, host_be_free(d->be), 0, "pages leaked after VM destroy");
}

static void finish(struct drun *r)
{
	struct host_counts c, cx;

	r->t.be->resched_every = r->tx.be->resched_every = 0;
	check_all(r);
	if (!r->o->data)
		check_every_page(r);
	host_be_counts(r->t.be, &c);
	host_be_counts(r->tx.be, &cx);
	DIFF_EXPECT_EQ(r, c.stale_at_yield + cx.stale_at_yield, 0, "stale TLB entries at yields");
	if (r->o->expect_coverage && !(c.alloc_failures && c.yields && cx.alloc_failures))
		diff_fail(r, "no allocation failure or yield was injected (too few operations?)");
	struct s2_stats st;
	s2_vm_stats(r->t.vm, &st);
	if (r->o->expect_coverage && !(r->backed_blocks && r->absent_faults && st.collapses))
		diff_fail(
		    r,
		    "frame lists: %llu 2M leaves, %llu faults on absent pages, %llu collapses: "
		    "each must happen (too few operations?)",
		    (unsigned long long)r->backed_blocks, (unsigned long long)r->absent_faults,
		    (unsigned long long)st.collapses);
	dvm_fini(r, &r->t);
	dvm_fini(r, &r->tx);
}

int mm_diff_run(const struct mm_diff_opts *o, char *msg, size_t msg_len)
{
	struct drun *r = calloc(1, sizeof(*r));
	int failed;

	if (!r) {
		snprintf(msg, msg_len, "mm_diff: out of memory");
		return 1;
	}
	r->o = o;
	r->msg = msg;
	r->msg_len = msg_len;
	r->rng = o->seed ? o->seed : 1; // xorshift: never 0
	r->trace = getenv("MMT_TRACE") != NULL;
	model_zap_all(r);
	failed = setjmp(r->fail);
	if (!failed) {
		r->fmt = mm_diff_fmt(o->fmt_name, &r->ia_bits);
		if (!r->fmt)
			diff_fail(r, "unknown format (ept4, ept5, npt4, arm64)");
		r->gen_bits = (r->fmt->caps & S2_CAP_MMIO_MARKER) ? r->fmt->mmio_gen_bits : 0;
		dvm_init(r, &r->t);
		dvm_init(r, &r->tx);
		for (r->step = 0; r->step < o->ops && !r->ended; r->step++)
			step(r);
		finish(r);
	}
	// After a failure the VMs are left as they are (the process reports and ends).
	free(r);
	return failed;
}
