// SPDX-License-Identifier: Apache-2.0
//
// Nested shadow MMU: creation, the SP hash and active FIFO, parent lists,
// rmaps, the object slab, statistics and the invariant checker. The fault and
// write paths are in shadow_fault.c, zapping and reclaim in shadow_zap.c.
#include "core/log.h"
#include "core/mem.h"
#include "mm/shadow_internal.h"

// ---- pages and slab -----------------------------------------------------------

uint64_t sh_pages_alloc(struct sh_mmu *m, unsigned n)
{
	return m->vm->be->page_alloc(m->vm->be_ctx, n, S2_PAGE_SIZE);
}

void sh_pages_free(struct sh_mmu *m, uint64_t pa, unsigned n)
{
	m->vm->be->page_free(m->vm->be_ctx, pa, n);
}

#define SLAB_HDR 64 // first bytes of a slab page: link to the next page

static void *slab_alloc(struct sh_mmu *m, struct sh_slab *s)
{
	if (!s->free) {
		uint64_t pa = sh_pages_alloc(m, 1);

		if (!pa)
			return NULL;
		*(uint64_t *)(uintptr_t)pa = s->pages;
		s->pages = pa;
		for (uint32_t off = SLAB_HDR; off + s->obj_size <= S2_PAGE_SIZE;
		     off += s->obj_size) {
			void **o = (void **)(uintptr_t)(pa + off);

			*o = s->free;
			s->free = o;
		}
	}
	void **o = s->free;
	s->free = *o;
	memset(o, 0, s->obj_size);
	s->live++;
	return o;
}

static void slab_free(struct sh_slab *s, void *obj)
{
	void **o = obj;

	*o = s->free;
	s->free = o;
	s->live--;
}

void sh_slab_destroy(struct sh_mmu *m, struct sh_slab *s)
{
	while (s->pages) {
		uint64_t pa = s->pages;

		s->pages = *(uint64_t *)(uintptr_t)pa;
		sh_pages_free(m, pa, 1);
	}
	s->free = NULL;
}

void sh_assert_fail(const char *expr, const char *file, int line)
{
	if (s2_assert_hook) {
		s2_assert_hook(expr, file, line);
		return;
	}
	__builtin_trap();
}

// ---- locking ----------------------------------------------------------------------

void sh_lock(struct sh_mmu *m)
{
	s2_mmu_lock(m->vm, S2_LOCK_WRITE);
}

void sh_unlock(struct sh_mmu *m)
{
	s2_mmu_unlock(m->vm, S2_LOCK_WRITE);
}

s2_pte_t *sh_table(const struct sh_page *sp)
{
	return (s2_pte_t *)(uintptr_t)sp->table_pa;
}

// ---- SP hash and active FIFO ------------------------------------------------------

unsigned sh_hash_index(uint64_t gfn)
{
	uint64_t h = gfn * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 52) & (SH_HASH_BUCKETS - 1);
}

// Only valid SPs are hashed, so a match never returns a zapped one.
struct sh_page *sh_hash_find(struct sh_mmu *m, uint64_t gfn, union sh_role role)
{
	for (struct sh_page *sp = m->hash[sh_hash_index(gfn)]; sp; sp = sp->hash_next) {
		if (sp->gfn == gfn && sp->role.word == role.word)
			return sp;
	}
	return NULL;
}

void sh_unhash(struct sh_mmu *m, struct sh_page *sp)
{
	struct sh_page **pp = &m->hash[sh_hash_index(sp->gfn)];

	while (*pp && *pp != sp)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = sp->hash_next;
		m->st.hashed--;
	}
	sp->hash_next = NULL;
}

void sh_fifo_del(struct sh_mmu *m, struct sh_page *sp)
{
	if (sp->prev)
		sp->prev->next = sp->next;
	else
		m->fifo_head = sp->next;
	if (sp->next)
		sp->next->prev = sp->prev;
	else
		m->fifo_tail = sp->prev;
	sp->prev = sp->next = NULL;
	m->used--;
}

