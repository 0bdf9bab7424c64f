// SPDX-License-Identifier: Apache-2.0
//
// Frame ownership table (core/own.h, docs/ownership.md).
//
// Radix tree over the 40-bit frame number: top[8] in the table (bits 39..37),
// three levels of 512 entries (bits 36..28, 27..19, 18..10) and leaves of
// 1024 4-byte records (bits 9..0). An interior entry is the child's address
// with the child's live count in its low 12 bits (an interior child counts
// its non-null entries, a leaf its non-zero records).
//
// Invariant (outside a request): no node in the tree is empty (count 0), so a
// table whose frames are all the primary's holds no node page at all.
#include "core/own.h"

#include <stddef.h>

#define OWN_LEAF_BITS  10u
#define OWN_NODE_BITS  9u
#define OWN_TOP_BITS   3u
#define OWN_LEVELS     4u // entries walked: top, L1, L2, L3 (the last points to a leaf)
#define OWN_CNT_MASK   0xfffull
#define OWN_STATE_MASK 3u
#define OWN_VM_SHIFT   2u

_Static_assert(OWN_TOP_BITS + 3 * OWN_NODE_BITS + OWN_LEAF_BITS == OWN_PFN_BITS,
	       "the tree's levels cover the frame number");
_Static_assert((1u << OWN_LEAF_BITS) * sizeof(uint32_t) == OWN_FRAME_SIZE, "a leaf is one page");
_Static_assert((1u << OWN_NODE_BITS) * sizeof(uint64_t) == OWN_FRAME_SIZE, "a node is one page");
_Static_assert((1u << OWN_LEAF_BITS) <= OWN_CNT_MASK, "a leaf's count fits the low bits");
_Static_assert(((uint64_t)OWN_VM_MAX << OWN_VM_SHIFT) <= UINT32_MAX, "a record holds any VM id");

// ---- locking and grace periods ----------------------------------------------

static void own_relax(const struct own_table *t)
{
	if (t->src.relax)
		t->src.relax();
	else
		__asm__ volatile("" ::: "memory");
}

static void own_lock(struct own_table *t)
{
	while (__atomic_exchange_n(&t->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&t->lock, __ATOMIC_RELAXED))
			own_relax(t);
}

static void own_unlock(struct own_table *t)
{
	__atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
}

// A lookup counts itself in active[epoch & 1]; it re-reads the epoch after
// counting, so a lookup that counted itself after a grace period started
// retries in the other slot (seq_cst: either the lookup sees the new epoch or
// the grace period sees its count).
static unsigned own_read_enter(struct own_table *t)
{
	for (;;) {
		uint32_t e = __atomic_load_n(&t->epoch, __ATOMIC_SEQ_CST);

		__atomic_fetch_add(&t->active[e & 1], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&t->epoch, __ATOMIC_SEQ_CST) == e)
			return e & 1;
		__atomic_fetch_sub(&t->active[e & 1], 1, __ATOMIC_SEQ_CST);
	}
}

static void own_read_exit(struct own_table *t, unsigned slot)
{
	__atomic_fetch_sub(&t->active[slot], 1, __ATOMIC_RELEASE);
}

// Every lookup that could have seen a node unlinked before this call has ended
// when it returns.
static void own_grace(struct own_table *t)
{
	uint32_t old = __atomic_fetch_add(&t->epoch, 1, __ATOMIC_SEQ_CST);

	while (__atomic_load_n(&t->active[old & 1], __ATOMIC_SEQ_CST))
		own_relax(t);
}

// ---- the tree -------------------------------------------------------------

static unsigned own_index(unsigned level, uint64_t pfn)
{
	static const unsigned shift[OWN_LEVELS] = {37, 28, 19, 10};

	return (unsigned)(pfn >> shift[level]) & (level ? 511u : 7u);
}

static void *own_child(uint64_t e)
{
	return (void *)(uintptr_t)(e & ~OWN_CNT_MASK);
}

static uint64_t own_load(const uint64_t *e)
{
	return __atomic_load_n(e, __ATOMIC_ACQUIRE);
}

