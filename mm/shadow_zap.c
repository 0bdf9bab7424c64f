// SPDX-License-Identifier: Apache-2.0
//
// Zapping shadow entries and shadow pages, recursive reclaim of orphaned
// nested children, the quota, and the memslot hooks.
//
// prepare/commit: sh_prepare_zap() unlinks an SP from everything (its entries,
// its parents' entries, the hash, the FIFO) and queues it on a zap list;
// sh_commit_zap() issues at most one flush for everything the operation
// cleared, then hands the queued SPs to the epoch domain, which frees their
// pages once every software walker that could still see them has left (I2.3).
// All of it runs under the L1 VM's mmu lock held for write.
#include "mm/shadow_internal.h"

static void store_pte(s2_pte_t *p, s2_pte_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// Clears entry `idx` of `sp`. A leaf leaves its rmap; a table entry leaves the
// child's parent list, and a nested child without any parent left is zapped
// right here, recursively (I2.1: depth bounded by the number of levels, since
// a child is always one level below its parent). Returns whether a present
// entry was cleared.
bool sh_zap_spte(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, struct sh_zap_list *zl)
{
	s2_pte_t *t = sh_table(sp);

	if (!m->fmt->is_present(t[idx]))
		return false;
	store_pte(&t[idx], 0);
	sp->present--;
	zl->flush = true;
	if (sp->role.level == 0) {
		sh_rmap_del(m, sp, idx);
		return true;
	}
	struct sh_page *c = sp->child[idx];
	sp->child[idx] = NULL;
	sh_parent_del(m, c, sp, idx);
	// I2.2: a child with another parent left survives.
	if (m->recursive && c->parents.n == 0 && c->role.guest_mode && !c->is_root) {
		m->st.zapped_orphans++;
		sh_prepare_zap(m, c, zl);
	}
	return true;
}

void sh_prepare_zap(struct sh_mmu *m, struct sh_page *sp, struct sh_zap_list *zl)
{
	struct sh_pref r;

	if (sp->zapped)
		return;
	sp->zapped = true;
	m->st.zapped++;
	for (uint32_t i = 0; i < S2_PTES && sp->present; i++)
		sh_zap_spte(m, sp, i, zl);
	// Clear the entries that point at this SP.
	while (sh_parent_first(sp, &r)) {
		store_pte(&sh_table(r.sp)[r.idx], 0);
		r.sp->present--;
		r.sp->child[r.idx] = NULL;
		sh_parent_del(m, sp, r.sp, r.idx);
		zl->flush = true;
	}
	sh_unhash(m, sp);
	if (sp->is_root && sp->root_count) {
		// A vCPU still points at it: keep it (empty, invalid, on the FIFO,
		// never hashed) until its last put.
		sp->role.invalid = 1;
		return;
	}
	sh_fifo_del(m, sp);
	sp->zap_next = zl->head;
	zl->head = sp;
}

static void flush(struct sh_mmu *m)
{
	struct s2_vm *vm = m->vm;

	if (m->flush_fn)
		m->flush_fn(m->flush_ctx, vm);
	else
		vm->be->inval_context(vm->be_ctx, vm);
	S2_STAT_ADD(vm, inval_context, 1);
	m->st.flushes++;
}

void sh_commit_zap(struct sh_mmu *m, struct sh_zap_list *zl)
{
	if (zl->flush)
		flush(m); // one flush for everything the operation cleared
	zl->flush = false;
	while (zl->head) {
		struct sh_page *sp = zl->head;

		zl->head = sp->zap_next;
		sh_free_deferred(m, sp);
	}
	mm_epoch_poll(&m->ep);
}

// Quota: when fewer than SH_MIN_FREE SPs are left, zap the oldest SPs that no
// vCPU uses as a root (I2.5: roots in use are never evicted). With only roots
// left the allocation that follows fails with SH_E_NOSPC.
int sh_make_room(struct sh_mmu *m, struct sh_zap_list *zl)
{
	while (m->used + SH_MIN_FREE > m->quota) {
		struct sh_page *sp = m->fifo_head;

		while (sp && (sp->is_root || sp->zapped))
			sp = sp->next;
		if (!sp)
			break;
		m->st.evicted++;
		sh_prepare_zap(m, sp, zl);
	}
	return 0;
}

// Memory pressure: the page source had no page for a new SP (S2_E_NOMEM: the
// pages are shared with every other table of the machine) or the quota holds
// nothing but what sh_make_room may not evict. Zap the oldest quarter of the
// SPs no vCPU uses as a root (at least SH_MIN_FREE), as KVM zaps its oldest
// shadow pages at its limit: their L2 guests refault what they still use.
// The caller commits, which frees the pages once no software walker can see
// them, and retries. Returns the SPs evicted; 0 when only roots in use are
// left (then the failure stands).
unsigned sh_reclaim(struct sh_mmu *m, struct sh_zap_list *zl)
{
	uint64_t want = m->used / 4 > SH_MIN_FREE ? m->used / 4 : SH_MIN_FREE;
	uint64_t before = m->st.zapped;

	for (struct sh_page *sp = m->fifo_head; sp && m->st.zapped - before < want;) {
		if (sp->is_root || sp->zapped) {
			sp = sp->next;
			continue;
		}
		m->st.evicted++;
		sh_prepare_zap(m, sp, zl);
		sp = m->fifo_head; // the zap may have unlinked any of the others
	}
	if (m->st.zapped != before)
		m->st.reclaims++;
	return (unsigned)(m->st.zapped - before);
}

void sh_zap_all_locked(struct sh_mmu *m)
{
	struct sh_zap_list zl = {0};

	for (;;) {
		struct sh_page *sp = m->fifo_head;

		while (sp && sp->zapped) // invalid roots still referenced
			sp = sp->next;
		if (!sp)
			break;
		sh_prepare_zap(m, sp, &zl);
	}
	sh_commit_zap(m, &zl);
}

bool sh_tracked_locked(struct sh_mmu *m, unsigned as, uint64_t gfn)
{
	for (struct sh_page *sp = m->hash[sh_hash_index(gfn)]; sp; sp = sp->hash_next) {
		if (sp->gfn == gfn && !sp->role.direct && sp->role.as == as)
			return true;
	}
	return false;
}

// A page that became write-tracked may be mapped writable by shadow leaves
// (L2 mapping L1's table page): make them read-only. True if one changed.
bool sh_write_protect_gfn(struct sh_mmu *m, unsigned as, uint64_t gfn)
{
	const struct s2_fmt *f = m->fmt;
	bool changed = false;

	for (struct sh_rmap *n = *sh_rmap_bucket(m, gfn); n; n = n->next) {
		if (n->gfn != gfn || n->sp->role.as != as)
			continue;
		s2_pte_t *p = &sh_table(n->sp)[n - n->sp->rmap];
		unsigned prot = f->leaf_prot(*p);

		if (!(prot & S2_PROT_W))
			continue;
		store_pte(p, f->make_leaf(s2_pte_addr(f, *p), 0, prot & ~S2_PROT_W,
					  f->leaf_memtype(*p, m->caps), m->caps));
		m->st.write_protects++;
		changed = true;
	}
	return changed;
}

// Zaps every shadow leaf of `as` that maps an L1 gfn in [lo, hi).
static void zap_leaves_in(struct sh_mmu *m, unsigned as, uint64_t lo, uint64_t hi,
			  struct sh_zap_list *zl)
{
	bool per_gfn = hi - lo <= m->rmap_mask + 1;
	uint64_t from = per_gfn ? lo : 0, to = per_gfn ? hi : m->rmap_mask + 1;

	for (uint64_t k = from; k < to; k++) {
		struct sh_rmap **pp = per_gfn ? sh_rmap_bucket(m, k) : &m->rmap_hash[k];

		while (*pp) {
			struct sh_rmap *n = *pp;

			if (n->gfn >= lo && n->gfn < hi && n->sp->role.as == as) {
				// Unlinks n from this chain: *pp moves on by itself.
				sh_zap_spte(m, n->sp, (uint32_t)(n - n->sp->rmap), zl);
				continue;
			}
			pp = &n->next;
		}
	}
}

// Memslot delete/move of [gpa, gpa + size) (mmu lock held for write): SPs that
// shadow L1 tables inside the range go first (I1.5), then shadow leaves that
// map it. Our own one flush covers both: shadow translations are tagged by
// L2 addresses, which a range invalidation of L1 addresses would not cover.
static bool slot_zap_range(void *ctx, struct s2_vm *vm, unsigned as, uint64_t gpa, uint64_t size)
{
	struct sh_mmu *m = ctx;
	struct sh_zap_list zl = {0};
	uint64_t lo = gpa >> S2_PAGE_SHIFT, hi = (gpa + size + S2_PAGE_SIZE - 1) >> S2_PAGE_SHIFT;

	for (unsigned b = 0; b < SH_HASH_BUCKETS; b++) {
		struct sh_page *sp = m->hash[b];

		while (sp) {
			if (!sp->role.direct && sp->role.as == as && sp->gfn >= lo &&
			    sp->gfn < hi) {
				m->st.slot_zaps++;
				sh_prepare_zap(m, sp, &zl);
				sp = m->hash[b]; // the zap may have unhashed others here
				continue;
			}
			sp = sp->hash_next;
		}
	}
	zap_leaves_in(m, as, lo, hi, &zl);
	sh_commit_zap(m, &zl);
	return false;
}

void sh_zap_range(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t size)
{
	if (as >= S2_NR_AS || !size)
		return;
	sh_lock(m);
	slot_zap_range(m, m->vm, as, gpa, size);
	sh_unlock(m);
}

static void slot_destroy_all(void *ctx, struct s2_vm *vm)
{
	sh_zap_all_locked(ctx);
}

const struct s2_shadow_ops sh_slot_ops = {
    .zap_range = slot_zap_range,
    .destroy_all = slot_destroy_all,
};