static void fifo_add_tail(struct sh_mmu *m, struct sh_page *sp)
{
	sp->prev = m->fifo_tail;
	sp->next = NULL;
	if (m->fifo_tail)
		m->fifo_tail->next = sp;
	else
		m->fifo_head = sp;
	m->fifo_tail = sp;
	m->used++;
	if (m->used > m->st.used_max)
		m->st.used_max = m->used;
}

// A new SP: table page, side array (rmap nodes at level 0, child pointers
// above), hashed and appended to the FIFO. The caller links it into a parent
// (or takes a root reference) before anything else can see it.
int sh_page_new(struct sh_mmu *m, uint64_t gfn, union sh_role role, struct sh_page **out)
{
	if (m->used >= m->quota) {
		m->st.nospc++;
		return SH_E_NOSPC;
	}
	struct sh_page *sp = slab_alloc(m, &m->sp_slab);
	if (!sp) {
		m->st.nomem++;
		return S2_E_NOMEM;
	}
	unsigned meta_pages =
	    role.level == 0
		? (unsigned)((S2_PTES * sizeof(struct sh_rmap) + S2_PAGE_SIZE - 1) / S2_PAGE_SIZE)
		: (unsigned)((S2_PTES * sizeof(struct sh_page *) + S2_PAGE_SIZE - 1) /
			     S2_PAGE_SIZE);
	uint64_t table = s2_table_alloc(m->vm);
	uint64_t meta = table ? sh_pages_alloc(m, meta_pages) : 0;
	if (!meta) {
		if (table)
			s2_page_free(m->vm, table, 1, false);
		slab_free(&m->sp_slab, sp);
		m->st.nomem++;
		return S2_E_NOMEM;
	}
	sp->m = m;
	sp->gfn = gfn;
	sp->role = role;
	sp->table_pa = table;
	sp->meta_pa = meta;
	sp->meta_pages = meta_pages;
	sp->child = (struct sh_page **)(uintptr_t)meta; // or rmap: same storage
	unsigned b = sh_hash_index(gfn);
	sp->hash_next = m->hash[b];
	m->hash[b] = sp;
	m->st.hashed++;
	fifo_add_tail(m, sp);
	m->st.created++;
	*out = sp;
	return 0;
}

// Epoch callback: the grace period after the zap is over.
static void sp_free_cb(void *obj)
{
	struct sh_page *sp = obj;
	struct sh_mmu *m = sp->m;

	s2_page_free(m->vm, sp->table_pa, 1, false);
	sh_pages_free(m, sp->meta_pa, sp->meta_pages);
	slab_free(&m->sp_slab, sp);
	m->st.freed++;
	m->st.pending_free--;
}

// Called by commit: the SP is unreachable for hardware (flushed) and for new
// software walkers; its pages go after the walkers that may hold it left (I2.3).
void sh_free_deferred(struct sh_mmu *m, struct sh_page *sp)
{
	m->st.pending_free++;
	mm_epoch_defer(&m->ep, &sp->free_node, sp_free_cb, sp);
}

// ---- parent lists -----------------------------------------------------------------

int sh_parent_add(struct sh_mmu *m, struct sh_page *child, struct sh_page *p, uint32_t idx)
{
	struct sh_parents *pl = &child->parents;
	struct sh_pref ref = {p, idx};

	if (pl->n == 0) {
		pl->one = ref;
		pl->n = 1;
		return 0;
	}
	if (!pl->more || pl->more->n == SH_PDESC_N) {
		struct sh_pdesc *d = slab_alloc(m, &m->desc_slab);

		if (!d)
			return S2_E_NOMEM;
		d->next = pl->more;
		pl->more = d;
	}
	pl->more->e[pl->more->n++] = ref;
	pl->n++;
	return 0;
}

// Takes the last reference out of the first descriptor (freeing it if empty).
static struct sh_pref pop_more(struct sh_mmu *m, struct sh_parents *pl)
{
	struct sh_pdesc *d = pl->more;
	struct sh_pref r = d->e[--d->n];

