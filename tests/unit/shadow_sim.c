// SPDX-License-Identifier: Apache-2.0
//
// L1 hypervisor simulation over the nested shadow MMU (see shadow_sim.h).
// Hosted only (libc).
#include "shadow_sim.h"

#include <stdlib.h>
#include <string.h>

#include "arch/host/host_be.h"
#include "arch/x86/fmt_x86.h"
#include "mm_queries.h"

#define PAGE	  4096ull
#define SLOT_HPA  (1ull << 40) // host-physical base of L1's memory (never dereferenced)
#define L2_LEVELS 4	       // EPT 4-level

// ---- sparse L1 memory: only table pages exist -----------------------------------

struct tpage {
	struct tpage *next;
	uint64_t gfn;
	uint64_t e[512];
};

struct tstore {
	struct tpage **b;
	uint64_t mask;
};

static struct tpage **ts_slot(struct tstore *ts, uint64_t gfn)
{
	struct tpage **pp = &ts->b[(gfn * 0x9e3779b97f4a7c15ull >> 24) & ts->mask];

	while (*pp && (*pp)->gfn != gfn)
		pp = &(*pp)->next;
	return pp;
}

static struct tpage *ts_get(struct tstore *ts, uint64_t gfn, bool create)
{
	struct tpage **pp = ts_slot(ts, gfn);

	if (!*pp && create) {
		*pp = calloc(1, sizeof(struct tpage));
		(*pp)->gfn = gfn;
	}
	return *pp;
}

static void ts_drop(struct tstore *ts, uint64_t gfn)
{
	struct tpage **pp = ts_slot(ts, gfn), *t = *pp;

	if (t) {
		*pp = t->next;
		free(t);
	}
}

// ---- the simulation -------------------------------------------------------------

struct l2ctx {
	uint64_t root_gpa;
	struct sh_page *root;
};

struct shsim {
	struct shsim_config cfg;
	struct host_be *be;
	struct s2_vm *vm;
	struct sh_mmu *m;
	const struct s2_fmt *f;
	struct tstore ts;
	uint64_t *fifo; // free L1 gfns (ring)
	uint64_t head, count;
	struct l2ctx *ctx;
	uint64_t l1_exits;
	uint64_t l2_emulated;
};

static bool mem_read(void *c, unsigned as, uint64_t gpa, uint64_t *v)
{
	struct shsim *s = c;

	if (gpa / PAGE >= s->cfg.l1_pages)
		return false;
	struct tpage *t = ts_get(&s->ts, gpa / PAGE, false);
	*v = t ? t->e[(gpa % PAGE) / 8] : 0; // freed pages read as zero
	return true;
}

static bool mem_write(void *c, unsigned as, uint64_t gpa, uint64_t v)
{
	struct shsim *s = c;

	if (gpa / PAGE >= s->cfg.l1_pages)
		return false;
	ts_get(&s->ts, gpa / PAGE, true)->e[(gpa % PAGE) / 8] = v;
	return true;
}

static uint64_t l1_alloc(struct shsim *s)
{
	if (!s->count)
		abort(); // the configuration does not fit in L1's memory
	uint64_t gfn = s->fifo[s->head];

	s->head = (s->head + 1) % (s->cfg.l1_pages - 1);
	s->count--;
	return gfn;
}

static void l1_free(struct shsim *s, uint64_t gfn)
{
	s->fifo[(s->head + s->count) % (s->cfg.l1_pages - 1)] = gfn;
	s->count++;
}

static void l1_free_data(struct shsim *s, uint64_t gfn)
{
	ts_drop(&s->ts, gfn); // contents written by emulated L2 writes, if any
	l1_free(s, gfn);
}

// L1 writes one entry: a trapped and emulated write when the page is shadowed.
static int l1_write(struct shsim *s, uint64_t gpa, uint64_t v)
{
	if (sh_gfn_tracked(s->m, 0, gpa / PAGE))
		return sh_emulate_write(s->m, 0, gpa, v, 8);
	mem_write(s, 0, gpa, v);
	return 0;
}

static uint64_t l1_read(struct shsim *s, uint64_t gpa)
{
	uint64_t v = 0;

	mem_read(s, 0, gpa, &v);
	return v;
}

