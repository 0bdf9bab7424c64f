// SPDX-License-Identifier: Apache-2.0
//
// Private data model of the SLAT engine (mm/ only). Public API: mm/s2.h.
#ifndef SLAT_MM_S2_INTERNAL_H
#define SLAT_MM_S2_INTERNAL_H

#include "mm/s2.h"
#include "mm/slot_tree.h"
#include "mm/sync.h"

// Slot flag kept internal: the slot is being deleted/moved/changed; faults
// see it as absent (and do not cache MMIO markers during the update).
#define S2_SLOT_INVALID 0x8000u

// One slot record, shared by both sets of its address space: the slot (first,
// so lookups hand out &rec->slot) and one node per set in each index. A
// record is never changed while an active set can reach it: a move or flag
// change publishes a new record (mm/slots.c).
struct s2_slot_rec {
	struct s2_slot slot;
	struct s2_tnode by_gpa[2], by_id[2]; // [set index]
	struct s2_slot_rec *free_next;	     // on vm->slot_free only
};

// A slot set: two AVL indexes over records (by gpa: lookup and overlap; by
// id: updates). Written only while inactive and drained of readers.
struct s2_slotset {
	struct s2_vm *vm; // node visits are counted in vm->stats
	uint64_t generation;
	uint32_t readers; // fault paths inside this set (drained after a swap)
	uint32_t n;
	unsigned idx; // 0 or 1: which node of each record belongs to this set
	struct s2_tnode *by_gpa, *by_id;
};

struct s2_root {
	struct s2_root *next; // roots list (readers: mmu lock held; writers: roots_lock)
	struct s2_role role;
	uint64_t pa;	   // root table (geom.root_pages pages)
	uint32_t refs;	   // atomic; 0 = dying, never revived
	uint8_t invalid;   // written only under the mmu lock held for write
	uint8_t scheduled; // invalidated and waiting for the zapper
	// Deferred free of the header and root pages (after unlink, I4.1). Not
	// read by list walkers, so it may be written while they still look.
	struct mm_epoch_node free_node;
	struct s2_vm *vm;
};

// Pages waiting for one grace period (mm/defer.c). The list is linked through
// word 0 of each page: a page address reads "not present" in every format, so
// a lockless walker that still holds the page sees an empty entry.
struct s2_limbo {
	struct mm_epoch_node node;
	struct s2_vm *vm;
	uint64_t head, pages;
	uint32_t busy; // deferred, callback not run yet (atomic)
};
#define S2_LIMBO_SLOTS 4
#define S2_MAX_CPUS    4096

struct s2_vm {
	const struct s2_fmt *fmt;
	struct s2_geom geom;
	unsigned caps, mmio_gen_bits;
	enum s2_zap_mode zap_mode;
	bool root_lock_write; // B3 baseline: root get/put under the write lock (atomic)
	const struct s2_backend *be;
	void *be_ctx;
	unsigned vm_pages;

	struct mm_rwlock mmu_lock;
	struct mm_spinlock slots_lock; // serialises slot updates
	struct mm_spinlock roots_lock; // root list changes

	// Deferred frees: the epoch domain (one slot per CPU, after this struct
	// in the same allocation), pages staged until a limbo slot is free, and
	// the slots whose grace period is running.
	struct mm_epoch epoch;
	unsigned ncpus;
	struct mm_spinlock defer_lock; // staging and limbo slot hand-over
	uint64_t staged_head, staged_pages;
	struct s2_limbo limbo[S2_LIMBO_SLOTS];
	uint64_t defer_pending; // pages deferred, not yet freed (atomic)
	uint64_t yields_nolock; // yields of walks that hold no lock (teardown)

	struct s2_slotset sets[S2_NR_AS][2];
	struct s2_slotset *active[S2_NR_AS]; // atomic pointer into sets
	// Slot records: carved from pages of the page source (linked through
	// their first word), kept on a free list when unused; freed at destroy.
	uint64_t slot_pages;
	struct s2_slot_rec *slot_free;
	unsigned slot_free_n;
	uint64_t generation;	 // atomic; bit 63 = update in progress
	uint32_t zaps_in_flight; // invalid-root zappers running