	if (!d->n) {
		pl->more = d->next;
		slab_free(&m->desc_slab, d);
	}
	return r;
}

void sh_parent_del(struct sh_mmu *m, struct sh_page *child, struct sh_page *p, uint32_t idx)
{
	struct sh_parents *pl = &child->parents;

	if (pl->n && pl->one.sp == p && pl->one.idx == idx) {
		if (pl->more)
			pl->one = pop_more(m, pl);
		pl->n--;
		return;
	}
	for (struct sh_pdesc *d = pl->more; d; d = d->next) {
		for (uint32_t i = 0; i < d->n; i++) {
			if (d->e[i].sp == p && d->e[i].idx == idx) {
				// Fill the hole with the first descriptor's last entry
				// (unless the hole is that entry).
				bool is_last = d == pl->more && i == d->n - 1;
				struct sh_pref last = pop_more(m, pl);

				if (!is_last)
					d->e[i] = last;
				pl->n--;
				return;
			}
		}
	}
	SH_ASSERT(0 && "parent reference not found");
}

bool sh_parent_first(const struct sh_page *sp, struct sh_pref *out)
{
	if (!sp->parents.n)
		return false;
	*out = sp->parents.one;
	return true;
}

// ---- rmaps ------------------------------------------------------------------------

struct sh_rmap **sh_rmap_bucket(struct sh_mmu *m, uint64_t gfn)
{
	uint64_t h = (gfn * 0x9e3779b97f4a7c15ull) >> 20;

	return &m->rmap_hash[h & m->rmap_mask];
}

void sh_rmap_add(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, uint64_t gfn)
{
	struct sh_rmap *n = &sp->rmap[idx];
	struct sh_rmap **b = sh_rmap_bucket(m, gfn);

	n->sp = sp;
	n->gfn = gfn;
	n->next = *b;
	*b = n;
	m->st.rmap_entries++;
}

void sh_rmap_del(struct sh_mmu *m, struct sh_page *sp, uint32_t idx)
{
	struct sh_rmap *n = &sp->rmap[idx];
	struct sh_rmap **pp = sh_rmap_bucket(m, n->gfn);

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	SH_ASSERT(*pp == n);
	if (*pp == n) {
		*pp = n->next;
		m->st.rmap_entries--;
	}
	n->next = NULL;
	n->sp = NULL;
}

// ---- walkers ------------------------------------------------------------------------

// ---- statistics and checks ----------------------------------------------------------

static bool is_orphan(const struct sh_page *sp)
{
	return !sp->is_root && sp->role.guest_mode && sp->parents.n == 0;
}

void sh_stats(struct sh_mmu *m, struct sh_stats *out)
{
	sh_lock(m);
	mm_epoch_poll(&m->ep);
	*out = m->st;
	out->used = m->used;
	out->quota = m->quota;
	out->longest_chain = 0;
	for (unsigned b = 0; b < SH_HASH_BUCKETS; b++) {
		uint64_t n = 0;

		for (struct sh_page *sp = m->hash[b]; sp; sp = sp->hash_next)
			n++;
		if (n > out->longest_chain)
			out->longest_chain = n;
	}
	out->orphans = 0;
	for (struct sh_page *sp = m->fifo_head; sp; sp = sp->next)
		out->orphans += is_orphan(sp);
	sh_unlock(m);
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			bad++;                                                                     \
			log_err("shadow check: " __VA_ARGS__);                                     \
		}                                                                                  \
	} while (0)

// Is (p, idx) in sp's parent list?
static bool has_parent(const struct sh_page *sp, const struct sh_page *p, uint32_t idx)
{
	if (sp->parents.n && sp->parents.one.sp == p && sp->parents.one.idx == idx)
		return true;
	for (const struct sh_pdesc *d = sp->parents.more; d; d = d->next) {
		for (uint32_t i = 0; i < d->n; i++) {
			if (d->e[i].sp == p && d->e[i].idx == idx)
				return true;
		}
	}
	return false;
}