// A zeroed table page (L1 clears it: trapped writes if it is still shadowed).
static int l1_new_table(struct shsim *s, uint64_t *gpa)
{
	uint64_t gfn = l1_alloc(s);
	int r = 0;

	if (sh_gfn_tracked(s->m, 0, gfn)) {
		for (unsigned i = 0; i < 512 && !r; i++)
			r = sh_emulate_write(s->m, 0, gfn * PAGE + 8 * i, 0, 8);
	} else {
		memset(ts_get(&s->ts, gfn, true)->e, 0, PAGE);
	}
	*gpa = gfn * PAGE;
	return r;
}

static unsigned idx_of(uint64_t l2, unsigned level)
{
	return (unsigned)((l2 >> (12 + 9 * level)) & 511);
}

// L1's EPT-violation handler: maps the `batch` pages around l2 that are not
// mapped yet, each to a fresh L1 page.
static int l1_handle(struct shsim *s, struct l2ctx *c, uint64_t l2)
{
	uint64_t n = s->cfg.batch ? s->cfg.batch : 512;
	uint64_t first = l2 / PAGE / n * n;
	int r = 0;

	s->l1_exits++;
	for (uint64_t p = first; p < first + n && p < s->cfg.l2_pages && !r; p++) {
		uint64_t a = p * PAGE, table = c->root_gpa;

		for (unsigned l = L2_LEVELS - 1; l > 0 && !r; l--) {
			uint64_t eg = table + 8 * idx_of(a, l), e = l1_read(s, eg);

			if (!s->f->is_present(e)) {
				uint64_t nt;

				r = l1_new_table(s, &nt);
				e = s->f->make_table(nt);
				if (!r)
					r = l1_write(s, eg, e);
			}
			table = s2_pte_addr(s->f, e);
		}
		uint64_t eg = table + 8 * idx_of(a, 0);
		if (!r && !s->f->is_present(l1_read(s, eg)))
			r = l1_write(
			    s, eg,
			    s->f->make_leaf(l1_alloc(s) * PAGE, 0, S2_PROT_RWX, S2_MT_WB, 0));
	}
	return r;
}

// L2 touches every page: the hardware walk first, a shadow fault on a miss.
static int l2_touch_all(struct shsim *s, struct l2ctx *c)
{
	for (uint64_t p = 0; p < s->cfg.l2_pages; p++) {
		uint64_t a = p * PAGE;
		struct s2_xlate x;
		struct sh_fault_info fi;

		sh_translate(s->m, c->root, a, &x);
		if (x.mapped && (x.prot & S2_PROT_W))
			continue;
		for (unsigned tries = 0;; tries++) {
			int r = sh_fault(s->m, c->root, a, S2_PROT_W, &fi);

			if (r == SH_FAULT_MAPPED)
				break;
			if (r == SH_FAULT_EMULATE) {
				// The data page is (still) shadowed as an L1 table:
				// L2's write traps and is emulated.
				s->l2_emulated++;
				r = sh_emulate_write(s->m, 0, fi.l1_gpa & ~7ull, 0, 8);
				if (r)
					return r;
				break;
			}
			if (r != SH_FAULT_L1 || tries > 2)
				return r < 0 ? r : -100 - r;
			r = l1_handle(s, c, a);
			if (r)
				return r;
		}
	}
	return 0;
}

// Post-order over the EPT12 below `table` (entries of `level`): data pages
// and table pages go back to L1's allocator; with bottom-up writes every
// entry is cleared first (trapped where the page is shadowed).
static int l1_teardown(struct shsim *s, uint64_t table, unsigned level)
{
	bool writes = s->cfg.teardown == SHSIM_TEARDOWN_WRITES;
	int r = 0;

	for (unsigned i = 0; i < 512 && !r; i++) {
		uint64_t eg = table + 8 * i, e = l1_read(s, eg);

		if (!s->f->is_present(e))
			continue;
		if (level > 0)
			r = l1_teardown(s, s2_pte_addr(s->f, e), level - 1);
		else
			l1_free_data(s, s2_pte_addr(s->f, e) / PAGE);
		if (!r && writes)
			r = l1_write(s, eg, 0);
	}
	ts_drop(&s->ts, table / PAGE);
	l1_free(s, table / PAGE);
	return r;
}

