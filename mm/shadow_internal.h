// SPDX-License-Identifier: Apache-2.0
//
// Private data model of the nested shadow MMU (mm/shadow*.c). See shadow.h
// and docs/nested.md.
#ifndef SLAT_MM_SHADOW_INTERNAL_H
#define SLAT_MM_SHADOW_INTERNAL_H

#include "mm/s2_internal.h"
#include "mm/shadow.h"
#include "mm/sync.h"

// Role: what a shadow page is, beyond its gfn. Two SPs with the same gfn and
// different roles are different SPs (e.g. the same L1 page used as a table at
// two levels, or reached with different accumulated access).
union sh_role {
	uint32_t word;
	struct {
		uint32_t level : 3;	 // level of the entries of this SP's table
		uint32_t access : 3;	 // S2_PROT_* accumulated from the parent entries
		uint32_t guest_mode : 1; // shadows a nested (L2) translation: always 1 here
		uint32_t direct : 1;	 // no L1 table behind it (splits a large L1 leaf)
		uint32_t as : 4;	 // address space
		uint32_t invalid : 1;	 // zapped root still referenced; never hashed
		uint32_t unused : 19;
	};
};

// One parent entry pointing at an SP: entry `idx` of parent `sp`.
struct sh_pref {
	struct sh_page *sp;
	uint32_t idx;
};

#define SH_PDESC_N 7
struct sh_pdesc {
	struct sh_pdesc *next;
	uint32_t n;
	struct sh_pref e[SH_PDESC_N];
};

// Inline single parent, spilling to a chain of descriptors from the second.
struct sh_parents {
	uint32_t n;	       // total
	struct sh_pref one;    // valid when n >= 1
	struct sh_pdesc *more; // the n - 1 others
};

// Reverse map node of one shadow leaf: entry (node - sp->rmap) of `sp` maps
// L1 gfn `gfn`. Chained in the rmap hash bucket of gfn.
struct sh_rmap {
	struct sh_rmap *next;
	struct sh_page *sp;
	uint64_t gfn;
};

struct sh_page {
	struct sh_page *hash_next;   // SP hash chain
	struct sh_page *prev, *next; // active FIFO (head: oldest)
	union sh_role role;
	uint32_t root_count; // references of vCPUs using it as a root
	uint64_t gfn;	     // L1 gfn of the shadowed table (direct: of the large page part)
	uint64_t table_pa;   // the shadow table page
	uint32_t present;    // present entries
	uint32_t mark;	     // scratch for iterations (op sequence)
	bool is_root;
	bool zapped;
	struct sh_parents parents;
	// level > 0: child SP of each table entry; level 0: rmap node of each leaf.
	union {
		struct sh_page **child;
		struct sh_rmap *rmap;
	};
	uint64_t meta_pa;
	unsigned meta_pages;
	struct sh_page *zap_next; // on a zap list between prepare and commit
	struct mm_epoch_node free_node;
	struct sh_mmu *m;
};

// Fixed-size object allocator on pages of the VM's page source.
struct sh_slab {
	uint32_t obj_size;
	void *free;	// free objects, linked through their first word
	uint64_t pages; // slab pages, linked through their first word
	uint64_t live;	// objects handed out
};

struct sh_zap_list {
	struct sh_page *head;
	bool flush; // a present shadow entry was cleared
};

struct sh_mmu {
	struct s2_vm *vm;
	const struct s2_fmt *fmt;
	struct s2_geom geom;
	unsigned caps;
	bool recursive;
	bool table_access; // table entries restrict access (x86)
	uint64_t quota;
	uint64_t guest_pages;
	struct sh_guest_mem mem;
	struct sh_track_ops track;
	uint64_t l1_rsvd_mask;
	void (*flush_fn)(void *ctx, struct s2_vm *vm);
	void *flush_ctx;

	struct sh_page *hash[SH_HASH_BUCKETS];
	struct sh_page *fifo_head, *fifo_tail;
	uint64_t used;

	struct sh_rmap **rmap_hash;
	uint64_t rmap_mask;
	uint64_t rmap_pa;
	unsigned rmap_pages;

	struct sh_slab sp_slab, desc_slab;
	uint32_t op_seq;

	struct mm_epoch ep;
	struct mm_epoch_cpu ep_cpus[SH_MAX_CPUS];

	struct sh_stats st; // counters (computed fields filled by sh_stats)
};

// Internal assertion: the engine's assert hook (tests record), else a trap.
void sh_assert_fail(const char *expr, const char *file, int line);
#define SH_ASSERT(c) ((c) ? (void)0 : sh_assert_fail(#c, __FILE__, __LINE__))
void sh_free_deferred(struct sh_mmu *m, struct sh_page *sp);

// shadow.c: structures
unsigned sh_hash_index(uint64_t gfn);
struct sh_page *sh_hash_find(struct sh_mmu *m, uint64_t gfn, union sh_role role);
int sh_page_new(struct sh_mmu *m, uint64_t gfn, union sh_role role, struct sh_page **out);
void sh_unhash(struct sh_mmu *m, struct sh_page *sp);
void sh_fifo_del(struct sh_mmu *m, struct sh_page *sp);
int sh_parent_add(struct sh_mmu *m, struct sh_page *child, struct sh_page *p, uint32_t idx);
void sh_parent_del(struct sh_mmu *m, struct sh_page *child, struct sh_page *p, uint32_t idx);
bool sh_parent_first(const struct sh_page *sp, struct sh_pref *out);
void sh_rmap_add(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, uint64_t gfn);
void sh_rmap_del(struct sh_mmu *m, struct sh_page *sp, uint32_t idx);
struct sh_rmap **sh_rmap_bucket(struct sh_mmu *m, uint64_t gfn);
// Backend pages (metadata, hash) and the object slab's pages.
uint64_t sh_pages_alloc(struct sh_mmu *m, unsigned n);
void sh_pages_free(struct sh_mmu *m, uint64_t pa, unsigned n);
void sh_slab_destroy(struct sh_mmu *m, struct sh_slab *s);
void sh_lock(struct sh_mmu *m);
void sh_unlock(struct sh_mmu *m);
s2_pte_t *sh_table(const struct sh_page *sp);

// shadow_zap.c: zapping and reclaim
bool sh_zap_spte(struct sh_mmu *m, struct sh_page *sp, uint32_t idx, struct sh_zap_list *zl);
void sh_prepare_zap(struct sh_mmu *m, struct sh_page *sp, struct sh_zap_list *zl);
void sh_commit_zap(struct sh_mmu *m, struct sh_zap_list *zl);
int sh_make_room(struct sh_mmu *m, struct sh_zap_list *zl);
unsigned sh_reclaim(struct sh_mmu *m, struct sh_zap_list *zl);
// Allocation failures an operation survives by reclaiming before it gives up.
#define SH_RECLAIM_TRIES 3
void sh_zap_all_locked(struct sh_mmu *m);
bool sh_write_protect_gfn(struct sh_mmu *m, unsigned as, uint64_t gfn);
bool sh_tracked_locked(struct sh_mmu *m, unsigned as, uint64_t gfn);
extern const struct s2_shadow_ops sh_slot_ops;

#endif
