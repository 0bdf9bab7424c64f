// SPDX-License-Identifier: Apache-2.0
//
// The VM object of mm/s2.h: life cycle, accessors, statistics, teardown.
//
// Teardown rules (I3.1-I3.3): the tree is made unreachable first (VM destroy:
// no vCPU runs any more; root teardown: the root's entries are detached),
// then one context invalidation, then every table page is freed exactly once
// by a post-order walk that reads no leaf, issues no invalidation and no
// cache maintenance, and checks need_resched every S2_YIELD_EVERY entries.
#include "core/mem.h"
#include "mm/s2_internal.h"

int s2_vm_create(const struct s2_vm_config *cfg, struct s2_vm **out)
{
	struct s2_geom g;

	if (!cfg || !out || !cfg->fmt || !cfg->be || !cfg->be->page_alloc || !cfg->be->page_free ||
	    !cfg->be->inval_context)
		return S2_E_INVAL;
	if (!s2_fmt_geom(cfg->fmt, cfg->ia_bits ? cfg->ia_bits : cfg->fmt->max_ia_bits, &g))
		return S2_E_INVAL;
	if ((cfg->caps & ~cfg->fmt->caps) || cfg->mmio_gen_bits > cfg->fmt->mmio_gen_bits ||
	    cfg->zap_mode > S2_ZAP_ALL)
		return S2_E_INVAL;
	unsigned ncpus = cfg->ncpus ? cfg->ncpus : 1;
	if (ncpus > S2_MAX_CPUS || (ncpus > 1 && !cfg->be->cpu_index))
		return S2_E_INVAL;
	// The epoch's per-CPU slots follow the VM struct (64-byte aligned).
	size_t cpus_off = (sizeof(struct s2_vm) + 63) & ~(size_t)63;
	size_t bytes = cpus_off + (size_t)ncpus * sizeof(struct mm_epoch_cpu);
	unsigned pages = (unsigned)((bytes + S2_PAGE_SIZE - 1) / S2_PAGE_SIZE);
	uint64_t pa = cfg->be->page_alloc(cfg->be_ctx, pages, S2_PAGE_SIZE);
	if (!pa)
		return S2_E_NOMEM;
	struct s2_vm *vm = (struct s2_vm *)(uintptr_t)pa;
	memset(vm, 0, sizeof(*vm));
	mm_rwlock_init(&vm->mmu_lock);
	mm_spin_init(&vm->slots_lock);
	mm_spin_init(&vm->roots_lock);
	s2_defer_init(vm, (struct mm_epoch_cpu *)(uintptr_t)(pa + cpus_off), ncpus);
	vm->fmt = cfg->fmt;
	vm->geom = g;
	vm->caps = cfg->caps;
	vm->mmio_gen_bits =
	    (cfg->caps & S2_CAP_MMIO_MARKER)
		? (cfg->mmio_gen_bits ? cfg->mmio_gen_bits : cfg->fmt->mmio_gen_bits)
		: 0;
	vm->zap_mode = cfg->zap_mode;
	vm->be = cfg->be;
	vm->be_ctx = cfg->be_ctx;
	vm->vm_pages = pages;
	s2_slots_init(vm);
	*out = vm;
	return 0;
}

const struct s2_geom *s2_vm_geom(const struct s2_vm *vm)
{
	return &vm->geom;
}

const struct s2_fmt *s2_vm_fmt(const struct s2_vm *vm)
{
	return vm->fmt;
}

unsigned s2_vm_caps(const struct s2_vm *vm)
{
	return vm->caps;
}

void s2_vm_stats(struct s2_vm *vm, struct s2_stats *out)
{
	const uint64_t *src = (const uint64_t *)&vm->stats;
	uint64_t *dst = (uint64_t *)out;

	struct mm_rwlock_stats rw;
	struct mm_spin_stats sp;
	struct mm_epoch_stats ep;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	// Locks and grace periods: straight from mm/sync.h's counters.
	mm_rwlock_stats(&vm->mmu_lock, &rw);
	mm_spin_stats(&vm->roots_lock, &sp);
	mm_epoch_stats(&vm->epoch, &ep);
	out->lock_read = rw.read_acquired;
	out->lock_write = rw.write_acquired;
	out->lock_contended = rw.read_contended + rw.write_contended + sp.contended;
	out->yields = rw.yields + __atomic_load_n(&vm->yields_nolock, __ATOMIC_RELAXED);
	out->grace_periods = ep.grace_periods;
	out->deferred_pending = __atomic_load_n(&vm->defer_pending, __ATOMIC_RELAXED);
}

void s2_vm_set_shadow(struct s2_vm *vm, const struct s2_shadow_ops *ops, void *ctx)
{
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	vm->shadow = ops;
	vm->shadow_ctx = ctx;
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
}