static void own_store(uint64_t *e, uint64_t v)
{
	__atomic_store_n(e, v, __ATOMIC_RELEASE);
}

// ent[k]: the entry at level k on pfn's path (NULL below a missing node).
// Returns the leaf record's address, or NULL when the path is incomplete.
static uint32_t *own_path(struct own_table *t, uint64_t pfn, uint64_t *ent[OWN_LEVELS])
{
	uint64_t *e = &t->top[own_index(0, pfn)];

	for (unsigned k = 0; k < OWN_LEVELS; k++)
		ent[k] = NULL;
	for (unsigned k = 0;; k++) {
		void *child = own_child(own_load(e));

		ent[k] = e;
		if (!child)
			return NULL;
		if (k + 1 == OWN_LEVELS)
			return (uint32_t *)child + (pfn & ((1u << OWN_LEAF_BITS) - 1));
		e = (uint64_t *)child + own_index(k + 1, pfn);
	}
}

static void own_count_add(uint64_t *e, int d)
{
	own_store(e, own_load(e) + (uint64_t)(int64_t)d);
}

// Builds the missing nodes on pfn's path. OWN_E_NOMEM leaves the nodes built
// so far in place (empty); the caller prunes them.
static int own_populate(struct own_table *t, uint64_t pfn)
{
	uint64_t *ent[OWN_LEVELS];

	while (!own_path(t, pfn, ent)) {
		unsigned k = 0;

		while (k + 1 < OWN_LEVELS && ent[k + 1])
			k++;
		void *page = t->src.alloc(t->src.ctx);

		if (!page)
			return OWN_E_NOMEM;
		__atomic_store_n(&t->nodes, t->nodes + 1, __ATOMIC_RELAXED);
		own_store(ent[k], (uint64_t)(uintptr_t)page);
		if (k)
			own_count_add(ent[k - 1], 1);
	}
	return OWN_OK;
}

// Nodes unlinked by one request, given back after one grace period.
#define OWN_RETIRE_BATCH 32u
struct own_retire {
	void *page[OWN_RETIRE_BATCH];
	unsigned n;
};

static void own_retire_flush(struct own_table *t, struct own_retire *r)
{
	if (!r->n)
		return;
	own_grace(t); // no lookup can reach an unlinked node any more
	for (unsigned i = 0; i < r->n; i++)
		t->src.free(t->src.ctx, r->page[i]);
	r->n = 0;
}

// Unlinks the empty nodes on pfn's path, deepest first (restores the
// invariant); they go back to the source at the next flush.
static void own_prune(struct own_table *t, uint64_t pfn, struct own_retire *r)
{
	uint64_t *ent[OWN_LEVELS];

	own_path(t, pfn, ent);
	for (unsigned k = OWN_LEVELS; k-- > 0;) {
		uint64_t e = ent[k] ? own_load(ent[k]) : 0;
		void *node = own_child(e);

		if (!node)
			continue;
		if (e & OWN_CNT_MASK)
			return;
		own_store(ent[k], 0);
		if (k)
			own_count_add(ent[k - 1], -1);
		__atomic_store_n(&t->nodes, t->nodes - 1, __ATOMIC_RELAXED);
		if (r->n == OWN_RETIRE_BATCH)
			own_retire_flush(t, r);
		r->page[r->n++] = node;
	}
}

static void own_set(struct own_table *t, uint64_t pfn, uint32_t rec)
{
	uint64_t *ent[OWN_LEVELS];
	uint32_t *r = own_path(t, pfn, ent);
	uint32_t old;

	if (!r) // only when a listed frame returned to the primary earlier in the list
		return;
	old = __atomic_load_n(r, __ATOMIC_RELAXED);
	__atomic_store_n(r, rec, __ATOMIC_RELEASE);
	if (!old != !rec)
		own_count_add(ent[OWN_LEVELS - 1], rec ? 1 : -1);
}

// ---- ranges and the state machine ---------------------------------------

static bool own_in(const struct own_range *r, unsigned n, uint64_t pfn)
{
	for (unsigned i = 0; i < n; i++)
		if (pfn - r[i].first_pfn < r[i].npfn)
			return true;
	return false;
}

