// SPDX-License-Identifier: Apache-2.0
//
// Nested shadow MMU: roots, the shadow fault (L1's table composed with L1's
// memslots), emulated writes to write-tracked L1 tables, software translation.
#include "mm/shadow_internal.h"

static void store_pte(s2_pte_t *p, s2_pte_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// ---- L1 memory ----------------------------------------------------------------------

static uint64_t *slot_ptr(const struct s2_slot *sl, uint64_t gpa)
{
	return (uint64_t *)(uintptr_t)(s2_slot_page_hpa(sl, gpa) + (gpa & (S2_PAGE_SIZE - 1)));
}

static bool gread(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t *v)
{
	if (m->mem.read64)
		return m->mem.read64(m->mem.ctx, as, gpa, v);
	struct s2_slotset *s = s2_slots_enter(m->vm, as);
	const struct s2_slot *sl = s2_slots_lookup(s, gpa);
	if (sl)
		*v = __atomic_load_n(slot_ptr(sl, gpa), __ATOMIC_RELAXED);
	s2_slots_exit(s);
	return sl != NULL;
}

static bool gwrite(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t v)
{
	if (m->mem.write64)
		return m->mem.write64(m->mem.ctx, as, gpa, v);
	struct s2_slotset *s = s2_slots_enter(m->vm, as);
	const struct s2_slot *sl = s2_slots_lookup(s, gpa);
	if (sl)
		__atomic_store_n(slot_ptr(sl, gpa), v, __ATOMIC_RELAXED);
	s2_slots_exit(s);
	return sl != NULL;
}

// ---- composition with L1's memslots -------------------------------------------------

struct leaf_target {
	uint64_t hpa;
	unsigned prot; // after slot flags and write tracking
	enum s2_memtype mt;
	bool tracked;
	bool readonly;
};

// L1 gfn -> host page through L1's memslots (the caller holds a slot-set reader
// section `ss`, so a concurrent slot delete zaps what we install).
static bool compose(struct sh_mmu *m, struct s2_slotset *ss, unsigned as, uint64_t l1_gfn,
		    unsigned prot, struct leaf_target *lt)
{
	uint64_t gpa = l1_gfn << S2_PAGE_SHIFT;
	const struct s2_slot *sl = s2_slots_lookup(ss, gpa);

	if (!sl)
		return false;
	lt->hpa = s2_slot_page_hpa(sl, gpa);
	if (lt->hpa == S2_HPA_ABSENT)
		return false; // a frame-list slot's page with no frame: not backed now
	lt->mt = (sl->flags & S2_SLOT_DEVICE) ? S2_MT_DEVICE : S2_MT_WB;
	lt->readonly = (sl->flags & S2_SLOT_READONLY) != 0;
	lt->tracked = sh_tracked_locked(m, as, l1_gfn);
	lt->prot = prot;
	if (lt->readonly || lt->tracked)
		lt->prot &= ~(unsigned)S2_PROT_W; // writes to L1's own tables trap
	return true;
}

// Installs (or replaces) the shadow leaf `idx` of level-0 SP `sp`. False
// (nothing changed) when the permissions make no valid leaf (EPT: neither
// read nor execute).
static bool set_leaf(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, uint64_t l1_gfn,
		     const struct leaf_target *lt, struct sh_zap_list *zl)
{
	const struct s2_fmt *f = m->fmt;
	s2_pte_t *p = &sh_table(sp)[idx];
	s2_pte_t nv = f->make_leaf(lt->hpa, 0, lt->prot, lt->mt, m->caps);
	s2_pte_t old = *p;

	if (!f->is_present(nv))
		return false;
	if (old == nv)
		return true;
	if (f->is_present(old)) {
		// Another target, or fewer rights: the old translation must go.
		if (s2_pte_addr(f, old) != lt->hpa || (f->leaf_prot(old) & ~lt->prot))
			zl->flush = true;
		sh_rmap_del(m, sp, idx);
	} else {
		sp->present++;
	}
	store_pte(p, nv);
	sh_rmap_add(m, sp, idx, l1_gfn);
	return true;
}

// ---- write tracking of L1's tables ----------------------------------------------------

// Before the engine reads L1's page `gfn` as a table for a new SP: L1 may no
// longer write it behind the engine's back (a page already shadowed is).
static int protect_table(struct sh_mmu *m, unsigned as, uint64_t gfn)
{
	if (!m->track.protect || sh_tracked_locked(m, as, gfn))
		return 0;
	m->st.protects++;
	return m->track.protect(m->track.ctx, as, gfn);
}

// ---- linking children ---------------------------------------------------------------

static unsigned table_access(const struct sh_mmu *m, s2_pte_t g)
{
	return m->table_access ? m->fmt->leaf_prot(g) : S2_PROT_RWX;
}

// Entry `idx` of `sp` points to the child SP (gfn, role): found or created,
// linked (parent list first, then the entry, published with release after
// the child's table is initialised: I4.6).
static int link_child(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, uint64_t gfn,
		      union sh_role role, struct sh_zap_list *zl, struct sh_page **out)
{
	s2_pte_t *t = sh_table(sp);
	struct sh_page *c;
	bool fresh = false;
	int r;

	if (m->fmt->is_present(t[idx])) {
		c = sp->child[idx];
		if (c->gfn == gfn && c->role.word == role.word) {
			*out = c;
			return 0;
		}
		sh_zap_spte(m, sp, idx, zl); // L1's entry now says something else
	}
	c = sh_hash_find(m, gfn, role);
	if (!c) {
		r = role.direct ? 0 : protect_table(m, role.as, gfn);
		if (!r)
			r = sh_page_new(m, gfn, role, &c);
		if (r)
			return r;
		fresh = true;
	}
	r = sh_parent_add(m, c, sp, idx);
	if (r) {
		if (fresh)
			sh_prepare_zap(m, c, zl);
		return r;
	}
	sp->child[idx] = c;
	store_pte(&t[idx], m->fmt->make_table(c->table_pa));
	sp->present++;
	// The L1 page is now write-tracked: no shadow leaf may let L2 write it.
	if (fresh && !role.direct && sh_write_protect_gfn(m, role.as, gfn))
		zl->flush = true;
	*out = c;
	return 0;
}

// ---- memory pressure --------------------------------------------------------------

// After an operation failed for want of an SP (error r, `tries` retries so far):
// zap the oldest SPs and free their pages. True: retry the operation.
static bool retry_after_reclaim(struct sh_mmu *m, int r, unsigned tries, struct sh_zap_list *zl)
{
	if ((r != S2_E_NOMEM && r != SH_E_NOSPC) || tries >= SH_RECLAIM_TRIES || !sh_reclaim(m, zl))
		return false;
	sh_commit_zap(m, zl);
	return true;
}

// ---- roots ------------------------------------------------------------------------

static union sh_role root_role(const struct sh_mmu *m, unsigned as)
{
	union sh_role role = {0};

	role.level = m->geom.root_level;
	role.access = S2_PROT_RWX;
	role.guest_mode = 1;
	role.as = as;
	return role;
}

int sh_root_get(struct sh_mmu *m, unsigned as, uint64_t root_gpa, struct sh_page **out)
{
	struct sh_zap_list zl = {0};
	uint64_t gfn = root_gpa >> S2_PAGE_SHIFT;
	union sh_role role = root_role(m, as);
	struct sh_page *sp;
	int r = 0;

	if (!m || !out || as >= S2_NR_AS)
		return S2_E_INVAL;
	sh_lock(m);
	// At the root level only roots exist: a hit is a valid root.
	sp = sh_hash_find(m, gfn, role);
	for (unsigned tries = 0; !sp; tries++) {
		sh_make_room(m, &zl);
		r = protect_table(m, as, gfn);
		if (!r)
			r = sh_page_new(m, gfn, role, &sp);
		if (!r) {
			sp->is_root = true;
			if (sh_write_protect_gfn(m, as, gfn))
				zl.flush = true;
			break;
		}
		if (!retry_after_reclaim(m, r, tries, &zl))
			break;
	}
	if (!r) {
		sp->root_count++;
		*out = sp;
	}
	sh_commit_zap(m, &zl);
	sh_unlock(m);
	return r;
}

void sh_root_put(struct sh_mmu *m, struct sh_page *root)
{
	struct sh_zap_list zl = {0};

	sh_lock(m);
	SH_ASSERT(root->is_root && root->root_count > 0);
	if (--root->root_count == 0) {
		if (root->role.invalid) {
			// Already zapped (empty): only the header and pages are left.
			sh_fifo_del(m, root);
			root->zap_next = zl.head;
			zl.head = root;
		} else {
			// Nobody uses it: its tree goes (recursively, I2.1).
			sh_prepare_zap(m, root, &zl);
		}
	}
	sh_commit_zap(m, &zl);
	sh_unlock(m);
}

uint64_t sh_root_pa(const struct sh_page *root)
{
	return root->table_pa;
}

bool sh_root_is_invalid(const struct sh_page *root)
{
	return root->role.invalid;
}

// ---- faults -----------------------------------------------------------------------

struct fault {
	struct sh_mmu *m;
	struct s2_slotset *ss;
	unsigned as, access;
	uint64_t l2_gpa;
	struct sh_fault_info *info;
	struct sh_zap_list *zl;
};

// Level 0: the leaf for L1 gfn `l1_gfn` with the walk's permissions `prot`.
static int fault_leaf(struct fault *ft, struct sh_page *sp, uint32_t idx, uint64_t l1_gfn,
		      unsigned prot)
{
	struct sh_mmu *m = ft->m;
	struct leaf_target lt;

	ft->info->l1_gpa = (l1_gfn << S2_PAGE_SHIFT) | (ft->l2_gpa & (S2_PAGE_SIZE - 1));
	ft->info->present = true; // from here on L1's leaf is present
	if (ft->access & ~prot) {
		m->st.faults_l1++;
		return SH_FAULT_L1; // L1's table denies the access: L1's fault
	}
	if (!compose(m, ft->ss, ft->as, l1_gfn, prot, &lt)) {
		m->st.faults_mmio++;
		return SH_FAULT_MMIO;
	}
	if (!set_leaf(m, sp, idx, l1_gfn, &lt, ft->zl)) {
		m->st.faults_l1++;
		return SH_FAULT_L1; // L1's leaf gives no usable access
	}
	ft->info->hpa = lt.hpa | (ft->l2_gpa & (S2_PAGE_SIZE - 1));
	ft->info->prot = lt.prot;
	if ((ft->access & S2_PROT_W) && !(lt.prot & S2_PROT_W)) {
		if (lt.tracked) {
			m->st.faults_emulate++;
			return SH_FAULT_EMULATE;
		}
		return S2_E_PERM; // read-only slot
	}
	return SH_FAULT_MAPPED;
}

// A present entry of L1's table that the CPU would refuse as malformed.
static bool l1_reserved(const struct sh_mmu *m, s2_pte_t g, unsigned level)
{
	return (g & m->l1_rsvd_mask) ||
	       (level > m->fmt->max_leaf_level && m->fmt->is_leaf(g, level));
}

static int fault_walk(struct fault *ft, struct sh_page *sp)
{
	struct sh_mmu *m = ft->m;
	const struct s2_fmt *f = m->fmt;

	for (;;) {
		unsigned level = sp->role.level;
		uint32_t idx = s2_index(&m->geom, ft->l2_gpa, level);
		unsigned acc = sp->role.access;
		union sh_role role = sp->role;
		uint64_t child_gfn;
		s2_pte_t g = 0;

		if (sp->role.direct) {
			// Inside a large L1 leaf: entry idx covers the next part.
			child_gfn = sp->gfn + ((uint64_t)idx << (S2_LEVEL_BITS * level));
			if (level == 0)
				return fault_leaf(ft, sp, idx, child_gfn, acc);
		} else {
			uint64_t gpa = (sp->gfn << S2_PAGE_SHIFT) + idx * sizeof(s2_pte_t);

			if (!gread(m, ft->as, gpa, &g) || !f->is_present(g)) {
				ft->info->level = level;
				m->st.faults_l1++;
				return SH_FAULT_L1; // L1 has not mapped it: reflect
			}
			if (l1_reserved(m, g, level)) {
				*ft->info = (struct sh_fault_info){
				    .level = level, .present = true, .rsvd = true};
				m->st.faults_l1++;
				return SH_FAULT_L1;
			}
			child_gfn = s2_pte_addr(f, g) >> S2_PAGE_SHIFT;
			if (f->is_leaf(g, level)) {
				acc &= f->leaf_prot(g);
				if (level == 0)
					return fault_leaf(ft, sp, idx, child_gfn, acc);
				role.direct = 1; // split the large L1 leaf with direct SPs
			} else {
				acc &= table_access(m, g);
			}
		}
		role.level = level - 1;
		role.access = acc;
		struct sh_page *c;
		int r = link_child(m, sp, idx, child_gfn, role, ft->zl, &c);
		if (r && r != S2_E_NOMEM && r != SH_E_NOSPC) {
			// track.protect refused L1's next table: it cannot be read.
			*ft->info = (struct sh_fault_info){.level = level - 1};
			m->st.faults_l1++;
			return SH_FAULT_L1;
		}
		if (r)
			return r;
		sp = c;
	}
}

int sh_fault(struct sh_mmu *m, struct sh_page *root, uint64_t l2_gpa, unsigned access,
	     struct sh_fault_info *info)
{
	struct sh_zap_list zl = {0};
	struct sh_fault_info dummy;
	int r;

	if (!info)
		info = &dummy;
	*info = (struct sh_fault_info){0};
	if (l2_gpa >> m->geom.ia_bits)
		return SH_FAULT_L1;
	sh_lock(m);
	m->st.faults++;
	if (root->role.invalid) {
		r = SH_FAULT_RELOAD;
	} else {
		struct fault ft = {.m = m,
				   .as = root->role.as,
				   .access = access,
				   .l2_gpa = l2_gpa,
				   .info = info,
				   .zl = &zl};
		for (unsigned tries = 0;; tries++) {
			sh_make_room(m, &zl);
			ft.ss = s2_slots_enter(m->vm, ft.as);
			r = fault_walk(&ft, root);
			s2_slots_exit(ft.ss);
			if (!retry_after_reclaim(m, r, tries, &zl))
				break;
			*info = (struct sh_fault_info){0};
		}
	}
	sh_commit_zap(m, &zl);
	sh_unlock(m);
	return r;
}

// ---- write tracking -------------------------------------------------------------------

bool sh_gfn_tracked(struct sh_mmu *m, unsigned as, uint64_t gfn)
{
	sh_lock(m);
	bool t = sh_tracked_locked(m, as, gfn);
	sh_unlock(m);
	return t;
}

// An aligned write of a leaf entry of a level-0 SP: install the new
// translation right away (or return false: the caller zaps the entry).
static bool update_leaf(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, s2_pte_t g,
			struct sh_zap_list *zl)
{
	const struct s2_fmt *f = m->fmt;
	struct leaf_target lt;

	if (sp->role.level != 0 || !f->is_present(g) || !f->is_leaf(g, 0))
		return false;
	uint64_t l1_gfn = s2_pte_addr(f, g) >> S2_PAGE_SHIFT;
	struct s2_slotset *ss = s2_slots_enter(m->vm, sp->role.as);
	bool ok = compose(m, ss, sp->role.as, l1_gfn, sp->role.access & f->leaf_prot(g), &lt);
	ok = ok && set_leaf(m, sp, idx, l1_gfn, &lt, zl);
	s2_slots_exit(ss);
	return ok;
}

// Applies L1's write to every SP shadowing the page. Each SP is handled once
// (marked with this operation's sequence); after a zap the bucket is rescanned
// from its head because recursive reclaim may have unhashed its neighbours.
static void shadow_write(struct sh_mmu *m, unsigned as, uint64_t gpa, s2_pte_t word, bool whole,
			 struct sh_zap_list *zl)
{
	uint64_t gfn = gpa >> S2_PAGE_SHIFT;
	uint32_t idx = (uint32_t)((gpa & (S2_PAGE_SIZE - 1)) / sizeof(s2_pte_t));
	uint32_t seq = ++m->op_seq;
	struct sh_page **head = &m->hash[sh_hash_index(gfn)];

restart:
	for (struct sh_page *sp = *head; sp; sp = sp->hash_next) {
		if (sp->mark == seq || sp->gfn != gfn || sp->role.direct || sp->role.as != as)
			continue;
		sp->mark = seq;
		if (whole) {
			m->st.emul_whole++;
			sh_prepare_zap(m, sp, zl);
			goto restart;
		}
		if (update_leaf(m, sp, idx, word, zl)) {
			m->st.emul_updates++;
			continue;
		}
		if (sh_zap_spte(m, sp, idx, zl)) {
			m->st.emul_zaps++;
			goto restart;
		}
	}
}

int sh_emulate_update(struct sh_mmu *m, unsigned as, uint64_t gpa, unsigned bytes,
		      const uint64_t *expect, uint64_t val, uint64_t *old)
{
	struct sh_zap_list zl = {0};
	uint64_t base = gpa & ~7ull, word;
	unsigned off = (unsigned)(gpa & 7);

	if (as >= S2_NR_AS || !bytes || bytes > 8 || (bytes & (bytes - 1)) || off + bytes > 8)
		return S2_E_INVAL;
	sh_lock(m);
	if (!gread(m, as, base, &word)) {
		sh_unlock(m);
		return S2_E_NOENT;
	}
	uint64_t mask = bytes == 8 ? ~0ull : ((1ull << (8 * bytes)) - 1) << (8 * off);
	uint64_t cur = (word & mask) >> (8 * off);
	if (old)
		*old = cur;
	// A compare-exchange that fails writes nothing: no shadow entry changes.
	if (!expect || *expect == cur) {
		m->st.emul_writes++;
		word = (word & ~mask) | ((val << (8 * off)) & mask);
		gwrite(m, as, base, word);
		shadow_write(m, as, base, word, bytes != 8, &zl);
		sh_commit_zap(m, &zl);
	}
	sh_unlock(m);
	return 0;
}

unsigned sh_unprotect_gfn(struct sh_mmu *m, unsigned as, uint64_t gfn)
{
	struct sh_zap_list zl = {0};
	struct sh_page **head = &m->hash[sh_hash_index(gfn)];
	unsigned n = 0;

	if (as >= S2_NR_AS)
		return 0;
	sh_lock(m);
restart:
	for (struct sh_page *sp = *head; sp; sp = sp->hash_next) {
		if (sp->gfn != gfn || sp->role.direct || sp->role.as != as)
			continue;
		m->st.unprotects++;
		n++;
		sh_prepare_zap(m, sp, &zl);
		goto restart; // recursive reclaim may have unhashed its neighbours
	}
	sh_commit_zap(m, &zl);
	if (m->track.unprotect) // no SP shadows the page any more
		m->track.unprotect(m->track.ctx, as, gfn);
	sh_unlock(m);
	return n;
}

// ---- software translation ----------------------------------------------------------------
