// SPDX-License-Identifier: Apache-2.0
//
// Queries and conveniences of the SLAT engine (mm/) that only the unit tests
// use: defined in tests/unit/mm_queries.c, linked into the hosted library,
// and kept out of slat.efi (its TCB) because nothing there calls them.
#ifndef SLAT_TESTS_MM_QUERIES_H
#define SLAT_TESTS_MM_QUERIES_H

#include "mm/s2.h"
#include "mm/shadow.h"
#include "mm/slot_tree.h"
#include "mm/sync.h"

// mm/sync.h's locks and epochs.
bool mm_spin_trylock(struct mm_spinlock *l);	     // true: acquired (never waits)
bool mm_spin_is_locked(const struct mm_spinlock *l); // for assertions
bool mm_rwlock_is_locked(const struct mm_rwlock *l); // held in any mode (by anyone)
void mm_rwlock_stats_reset(struct mm_rwlock *l);     // only while nobody uses the lock
// A free epoch slot for the calling thread (-1: none left); released when the
// thread stops using the domain (outside any read section). slat.efi uses its
// physical CPU index directly instead.
int mm_epoch_claim_cpu(struct mm_epoch *e);
void mm_epoch_release_cpu(struct mm_epoch *e, uint32_t cpu);

// mm/s2.h: s2_protect_locked under the VM's MMU lock (write).
int s2_protect(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, unsigned prot);
unsigned s2_root_refs(const struct s2_root *root);
uint64_t s2_slots_generation(struct s2_vm *vm);		    // bumped by every slot update
void s2_table_free_deferred(struct s2_vm *vm, uint64_t pa); // a table page after a grace period
void s2_vm_set_zap_mode(struct s2_vm *vm, enum s2_zap_mode mode);
struct s2_vm *s2_walk_vm(struct s2_walk *w);

// mm/slot_tree.h: the tree's height, and whether it is ordered and balanced
// with the heights it stores.
int s2_tree_height(const struct s2_tnode *t);
int s2_tree_check(const struct s2_tnode *root);

// mm/shadow.h.
void sh_destroy(struct sh_mmu *m);			 // every shadow page, the MMU itself
void sh_set_quota(struct sh_mmu *m, uint64_t max_pages); // 0: the default
// A lockless reader's section (the epoch slot `cpu`) around sh_translate.
void sh_walk_enter(struct sh_mmu *m, unsigned cpu);
void sh_walk_exit(struct sh_mmu *m, unsigned cpu);
// L1's write of `bytes` bytes of `val` at gpa, emulated (sh_emulate_update).
int sh_emulate_write(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t val, unsigned bytes);
// Where the shadow tables under `root` map an L2 address, read as the CPU would.
void sh_translate(struct sh_mmu *m, const struct sh_page *root, uint64_t l2_gpa,
		  struct s2_xlate *out);

#endif
