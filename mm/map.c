// SPDX-License-Identifier: Apache-2.0
//
// Map, unmap, protect and range zaps, all through the one walker.
//
// Prepare/commit: every operation that may need table pages first runs the
// same walk in counting mode (nothing written), allocates exactly that many
// pages, and only then commits. An allocation failure therefore returns
// S2_E_NOMEM with the tables exactly as before and nothing leaked.
//
// Table reference count: a table page's count is 1 + its present entries.
// It is not stored: the post-order visit recounts the entries of the one
// table it just walked, and a table at 1 (no present entry) is reclaimed and
// its parent entry zapped (invalidated with the operation's one flush).
#include "core/mem.h"
#include "mm/s2_internal.h"
#include "mm/s2_testhooks.h"

enum op_kind { OP_MAP, OP_UNMAP, OP_PROTECT, OP_ZAP };

struct range_op {
	enum op_kind kind;
	uint64_t lo, hi;
	uint64_t delta; // hpa - gpa (mod 2^64)
	unsigned prot;
	enum s2_memtype mt;
	bool counting;
	bool per_leaf; // B4 baseline: each zap flushed at once (s2_unmap_per_leaf)
	uint64_t need;
	struct s2_cache cache;
};

// ---- decisions shared by the counting and the committing pass --------------

static bool covers(const struct range_op *op, uint64_t ea, unsigned level)
{
	return op->lo <= ea && ea + s2_level_size(level) <= op->hi;
}

static bool leafable_at(const struct s2_vm *vm, const struct range_op *op, unsigned level)
{
	return level <= vm->fmt->max_leaf_level && !(op->delta & (s2_level_size(level) - 1));
}

// Can the operation act on the whole entry at `ea` without a table below?
static bool actable(const struct s2_vm *vm, const struct range_op *op, uint64_t ea, unsigned level)
{
	if (!covers(op, ea, level))
		return false;
	return op->kind != OP_MAP || leafable_at(vm, op, level);
}

// Tables in a brand-new table at `level` fully covered by the operation.
static uint64_t count_full(const struct s2_vm *vm, const struct range_op *op, unsigned level)
{
	if (level == 0 || op->kind != OP_MAP || leafable_at(vm, op, level))
		return 1;
	return 1 + S2_PTES * count_full(vm, op, level - 1);
}

// Tables needed below an entry of level + 1 that gets a new table, for the
// part [lo, hi) of the operation inside it (the new table included).
static uint64_t count_new(const struct s2_vm *vm, const struct range_op *op, unsigned level,
			  uint64_t lo, uint64_t hi)
{
	uint64_t esz = s2_level_size(level), n = 1;

	if (level == 0)
		return 1;
	for (uint64_t ea = lo & ~(esz - 1); ea < hi; ea += esz) {
		uint64_t slo = ea > lo ? ea : lo, shi = ea + esz < hi ? ea + esz : hi;

		if (actable(vm, op, ea, level))
			continue;
		if (slo == ea && shi == ea + esz) {
			// Full but not leafable: all such interior entries cost the same.
			uint64_t k = ((hi & ~(esz - 1)) - ea) / esz;

			n += k * (count_full(vm, op, level - 1));
			ea += (k - 1) * esz;
			continue;
		}
		n += count_new(vm, op, level - 1, slo, shi);
	}
	return n;
}

static bool leaf_matches(const struct s2_vm *vm, const struct range_op *op,
			 const struct s2_walk_entry *e)
{
	const struct s2_fmt *f = vm->fmt;

	return op->kind == OP_MAP && s2_pte_addr(f, e->old) == e->addr + op->delta &&
	       f->leaf_prot(e->old) == op->prot && f->leaf_memtype(e->old, vm->caps) == op->mt;
}

// A table equivalent to the leaf `old` of `level`, one level down.
static void fill_split(const struct s2_vm *vm, uint64_t table, s2_pte_t old, unsigned level)
{
	const struct s2_fmt *f = vm->fmt;
	s2_pte_t *t = s2_table_ptr(table);
	uint64_t pa = s2_pte_addr(f, old), csz = s2_level_size(level - 1);
	unsigned prot = f->leaf_prot(old);
	enum s2_memtype mt = f->leaf_memtype(old, vm->caps);

	for (unsigned i = 0; i < S2_PTES; i++)
		t[i] = f->make_leaf(pa + i * csz, level - 1, prot, mt, vm->caps);
}