static int check_page(struct sh_mmu *m, struct sh_page *sp, uint64_t *leaves)
{
	const struct s2_fmt *f = m->fmt;
	const s2_pte_t *t = sh_table(sp);
	uint32_t present = 0, nparents = 0;
	int bad = 0;

	for (uint32_t i = 0; i < S2_PTES; i++) {
		if (!f->is_present(t[i]))
			continue;
		present++;
		if (sp->role.level == 0) {
			(*leaves)++;
			CHECK(sp->rmap[i].sp == sp, "leaf %u of sp gfn %llx not on the rmap\n", i,
			      (unsigned long long)sp->gfn);
		} else {
			struct sh_page *c = sp->child[i];

			CHECK(c && s2_pte_addr(f, t[i]) == c->table_pa && has_parent(c, sp, i),
			      "entry %u of sp gfn %llx: child link broken\n", i,
			      (unsigned long long)sp->gfn);
		}
	}
	CHECK(present == sp->present, "sp gfn %llx: %u present, counted %u\n",
	      (unsigned long long)sp->gfn, present, sp->present);
	if (sp->parents.n)
		nparents++;
	for (const struct sh_pdesc *d = sp->parents.more; d; d = d->next)
		nparents += d->n;
	CHECK(nparents == sp->parents.n, "sp gfn %llx: parent count\n",
	      (unsigned long long)sp->gfn);
	if (sp->parents.n) {
		const struct sh_pref *r = &sp->parents.one;

		CHECK(r->sp->child[r->idx] == sp, "sp gfn %llx: parent does not point back\n",
		      (unsigned long long)sp->gfn);
	}
	CHECK(!(m->recursive && is_orphan(sp)), "orphan sp gfn %llx level %u left (I2.1)\n",
	      (unsigned long long)sp->gfn, sp->role.level);
	CHECK(!sp->zapped || sp->role.invalid, "zapped sp gfn %llx still active\n",
	      (unsigned long long)sp->gfn);
	return bad;
}

int sh_check(struct sh_mmu *m)
{
	int bad = 0;
	uint64_t n = 0, hashed = 0, invalid = 0, leaves = 0, rmaps = 0;

	sh_lock(m);
	uint32_t seq = ++m->op_seq;
	for (struct sh_page *sp = m->fifo_head; sp; sp = sp->next) {
		sp->mark = seq;
		n++;
		invalid += sp->role.invalid;
		bad += check_page(m, sp, &leaves);
	}
	CHECK(n == m->used, "active list has %llu, used %llu\n", (unsigned long long)n,
	      (unsigned long long)m->used);
	for (unsigned b = 0; b < SH_HASH_BUCKETS; b++) {
		for (struct sh_page *sp = m->hash[b]; sp; sp = sp->hash_next) {
			hashed++;
			CHECK(sp->mark == seq && !sp->role.invalid && sh_hash_index(sp->gfn) == b,
			      "hashed sp gfn %llx not live\n", (unsigned long long)sp->gfn);
		}
	}
	CHECK(hashed == n - invalid && hashed == m->st.hashed,
	      "hash holds %llu, live %llu, invalid %llu\n", (unsigned long long)hashed,
	      (unsigned long long)n, (unsigned long long)invalid);
	for (uint64_t b = 0; b <= m->rmap_mask; b++) {
		for (struct sh_rmap *r = m->rmap_hash[b]; r; r = r->next) {
			rmaps++;
			CHECK(r->sp && r->sp->mark == seq &&
				  sh_rmap_bucket(m, r->gfn) == &m->rmap_hash[b],
			      "rmap node of a dead sp\n");
		}
	}
	CHECK(rmaps == leaves && rmaps == m->st.rmap_entries, "rmaps %llu, leaves %llu\n",
	      (unsigned long long)rmaps, (unsigned long long)leaves);
	sh_unlock(m);
	return bad;
}

uint64_t sh_zapped_total(const struct sh_mmu *m)
{
	return __atomic_load_n(&m->st.zapped, __ATOMIC_RELAXED);
}