// ---- teardown -----------------------------------------------------------------

struct teardown_ctx {
	uint64_t freed;
};

// Level-1 tables point only to level-0 tables: free those without reading
// them (no leaf is ever visited). Higher tables are freed post-order.
static int teardown_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind,
			  void *ctx)
{
	struct teardown_ctx *t = ctx;

	if (kind == S2_VISIT_TABLE_PRE && e->level > 1)
		return 0;
	s2_page_free(w->vm, s2_pte_addr(w->vm->fmt, e->old), 1, true);
	t->freed++;
	return S2_WALK_SKIP_CHILDREN;
}

#define TEARDOWN_FLAGS                                                                             \
	(S2_WALK_TABLE_PRE | S2_WALK_TABLE_POST | S2_WALK_YIELDABLE | S2_WALK_SKIP_INVAL |         \
	 S2_WALK_SKIP_CMO)

// Frees the subtree below a detached entry of `level` at `base`.
static uint64_t free_subtree(struct s2_vm *vm, uint64_t table_pa, unsigned level, uint64_t base)
{
	struct teardown_ctx t = {0};
	struct s2_walk w;

	if (level > 0) {
		s2_walk_begin(&w, vm, TEARDOWN_FLAGS, S2_LOCK_NONE);
		s2_walk_table(&w, table_pa, level, base, base, base + s2_level_size(level + 1), 1,
			      teardown_visit, &t);
		s2_walk_end(&w);
	}
	s2_page_free(vm, table_pa, 1, true);
	return t.freed + 1;
}

// Detaches every root entry: a table entry becomes its bare page address
// (non-present in every format, still telling where the subtree is), a leaf
// becomes 0. Returns whether anything was attached.
static bool detach_root(struct s2_vm *vm, uint64_t root_pa)
{
	s2_pte_t *t = s2_table_ptr(root_pa);
	bool any = false;

	for (unsigned i = 0; i < vm->geom.root_entries; i++) {
		s2_pte_t e = s2_pte_load(&t[i]);

		if (!vm->fmt->is_present(e)) {
			s2_pte_store(&t[i], 0);
			continue;
		}
		any = true;
		s2_pte_store(&t[i],
			     s2_is_table(vm, e, vm->geom.root_level) ? s2_pte_addr(vm->fmt, e) : 0);
	}
	return any;
}

static uint64_t free_detached_root(struct s2_vm *vm, uint64_t root_pa)
{
	s2_pte_t *t = s2_table_ptr(root_pa);
	unsigned level = vm->geom.root_level;
	uint64_t freed = 0;

	for (unsigned i = 0; i < vm->geom.root_entries; i++) {
		uint64_t child = s2_pte_load(&t[i]);

		if (!child)
			continue;
		freed += free_subtree(vm, child, level - 1, (uint64_t)i << s2_level_shift(level));
		s2_pte_store(&t[i], 0);
	}
	return freed;
}

uint64_t s2_root_teardown(struct s2_vm *vm, struct s2_root *root, struct s2_stats *work)
{
	uint64_t freed = 0;
	bool attached;

	s2_mmu_lock(vm, S2_LOCK_WRITE);
	attached = detach_root(vm, root->pa); // unreachable before anything is freed
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
	if (attached) {
		vm->be->inval_context(vm->be_ctx, vm); // the one invalidation
		S2_STAT_ADD(vm, inval_context, 1);
		freed = free_detached_root(vm, root->pa);
		s2_defer_drain(vm); // shutdown: the pages are back when this returns
	}
	if (work)
		*work = (struct s2_stats){
		    .inval_context = attached, .tables_freed = freed, .tables_deferred = freed};
	return freed;
}

// VM destroy: no vCPU runs; one invalidation for the whole VM, then every
// root's tree, root pages and headers go.
void s2_vm_destroy(struct s2_vm *vm)
{
	bool attached = false;

	if (!vm)
		return;
	if (vm->shadow && vm->shadow->destroy_all)
		vm->shadow->destroy_all(vm->shadow_ctx, vm);
	for (struct s2_root *r = vm->roots; r; r = r->next)
		attached |= detach_root(vm, r->pa);
	if (attached) {
		vm->be->inval_context(vm->be_ctx, vm);
		S2_STAT_ADD(vm, inval_context, 1);
	}
	for (struct s2_root *r = vm->roots; r; r = r->next)
		free_detached_root(vm, r->pa);
	s2_defer_drain(vm); // also roots freed earlier; the epoch lives in *vm
	s2_roots_destroy(vm);
	s2_slots_destroy(vm);
	vm->be->page_free(vm->be_ctx, (uint64_t)(uintptr_t)vm, vm->vm_pages);
}