static int op_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind, void *ctx)
{
	struct range_op *op = ctx;
	struct s2_vm *vm = w->vm;
	const struct s2_fmt *f = vm->fmt;
	uint64_t esz = s2_level_size(e->level);
	bool table = s2_is_table(vm, e->old, e->level);

	if (kind == S2_VISIT_TABLE_POST) {
		// Reclaim an emptied table (refcount back to 1).
		s2_pte_t *t = s2_table_ptr(s2_pte_addr(f, e->old));

		if (op->counting || op->kind == OP_MAP || op->kind == OP_PROTECT)
			return 0;
		for (unsigned i = 0; i < S2_PTES; i++) {
			if (f->is_present(s2_pte_load(&t[i])))
				return 0;
		}
		s2_walk_zap(w, e);
		if (op->per_leaf)
			s2_walk_flush(w);
		return 0;
	}
	if (op->kind == OP_ZAP) {
		// Whole leaves that intersect the range go (a fault refills them).
		if (!table && !op->counting)
			s2_walk_zap(w, e);
		return 0;
	}
	if (actable(vm, op, e->addr, e->level)) {
		s2_pte_t new_pte;

		if (op->kind == OP_UNMAP) {
			if (table && op->per_leaf)
				return 0; // leaf by leaf; the emptied table goes post-order
			if (!op->counting && (table || f->is_present(e->old))) {
				s2_walk_zap(w, e);
				if (op->per_leaf)
					s2_walk_flush(w);
			}
			return S2_WALK_SKIP_CHILDREN;
		}
		if (op->kind == OP_PROTECT) {
			if (table)
				return 0; // protect what is below
			new_pte = f->make_leaf(s2_pte_addr(f, e->old), e->level, op->prot,
					       f->leaf_memtype(e->old, vm->caps), vm->caps);
		} else {
			new_pte =
			    f->make_leaf(e->addr + op->delta, e->level, op->prot, op->mt, vm->caps);
		}
		if (op->counting || e->old == new_pte)
			return S2_WALK_SKIP_CHILDREN;
		if (table)
			S2_STAT_ADD(vm, collapses, 1);
		if (op->kind == OP_MAP)
			S2_STAT_ADD(vm, leaves_mapped[e->level], 1);
		s2_walk_replace(w, e, new_pte);
		return S2_WALK_SKIP_CHILDREN;
	}
	if (table)
		return 0; // descend into the existing table
	bool leaf = f->is_present(e->old);
	if (op->kind != OP_MAP && !leaf)
		return S2_WALK_SKIP_CHILDREN; // nothing mapped here
	if (leaf && (leaf_matches(vm, op, e) ||
		     (op->kind == OP_PROTECT && f->leaf_prot(e->old) == op->prot)))
		return S2_WALK_SKIP_CHILDREN; // already what the operation asks
	if (op->counting) {
		uint64_t lo = e->addr > op->lo ? e->addr : op->lo;
		uint64_t hi = e->addr + esz < op->hi ? e->addr + esz : op->hi;

		op->need += count_new(vm, op, e->level - 1, lo, hi);
		return S2_WALK_SKIP_CHILDREN;
	}
	uint64_t pa = s2_cache_take(vm, &op->cache);
	if (!pa)
		return S2_E_INTERNAL; // prepare miscounted: never expected
	if (leaf) {
		fill_split(vm, pa, e->old, e->level);
		S2_STAT_ADD(vm, splits, 1);
	}
	s2_tables_count_alloc(vm, 1);
	s2_walk_replace(w, e, f->make_table(pa)); // release: contents first (I4.6)
	return 0;				  // the walker re-reads and descends
}

static int check_range(struct s2_vm *vm, uint64_t gpa, uint64_t size)
{
	if (!vm)
		return S2_E_INVAL;
	if ((gpa | size) & (S2_PAGE_SIZE - 1))
		return S2_E_UNALIGNED;
	if (!size)
		return S2_E_ZERO;
	if (gpa + size < gpa || gpa + size > (1ull << vm->geom.ia_bits))
		return S2_E_RANGE;
	return 0;
}

// Runs one range operation under the write lock: count, allocate, commit,
// one flush.
static int run_op_locked(struct s2_vm *vm, struct s2_root *root, struct range_op *op)
{
	unsigned flags = S2_WALK_LEAF | S2_WALK_TABLE_PRE | S2_WALK_TABLE_POST;
	struct s2_walk w;
	int r;

	if (op->kind == OP_MAP)
		flags |= S2_WALK_NONPRESENT;
	s2_walk_begin(&w, vm, flags, S2_LOCK_WRITE);
	op->counting = true;
	op->need = 0;
	r = s2_walk_root(&w, root, op->lo, op->hi, 0, op_visit, op);
	if (!r)
		r = s2_cache_topup(vm, &op->cache, op->need);
	if (!r) {
		op->counting = false;
		r = s2_walk_root(&w, root, op->lo, op->hi, 0, op_visit, op);
	}
	s2_walk_end(&w);
	s2_cache_release(vm, &op->cache);
	return r;
}

static int run_op(struct s2_vm *vm, struct s2_root *root, struct range_op *op)
{
	int r;

	s2_mmu_lock(vm, S2_LOCK_WRITE);
	r = run_op_locked(vm, root, op);
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
	return r;
}

int s2_map_locked(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, uint64_t hpa,
		  unsigned prot, enum s2_memtype mt)
{
	struct range_op op = {.kind = OP_MAP,
			      .lo = gpa,
			      .hi = gpa + size,
			      .delta = hpa - gpa,
			      .prot = prot,
			      .mt = mt};
	return run_op_locked(vm, root, &op);
}