static void snapshot(struct shsim *s, uint64_t *used, uint64_t *chain, uint64_t *orphans)
{
	struct sh_stats st;

	sh_stats(s->m, &st);
	*used = st.used;
	*chain = st.longest_chain;
	if (orphans)
		*orphans = st.orphans;
}

int shsim_cycle(struct shsim *s, struct shsim_cycle *out)
{
	struct sh_stats a, b;
	int r = 0;

	sh_stats(s->m, &a);
	uint64_t exits = s->l1_exits, emulated = s->l2_emulated;
	for (unsigned i = 0; i < s->cfg.contexts && !r; i++) {
		struct l2ctx *c = &s->ctx[i];

		r = l1_new_table(s, &c->root_gpa);
		if (!r)
			r = sh_root_get(s->m, 0, c->root_gpa, &c->root);
	}
	for (unsigned i = 0; i < s->cfg.contexts && !r; i++)
		r = l2_touch_all(s, &s->ctx[i]);
	if (r)
		return r;
	snapshot(s, &out->used_peak, &out->chain_peak, NULL);
	for (unsigned i = 0; i < s->cfg.contexts && !r; i++) {
		struct l2ctx *c = &s->ctx[i];

		r = l1_teardown(s, c->root_gpa, L2_LEVELS - 1);
		sh_root_put(s->m, c->root);
		c->root = NULL;
	}
	snapshot(s, &out->used_end, &out->chain_end, &out->orphans_end);
	sh_stats(s->m, &b);
	out->zapped = b.zapped - a.zapped;
	out->faults = b.faults - a.faults;
	out->emul_writes = b.emul_writes - a.emul_writes;
	out->l1_exits = s->l1_exits - exits;
	out->l2_emulated = s->l2_emulated - emulated;
	return r;
}

struct shsim *shsim_create(const struct shsim_config *cfg)
{
	struct shsim *s = calloc(1, sizeof(*s));

	s->cfg = *cfg;
	s->f = &s2_fmt_ept4;
	s->be = host_be_new();
	struct s2_vm_config vc = host_be_config(s->be, s->f);
	if (s2_vm_create(&vc, &s->vm))
		abort();
	if (s2_slot_add(s->vm, 0, 0, 0, cfg->l1_pages * PAGE, SLOT_HPA, 0))
		abort();
	uint64_t buckets = 1024;
	while (buckets < cfg->contexts * (cfg->l2_pages / 256 + 8))
		buckets <<= 1;
	s->ts.b = calloc(buckets, sizeof(*s->ts.b));
	s->ts.mask = buckets - 1;
	s->fifo = malloc((cfg->l1_pages - 1) * sizeof(uint64_t));
	for (uint64_t g = 1; g < cfg->l1_pages; g++) // gfn 0 stays unused
		s->fifo[g - 1] = g;
	s->count = cfg->l1_pages - 1;
	s->ctx = calloc(cfg->contexts, sizeof(*s->ctx));
	struct sh_config sc = {
	    .guest_pages = cfg->l1_pages,
	    .quota = cfg->quota,
	    .non_recursive = cfg->non_recursive,
	    .mem = {.read64 = mem_read, .write64 = mem_write, .ctx = s},
	};
	if (sh_create(s->vm, &sc, &s->m))
		abort();
	return s;
}

int shsim_delete_slot0(struct shsim *s)
{
	return s2_slot_delete(s->vm, 0, 0);
}

struct sh_mmu *shsim_mmu(struct shsim *s)
{
	return s->m;
}

struct s2_vm *shsim_vm(struct shsim *s)
{
	return s->vm;
}

int64_t shsim_destroy(struct shsim *s)
{
	sh_destroy(s->m);
	s2_vm_destroy(s->vm);
	int64_t leak = host_be_free(s->be);
	for (uint64_t b = 0; b <= s->ts.mask; b++) {
		while (s->ts.b[b]) {
			struct tpage *t = s->ts.b[b];

			s->ts.b[b] = t->next;
			free(t);
		}
	}
	free(s->ts.b);
	free(s->fifo);
	free(s->ctx);
	free(s);
	return leak;
}