	struct s2_root *roots;
	const struct s2_shadow_ops *shadow;
	void *shadow_ctx;
	struct s2_stats stats; // relaxed atomic increments
};

#define S2_STAT_ADD(vm, field, n) __atomic_fetch_add(&(vm)->stats.field, (n), __ATOMIC_RELAXED)

// Table accounting (tables_alloc/freed/live/max of struct s2_stats): every
// page counted in is counted out exactly once, when it goes back. Inline:
// every layer counts, base.c and defer.c alike.
static inline void s2_tables_count_alloc(struct s2_vm *vm, uint64_t npages)
{
	uint64_t live = S2_STAT_ADD(vm, tables_live, npages) + npages;
	uint64_t max = __atomic_load_n(&vm->stats.tables_max, __ATOMIC_RELAXED);

	S2_STAT_ADD(vm, tables_alloc, npages);
	// Raise the high-water mark unless a racing allocation raised it higher.
	while (live > max && !__atomic_compare_exchange_n(&vm->stats.tables_max, &max, live, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void s2_tables_count_freed(struct s2_vm *vm, uint64_t npages)
{
	S2_STAT_ADD(vm, tables_freed, npages);
	__atomic_fetch_sub(&vm->stats.tables_live, npages, __ATOMIC_RELAXED);
}

static inline s2_pte_t *s2_table_ptr(uint64_t pa)
{
	return (s2_pte_t *)(uintptr_t)pa;
}
static inline s2_pte_t s2_pte_load(const s2_pte_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
// Release: a new child table's contents are visible before its entry (I4.6).
static inline void s2_pte_store(s2_pte_t *p, s2_pte_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline bool s2_is_table(const struct s2_vm *vm, s2_pte_t e, unsigned level)
{
	return level > 0 && vm->fmt->is_present(e) && !vm->fmt->is_leaf(e, level);
}

// Pages an operation pre-allocated (prepare), consumed while committing.
struct s2_cache {
	uint64_t head; // linked through the first word
	uint64_t n;
};
int s2_cache_topup(struct s2_vm *vm, struct s2_cache *c, uint64_t n);
uint64_t s2_cache_take(struct s2_vm *vm, struct s2_cache *c);
void s2_cache_release(struct s2_vm *vm, struct s2_cache *c);
void s2_cache_put(struct s2_cache *c, uint64_t pa);
int s2_map_locked(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, uint64_t hpa,
		  unsigned prot, enum s2_memtype mt);
struct s2_slotset *s2_slots_enter(struct s2_vm *vm, unsigned as);
void s2_slots_exit(struct s2_slotset *s);
const struct s2_slot *s2_slots_lookup(const struct s2_slotset *s, uint64_t gpa);
// The same, INVALID copies included (a slot in the middle of an update).
const struct s2_slot *s2_slots_lookup_any(const struct s2_slotset *s, uint64_t gpa);

enum s2_lock_mode { S2_LOCK_NONE, S2_LOCK_READ, S2_LOCK_WRITE };

struct s2_walk {
	struct s2_vm *vm;
	struct s2_root *root;
	unsigned flags, min_level;
	enum s2_lock_mode lock;
	s2_visit_fn fn;
	void *ctx;
	uint64_t addr, hi; // next address to visit, end
	unsigned since_check;
	bool progress;
	bool root_invalid; // zaps in this root need no invalidation
	bool need_flush;
	uint64_t fl_lo, fl_hi;
	uint64_t free_head; // emptied tables to free after the flush
	struct s2_cache *cache;
	uint64_t zapped_leaves, zapped_tables;
};

void s2_walk_begin(struct s2_walk *w, struct s2_vm *vm, unsigned flags, enum s2_lock_mode lock);
int s2_walk_root(struct s2_walk *w, struct s2_root *root, uint64_t lo, uint64_t hi,
		 unsigned min_level, s2_visit_fn fn, void *ctx);
// Walks a subtree: `table_pa` holds entries of `level`, its first entry at `base`.
int s2_walk_table(struct s2_walk *w, uint64_t table_pa, unsigned level, uint64_t base, uint64_t lo,
		  uint64_t hi, unsigned min_level, s2_visit_fn fn, void *ctx);
// Issues the one pending invalidation, then frees the queued tables.
void s2_walk_end(struct s2_walk *w);
void s2_walk_flush(struct s2_walk *w);
void s2_walk_note_inval(struct s2_walk *w, uint64_t addr, uint64_t size);
bool s2_walk_remove_table_shared(struct s2_walk *w, const struct s2_walk_entry *e);

// The mmu lock (mm_rwlock) plus the epoch read section on this CPU: every
// holder, reader or writer, is an epoch reader (lock first, then enter; exit,
// then unlock: a reader never waits for the lock inside its section).
void s2_mmu_lock(struct s2_vm *vm, enum s2_lock_mode m);
void s2_mmu_unlock(struct s2_vm *vm, enum s2_lock_mode m);
// A reference taken only while the count is non-zero (false: the root is
// dying, its last holder frees the tree); dropped with s2_root_drop (no
// lock taken, whatever the B3 mode).
bool s2_root_tryget(struct s2_root *r);
void s2_root_drop(struct s2_vm *vm, struct s2_root *root);
void s2_roots_lock(struct s2_vm *vm);
void s2_roots_unlock(struct s2_vm *vm);

// mm/defer.c: the VM's epoch domain.
uint32_t s2_cpu(struct s2_vm *vm);
void s2_defer_init(struct s2_vm *vm, struct mm_epoch_cpu *cpus, unsigned ncpus);
// Queues one unlinked (and flushed) table page for freeing after a grace
// period. Overwrites word 0 only.
void s2_defer_page(struct s2_vm *vm, uint64_t pa);
void s2_defer_root(struct s2_vm *vm, struct s2_root *root);
// s2_reclaim, and when too many pages still wait and the calling CPU is in no
// read section, waits for grace periods (write unlocks, root puts, zapper end).
void s2_reclaim_bounded(struct s2_vm *vm);
// Waits until every deferred page is freed. No read section may be open on
// the calling CPU (VM destroy, root teardown).
void s2_defer_drain(struct s2_vm *vm);

void s2_assert_fail(const char *expr, const char *file, int line);
#define S2_ASSERT(c) ((c) ? (void)0 : s2_assert_fail(#c, __FILE__, __LINE__))

// Zaps [lo, hi) in every root of `as` (valid and invalid): whole leaves that
// intersect, empty tables reclaimed, one flush if a valid root changed.
// Called with the mmu lock held for write.
void s2_zap_range_locked(struct s2_vm *vm, int as, uint64_t lo, uint64_t hi);
void s2_zap_all_locked(struct s2_vm *vm);
uint64_t s2_page_alloc(struct s2_vm *vm, unsigned npages, uint64_t align);
void s2_page_free(struct s2_vm *vm, uint64_t pa, unsigned npages, bool deferred);
void s2_slots_init(struct s2_vm *vm);
void s2_slots_destroy(struct s2_vm *vm);
// Dirty bitmaps (mm/dirty_bitmap.c): a directory page and one page per 32768 slot
// pages, all allocated (0: S2_E_NOMEM, nothing kept) or freed together; the
// fault path marks a page inside its slot-set reader section.
uint64_t s2_dirty_alloc(struct s2_vm *vm, uint64_t slot_pages);
void s2_dirty_free(struct s2_vm *vm, uint64_t dir, uint64_t slot_pages);
void s2_dirty_mark(struct s2_vm *vm, const struct s2_slot *sl, uint64_t gpa);
// The bitmap word that holds page `page`'s bit.
uint64_t *s2_dirty_word(uint64_t dir, uint64_t page);
// The slot with `id` in the active set (slots lock held), or false.
bool s2_slot_by_id(struct s2_vm *vm, unsigned as, uint32_t id, const struct s2_slot **out);
void s2_roots_destroy(struct s2_vm *vm);

#endif