// The checks every public range operation shares, in this order: the range
// (S2_E_*), then the root, the permissions and what the caller found wrong
// with its own arguments (S2_E_INVAL). Then it runs.
static int run_checked(struct s2_vm *vm, struct s2_root *root, struct range_op *op, bool bad_args,
		       bool locked)
{
	int r = check_range(vm, op->lo, op->hi - op->lo);

	if (r)
		return r;
	if (!root || (op->prot & ~S2_PROT_RWX) || bad_args)
		return S2_E_INVAL;
	return locked ? run_op_locked(vm, root, op) : run_op(vm, root, op);
}

int s2_map(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, uint64_t hpa,
	   unsigned prot, enum s2_memtype mt)
{
	struct range_op op = {.kind = OP_MAP,
			      .lo = gpa,
			      .hi = gpa + size,
			      .delta = hpa - gpa,
			      .prot = prot,
			      .mt = mt};
	return run_checked(vm, root, &op, (hpa & (S2_PAGE_SIZE - 1)) || mt > S2_MT_DEVICE, false);
}

int s2_unmap(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size)
{
	struct range_op op = {.kind = OP_UNMAP, .lo = gpa, .hi = gpa + size};
	return run_checked(vm, root, &op, false, false);
}

int s2_unmap_per_leaf(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size)
{
	struct range_op op = {.kind = OP_UNMAP, .lo = gpa, .hi = gpa + size, .per_leaf = true};
	return run_checked(vm, root, &op, false, false);
}

int s2_protect_locked(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size,
		      unsigned prot)
{
	struct range_op op = {.kind = OP_PROTECT, .lo = gpa, .hi = gpa + size, .prot = prot};
	return run_checked(vm, root, &op, false, true);
}

// Zaps [lo, hi) in every root of `as` (as < 0: all), valid and invalid. Only
// zaps in valid roots need (and get) the one invalidation at the end.
//
// Each root is walked with a reference (I4.5): the walk may yield, and the
// last reference of an invalid root may drop meanwhile (its holder frees the
// tree without the mmu lock); a root already at zero is its freer's alone.
void s2_zap_range_locked(struct s2_vm *vm, int as, uint64_t lo, uint64_t hi)
{
	struct range_op op = {.kind = OP_ZAP, .lo = lo, .hi = hi};
	struct s2_walk w;
	struct s2_root *next;

	s2_walk_begin(&w, vm, S2_WALK_LEAF | S2_WALK_TABLE_POST | S2_WALK_YIELDABLE, S2_LOCK_WRITE);
	for (struct s2_root *r = __atomic_load_n(&vm->roots, __ATOMIC_ACQUIRE); r; r = next) {
		if ((as >= 0 && r->role.as != (unsigned)as) || !s2_root_tryget(r)) {
			next = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE);
			continue;
		}
		s2_walk_root(&w, r, lo, hi, 0, op_visit, &op);
		// Still linked (referenced); its successor's header stays readable
		// inside our epoch section even if that root is unlinked meanwhile.
		next = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE);
		s2_root_drop(vm, r);
	}
	if (vm->shadow && vm->shadow->zap_range) {
		for (unsigned a = 0; a < S2_NR_AS; a++) {
			if ((as < 0 || a == (unsigned)as) &&
			    vm->shadow->zap_range(vm->shadow_ctx, vm, a, lo, hi - lo))
				s2_walk_note_inval(&w, lo, hi - lo);
		}
	}
	s2_walk_end(&w); // exactly one flush, none if no valid root changed
}

void s2_zap_all_locked(struct s2_vm *vm)
{
	S2_STAT_ADD(vm, zap_all, 1);
	s2_zap_range_locked(vm, -1, 0, 1ull << vm->geom.ia_bits);
}

static void translate(const struct s2_vm *vm, uint64_t table, uint64_t gpa, struct s2_xlate *out);

void s2_translate(struct s2_vm *vm, const struct s2_root *root, uint64_t gpa, struct s2_xlate *out)
{
	*out = (struct s2_xlate){0};
	if (gpa >> vm->geom.ia_bits)
		return;
	// A lockless reader: the tables it passes are freed only after it leaves.
	s2_read_enter(vm);
	translate(vm, root->pa, gpa, out);
	s2_read_exit(vm);
}

static void translate(const struct s2_vm *vm, uint64_t table, uint64_t gpa, struct s2_xlate *out)
{
	const struct s2_fmt *f = vm->fmt;

	for (int level = (int)vm->geom.root_level; level >= 0; level--) {
		s2_pte_t e = s2_pte_load(&s2_table_ptr(table)[s2_index(&vm->geom, gpa, level)]);

		out->pte = e;
		out->level = (unsigned)level;
		if (!f->is_present(e)) {
			out->mmio_marker = f->is_mmio && f->is_mmio(e);
			return;
		}
		if (f->is_leaf(e, (unsigned)level)) {
			uint64_t sz = s2_level_size((unsigned)level);

			out->mapped = true;
			out->prot = f->leaf_prot(e);
			out->mt = f->leaf_memtype(e, vm->caps);
			out->hpa = s2_pte_addr(f, e) + (gpa & (sz - 1));
			return;
		}
		table = s2_pte_addr(f, e);
	}
}
