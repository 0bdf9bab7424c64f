// SPDX-License-Identifier: Apache-2.0
//
// The engine's queries and conveniences that only the unit tests use
// (tests/unit/mm_queries.h): built into the hosted library, never into
// slat.efi. Each uses the engine's public or internal interface only.
#include "mm_queries.h"

#include "mm/s2_internal.h"
#include "mm/shadow_internal.h"

// ---- locks and epochs (mm/sync.h) ---------------------------------------------
bool mm_spin_trylock(struct mm_spinlock *l)
{
	if (__atomic_load_n(&l->locked, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		return false;
	__atomic_fetch_add(&l->acquired, 1, __ATOMIC_RELAXED);
	return true;
}

bool mm_spin_is_locked(const struct mm_spinlock *l)
{
	return __atomic_load_n(&l->locked, __ATOMIC_RELAXED) != 0;
}

bool mm_rwlock_is_locked(const struct mm_rwlock *l)
{
	return __atomic_load_n(&l->state, __ATOMIC_RELAXED) != 0;
}

void mm_rwlock_stats_reset(struct mm_rwlock *l)
{
	__atomic_store_n(&l->read_acquired, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->write_acquired, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->read_contended, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->write_contended, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->yields, 0, __ATOMIC_RELAXED);
}

int mm_epoch_claim_cpu(struct mm_epoch *e)
{
	for (uint32_t i = 0; i < e->ncpus; i++) {
		uint32_t free = 0;

		if (__atomic_compare_exchange_n(&e->cpus[i].claimed, &free, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return (int)i;
	}
	return -1;
}

void mm_epoch_release_cpu(struct mm_epoch *e, uint32_t cpu)
{
	__atomic_store_n(&e->cpus[cpu].claimed, 0, __ATOMIC_RELEASE);
}

// ---- the SLAT engine (mm/s2.h) -------------------------------------------------
int s2_protect(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, unsigned prot)
{
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	int r = s2_protect_locked(vm, root, gpa, size, prot);
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
	return r;
}

unsigned s2_root_refs(const struct s2_root *root)
{
	return __atomic_load_n(&root->refs, __ATOMIC_ACQUIRE);
}

uint64_t s2_slots_generation(struct s2_vm *vm)
{
	return __atomic_load_n(&vm->generation, __ATOMIC_ACQUIRE);
}

void s2_table_free_deferred(struct s2_vm *vm, uint64_t pa)
{
	s2_page_free(vm, pa, 1, true);
}

void s2_vm_set_zap_mode(struct s2_vm *vm, enum s2_zap_mode mode)
{
	__atomic_store_n(&vm->zap_mode, mode, __ATOMIC_RELAXED);
}

struct s2_vm *s2_walk_vm(struct s2_walk *w)
{
	return w->vm;
}

// ---- the memslot tree (mm/slot_tree.h) ---------------------------------------------
int s2_tree_height(const struct s2_tnode *t)
{
	return t ? t->h : 0;
}

// -1: broken (order, stored height or balance); else the height.
static int tree_check(const struct s2_tnode *t, uint64_t lo, uint64_t hi)
{
	if (!t)
		return 0;
	if (t->key < lo || t->key > hi)
		return -1;
	int a = t->key ? tree_check(t->l, lo, t->key - 1) : (t->l ? -1 : 0);
	int b = t->key != UINT64_MAX ? tree_check(t->r, t->key + 1, hi) : (t->r ? -1 : 0);

	if (a < 0 || b < 0 || a - b > 1 || b - a > 1 || t->h != 1 + (a > b ? a : b))
		return -1;
	return t->h;
}

int s2_tree_check(const struct s2_tnode *root)
{
	return tree_check(root, 0, UINT64_MAX) >= 0;
}

// ---- the nested shadow engine (mm/shadow.h) -------------------------------------------
void sh_destroy(struct sh_mmu *m)
{
	if (!m)
		return;
	s2_vm_set_shadow(m->vm, NULL, NULL);
	sh_lock(m);
	sh_zap_all_locked(m);
	// Referenced roots (a caller forgot a put) are freed here too.
	while (m->fifo_head) {
		struct sh_page *sp = m->fifo_head;

		sh_fifo_del(m, sp);
		sh_free_deferred(m, sp);
	}
	mm_epoch_barrier(&m->ep);
	sh_unlock(m);
	sh_slab_destroy(m, &m->sp_slab);
	sh_slab_destroy(m, &m->desc_slab);
	sh_pages_free(m, m->rmap_pa, m->rmap_pages);
	sh_pages_free(m, (uint64_t)(uintptr_t)m,
		      (unsigned)((sizeof(struct sh_mmu) + S2_PAGE_SIZE - 1) / S2_PAGE_SIZE));
}

void sh_set_quota(struct sh_mmu *m, uint64_t max_pages)
{
	uint64_t dflt = m->guest_pages / 50; // sh_create's default

	sh_lock(m);
	m->quota = max_pages ? max_pages : (dflt > SH_MIN_QUOTA ? dflt : SH_MIN_QUOTA);
	sh_unlock(m);
}

void sh_walk_enter(struct sh_mmu *m, unsigned cpu)
{
	mm_epoch_enter(&m->ep, cpu);
}

void sh_walk_exit(struct sh_mmu *m, unsigned cpu)
{
	mm_epoch_exit(&m->ep, cpu);
}

int sh_emulate_write(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t val, unsigned bytes)
{
	return sh_emulate_update(m, as, gpa, bytes, NULL, val, NULL);
}

void sh_translate(struct sh_mmu *m, const struct sh_page *root, uint64_t l2_gpa,
		  struct s2_xlate *out)
{
	const struct s2_fmt *f = m->fmt;
	uint64_t table = root->table_pa;

	*out = (struct s2_xlate){0};
	if (l2_gpa >> m->geom.ia_bits)
		return;
	for (int level = (int)m->geom.root_level; level >= 0; level--) {
		const s2_pte_t *t = (const s2_pte_t *)(uintptr_t)table;
		s2_pte_t e = __atomic_load_n(&t[s2_index(&m->geom, l2_gpa, (unsigned)level)],
					     __ATOMIC_ACQUIRE);

		out->pte = e;
		out->level = (unsigned)level;
		if (!f->is_present(e))
			return;
		if (f->is_leaf(e, (unsigned)level)) {
			out->mapped = true;
			out->prot = f->leaf_prot(e);
			out->mt = f->leaf_memtype(e, m->caps);
			out->hpa = s2_pte_addr(f, e) | (l2_gpa & (S2_PAGE_SIZE - 1));
			return;
		}
		table = s2_pte_addr(f, e);
	}
}