static uint32_t own_rec(enum own_state s, uint32_t vm)
{
	return (uint32_t)s | vm << OWN_VM_SHIFT;
}

// The record each op needs, and the one it leaves.
static void own_op_recs(enum own_op op, uint32_t vm, uint32_t *need, uint32_t *to)
{
	static const uint8_t from[OWN_OP_COUNT] = {OWN_PRIMARY, OWN_SHARED,  OWN_PRIMARY,
						   OWN_DONATED, OWN_PRIMARY, OWN_SLAT};
	static const uint8_t dest[OWN_OP_COUNT] = {OWN_SHARED,	OWN_PRIMARY, OWN_DONATED,
						   OWN_PRIMARY, OWN_SLAT,    OWN_PRIMARY};
	uint32_t fv = from[op] == OWN_SHARED || from[op] == OWN_DONATED ? vm : 0;
	uint32_t tv = dest[op] == OWN_SHARED || dest[op] == OWN_DONATED ? vm : 0;

	*need = own_rec(from[op], fv);
	*to = own_rec(dest[op], tv);
}

static int own_check_frame(struct own_table *t, uint64_t pfn, uint32_t need, uint32_t vm)
{
	uint64_t *ent[OWN_LEVELS];
	uint32_t *r, rec, state;

	if (!own_in(t->ram, t->nram, pfn))
		return OWN_E_RANGE;
	if (own_in(t->slat, t->nslat, pfn))
		return OWN_E_SLAT;
	r = own_path(t, pfn, ent);
	rec = r ? __atomic_load_n(r, __ATOMIC_RELAXED) : 0;
	if (rec == need)
		return OWN_OK;
	state = rec & OWN_STATE_MASK;
	if (state == OWN_SLAT)
		return OWN_E_SLAT;
	if (state != OWN_PRIMARY && rec >> OWN_VM_SHIFT != vm)
		return OWN_E_OTHER_VM;
	if (state == OWN_SHARED && (need & OWN_STATE_MASK) == OWN_PRIMARY)
		return OWN_E_ALREADY_SHARED; // share or donate of a frame shared with vm
	return OWN_E_NOT_OWNED;
}

struct own_req {
	const uint64_t *list; // NULL: first + i
	uint64_t first, n;
};

static uint64_t own_pfn_at(const struct own_req *q, uint64_t i)
{
	return q->list ? q->list[i] : q->first + i;
}

// Check every frame, then build every node, then commit (which cannot fail).
static int own_request(struct own_table *t, enum own_op op, uint32_t vm, const struct own_req *q,
		       uint64_t *bad)
{
	struct own_retire r = {.n = 0};
	uint32_t need, to;
	int rc = OWN_OK;

	own_op_recs(op, vm, &need, &to);
	own_lock(t);
	for (uint64_t i = 0; i < q->n && rc == OWN_OK; i++)
		if ((rc = own_check_frame(t, own_pfn_at(q, i), need, vm)) != OWN_OK && bad)
			*bad = i; // per-frame refusals only: never set for OWN_E_NOMEM
	for (uint64_t i = 0; i < q->n && rc == OWN_OK && to; i++) {
		if ((rc = own_populate(t, own_pfn_at(q, i))) == OWN_OK)
			continue;
		for (uint64_t j = 0; j <= i; j++) // nothing committed: every new node is empty
			own_prune(t, own_pfn_at(q, j), &r);
	}
	for (uint64_t i = 0; i < q->n && rc == OWN_OK; i++) {
		own_set(t, own_pfn_at(q, i), to);
		if (!to)
			own_prune(t, own_pfn_at(q, i), &r);
	}
	own_retire_flush(t, &r);
	own_unlock(t);
	return rc;
}

static int own_check_op(enum own_op op, uint32_t vm)
{
	if ((unsigned)op >= OWN_OP_COUNT)
		return OWN_E_BAD_OP;
	if (op == OWN_OP_CLAIM || op == OWN_OP_RELEASE)
		return vm ? OWN_E_BAD_VM : OWN_OK;
	return vm == 0 || vm > OWN_VM_MAX ? OWN_E_BAD_VM : OWN_OK;
}

int own_range_op(struct own_table *t, enum own_op op, uint32_t vm, uint64_t pa, uint64_t size,
		 uint64_t *bad)
{
	int rc = own_check_op(op, vm);
	struct own_req q = {NULL, pa >> OWN_FRAME_SHIFT, size >> OWN_FRAME_SHIFT};

	if (rc)
		return rc;
	if ((pa | size) & (OWN_FRAME_SIZE - 1))
		return OWN_E_ALIGN;
	if (pa + size < pa)
		return OWN_E_RANGE;
	if (q.n > OWN_RANGE_MAX)
		return OWN_E_TOO_MANY;
	uint64_t i = 0;

	rc = own_request(t, op, vm, &q, &i);
	if (rc && rc != OWN_E_NOMEM && bad)
		*bad = pa + (i << OWN_FRAME_SHIFT);
	return rc;
}

int own_list_op(struct own_table *t, enum own_op op, uint32_t vm, const uint64_t *pfn, uint64_t n,
		uint64_t *bad)
{
	int rc = own_check_op(op, vm);
	struct own_req q = {pfn, 0, n};

	if (rc)
		return rc;
	if (n > OWN_LIST_MAX)
		return OWN_E_TOO_MANY;
	if (n && !pfn)
		return OWN_E_RANGE;
	return own_request(t, op, vm, &q, bad);
}

int own_get(struct own_table *t, uint64_t pfn, enum own_state *state, uint32_t *vm)
{
	uint64_t *ent[OWN_LEVELS];
	uint32_t rec = 0;
	unsigned slot;

	if (!own_in(t->ram, t->nram, pfn))
		return OWN_E_RANGE;
	if (own_in(t->slat, t->nslat, pfn)) {
		*state = OWN_SLAT;
		*vm = 0;
		return OWN_OK;
	}
	slot = own_read_enter(t);
	uint32_t *r = own_path(t, pfn, ent);

	if (r)
		rec = __atomic_load_n(r, __ATOMIC_ACQUIRE);
	own_read_exit(t, slot);
	*state = (enum own_state)(rec & OWN_STATE_MASK);
	*vm = rec >> OWN_VM_SHIFT;
	return OWN_OK;
}

static void own_free_subtree(struct own_table *t, uint64_t e, unsigned level)
{
	uint64_t *node = own_child(e);

	if (!node)
		return;
	for (unsigned i = 0; level + 1 < OWN_LEVELS && i < (1u << OWN_NODE_BITS); i++)
		own_free_subtree(t, node[i], level + 1);
	t->src.free(t->src.ctx, node);
	t->nodes--;
}

void own_destroy(struct own_table *t)
{
	for (unsigned i = 0; i < 1u << OWN_TOP_BITS; i++) {
		own_free_subtree(t, t->top[i], 0);
		t->top[i] = 0;
	}
}

// ---- init -------------------------------------------------------------------

static int own_ranges(struct own_range *out, unsigned *nout, const uint64_t (*in)[2], unsigned n)
{
	if (n > OWN_MAX_RANGES)
		return OWN_E_TOO_MANY;
	if (n && !in)
		return OWN_E_RANGE;
	for (unsigned i = 0; i < n; i++) {
		uint64_t base = in[i][0], size = in[i][1];

		if ((base | size) & (OWN_FRAME_SIZE - 1))
			return OWN_E_ALIGN;
		if (!size || base + size < base ||
		    base + size > 1ull << (OWN_PFN_BITS + OWN_FRAME_SHIFT))
			return OWN_E_RANGE;
		out[i].first_pfn = base >> OWN_FRAME_SHIFT;
		out[i].npfn = size >> OWN_FRAME_SHIFT;
	}
	*nout = n;
	return OWN_OK;
}

int own_init(struct own_table *t, const struct own_page_src *src, const uint64_t (*ram)[2],
	     unsigned nram, const uint64_t (*slat)[2], unsigned nslat)
{
	int rc;

	*t = (struct own_table){.src = *src};
	if ((rc = own_ranges(t->ram, &t->nram, ram, nram)) != OWN_OK)
		return rc;
	return own_ranges(t->slat, &t->nslat, slat, nslat);
}
