// SPDX-License-Identifier: Apache-2.0
//
// Nested SLAT: shadow pages (EPT02 / NPT02) for an L2 guest of an L1
// hypervisor. L1 builds its own second-level tables for L2 (EPT12/NPT12, in L1
// memory, L2-physical -> L1-physical); the SLAT engine's VM of L1 (struct s2_vm,
// its memslots) maps L1-physical -> host-physical. This module composes the
// two into shadow tables (L2-physical -> host-physical) that the CPU walks.
// See docs/nested.md for the data model, the algorithms and where each
// invariant (I2.1-I2.5 of the design brief) is kept.
//
// One shadow page (SP) shadows one L1 table page at one level, for one role
// (level, accumulated access, guest mode, direct, address space); SPs are
// found through a 4096-bucket hash keyed by the L1 gfn (role compared too),
// kept on an active FIFO (oldest first) and counted against a quota. The L1
// table pages that SPs shadow are write-tracked: L1's writes to them are
// emulated through sh_emulate_update(), which updates or zaps the shadow entry
// and reclaims, recursively, every nested SP that lost its last parent.
//
// Locking: every function takes the L1 VM's mmu lock for write; callers hold
// no mm lock. The slot hooks (s2_shadow_ops) run under the lock the engine
// already holds. Pages of zapped SPs are freed after one flush and after a
// grace period of the module's epoch domain (mm/sync.h): software walkers
// (tests/unit/mm_queries.c's sh_walk_enter/exit) that may still read a
// zapped table keep it alive.
#ifndef SLAT_MM_SHADOW_H
#define SLAT_MM_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include "mm/s2.h"

#define SH_HASH_BUCKETS 4096 // SP hash, keyed by gfn (design: 4096 buckets)
#define SH_MIN_FREE	5    // evict when fewer SPs than this are left under the quota
#define SH_MIN_QUOTA	64   // quota floor: max(guest pages / 50, 64)
#define SH_MAX_CPUS	64   // software walkers (epoch slots)

// Errors beyond enum s2_err.
#define SH_E_NOSPC (-28) // quota exhausted and only roots in use are left

struct sh_mmu;
struct sh_page;

// Access to L1 memory, 8 bytes at a time (the entries of L1's tables).
// `gpa` is L1-physical and 8-byte aligned; false when it is not backed.
// NULL read64: the module reads through L1's memslots, dereferencing
// slot hpa + offset (identity-mapped host: slat.efi, and hosted tests whose
// slots are backed by buffers).
struct sh_guest_mem {
	bool (*read64)(void *ctx, unsigned as, uint64_t gpa, uint64_t *val);
	bool (*write64)(void *ctx, unsigned as, uint64_t gpa, uint64_t val);
	void *ctx;
};

// Write tracking of L1's table pages (KVM's account_shadowed): L1's writes
// to a page the engine shadows must exit, so that they reach
// sh_emulate_update(). `protect` is called before the engine first reads a
// page as one of L1's tables (when it makes an SP for it), `unprotect` when
// sh_unprotect_gfn() gives a page back to L1. Both run under the engine's
// lock, the L1 VM's mmu lock held for write: an implementation changes L1's
// own map with the *_locked operations (s2_protect_locked), and the lock
// orders it against every shadow change (a shadowed page is never writable).
// protect: 0 once L1 can no longer write the page (every CPU's cached
// translations included); S2_E_NOMEM makes the engine reclaim and retry; any
// other error reads as an L1 table it cannot read (SH_FAULT_L1, not present).
// NULL hooks: L1's writes reach the engine some other way.
struct sh_track_ops {
	int (*protect)(void *ctx, unsigned as, uint64_t gfn);
	void (*unprotect)(void *ctx, unsigned as, uint64_t gfn);
	void *ctx;
};

struct sh_config {
	// Format of L1's tables and of the shadows (EPT12/EPT02 share it).
	// NULL: the L1 VM's format. ia_bits 0: the VM's width. The root must
	// be a single page (no concatenated start tables).
	const struct s2_fmt *fmt;
	unsigned ia_bits;
	// L1 memory in pages: the default quota is max(guest_pages / 50, 64)
	// and the rmap hash is sized from it. 0: SH_MIN_QUOTA * 50.
	uint64_t guest_pages;
	uint64_t quota; // 0: the default above
	// Baseline for benchmarks: do not reclaim orphaned children (the
	// pre-2020 behaviour). Default false: recursive reclaim.
	bool non_recursive;
	// Table entries carry permissions that restrict their subtree (EPT,
	// NPT). Arm64 stage-2 table descriptors carry none: set true there.
	bool tables_carry_no_access;
	struct sh_guest_mem mem;
	struct sh_track_ops track;
	// Bits that must be clear in every present entry of L1's tables (address
	// bits beyond L1's physical width): an entry with one set, or a leaf
	// above the format's largest leaf level, is a reserved-bit fault.
	uint64_t l1_rsvd_mask;
	// Invalidation of the nested translations (INVEPT of the EPT02
	// context, ...). NULL: the L1 VM backend's inval_context.
	void (*flush)(void *ctx, struct s2_vm *vm);
	void *flush_ctx;
};

// Attaches a shadow MMU to the L1 VM (installs the s2_shadow_ops hooks: a
// memslot delete/move zaps SPs shadowing L1 tables in the slot and shadow
// leaves that map it; zap-all and VM teardown zap every SP). Memory comes
// from the VM's page allocator. Slat never detaches one (the unit tests do:
// sh_destroy, tests/unit/mm_queries.c).
int sh_create(struct s2_vm *vm, const struct sh_config *cfg, struct sh_mmu **out);

// Mode switches (take effect for later operations).
void sh_set_recursive(struct sh_mmu *m, bool recursive);

// ---- roots --------------------------------------------------------------------
// The shadow root for L1's table rooted at `root_gpa` (EPTP12 / nCR3 of L1),
// with one reference for the caller. A root is never evicted while
// referenced (I2.5); its last put zaps it (recursively reclaiming its tree).
// A referenced root can be zapped by a memslot change or zap-all: it is then
// invalid (empty; faults answer SH_FAULT_RELOAD) and freed at its last put.
int sh_root_get(struct sh_mmu *m, unsigned as, uint64_t root_gpa, struct sh_page **out);
void sh_root_put(struct sh_mmu *m, struct sh_page *root);
uint64_t sh_root_pa(const struct sh_page *root); // EPTP02 / nCR3 of L2
bool sh_root_is_invalid(const struct sh_page *root);

// ---- faults -------------------------------------------------------------------
enum sh_fault_result {
	SH_FAULT_MAPPED = 0,  // a shadow leaf maps l2_gpa with the access
	SH_FAULT_L1 = 1,      // L1's table does not map it (or denies access): reflect to L1
	SH_FAULT_MMIO = 2,    // L1's table maps it to L1-physical memory no slot backs
	SH_FAULT_EMULATE = 3, // write to a write-tracked L1 page: emulate it
	SH_FAULT_RELOAD = 4,  // the root is invalid: drop it and get a new one
};
// What L1's own walk would have found, for the fault L1 is shown
// (SH_FAULT_L1; AMD's EXITINFO1 P and RSVD bits, EPT's qualification).
struct sh_fault_info {
	unsigned level;	 // L1 level where the walk stopped (SH_FAULT_L1), else 0
	bool present;	 // L1's entry there is present (a permission or reserved-bit fault)
	bool rsvd;	 // ... and has reserved bits set
	uint64_t l1_gpa; // translation of l2_gpa through L1's table (MAPPED, MMIO, EMULATE)
	uint64_t hpa;	 // host-physical (MAPPED)
	unsigned prot;	 // shadow leaf permissions (MAPPED)
};
// Shadow fault at l2_gpa for `access` (S2_PROT_*): walks L1's table from the
// root's gfn, composes each level with L1's memslots and builds the missing
// SPs. When the page source or the quota has no room for an SP, the oldest
// SPs that are not roots in use are zapped and the walk is retried (the L2
// guest refaults what it still uses), so a fault fails only when nothing
// but roots in use is left. Returns enum sh_fault_result, S2_E_NOMEM or
// SH_E_NOSPC (nothing half built: every SP linked so far is complete).
int sh_fault(struct sh_mmu *m, struct sh_page *root, uint64_t l2_gpa, unsigned access,
	     struct sh_fault_info *info);

// ---- write tracking -----------------------------------------------------------
// True when L1's page `gfn` is shadowed (L1's writes to it must be emulated).
bool sh_gfn_tracked(struct sh_mmu *m, unsigned as, uint64_t gfn);
// Emulates L1's write of `bytes` bytes (`val`, little-endian) at L1-physical
// `gpa`: stores it into L1 memory, then, for every SP shadowing that page, an
// aligned 8-byte write updates (leaf) or zaps (anything else) the shadow entry;
// a misaligned or partial write zaps those SPs whole. Children left without a
// parent are reclaimed recursively (unless non-recursive). One flush at most.
// It is one atomic read-modify-write under the engine's lock (an emulated
// MOV, XCHG or CMPXCHG): *old (if given) gets the bytes that were there; with
// `expect`, the write happens only when they equal *expect (a failed compare
// writes nothing and changes no shadow entry).
int sh_emulate_update(struct sh_mmu *m, unsigned as, uint64_t gpa, unsigned bytes,
		      const uint64_t *expect, uint64_t val, uint64_t *old);
// Stops tracking L1's page `gfn`: every SP that shadows it is zapped (with
// recursive reclaim of the children it orphans), then track.unprotect lets
// L1 write the page directly again (an instruction the caller cannot
// emulate, or a page L1 reused for something else). Also right for a page
// whose SPs are already gone (evicted): it is only made writable. Returns
// the SPs zapped.
unsigned sh_unprotect_gfn(struct sh_mmu *m, unsigned as, uint64_t gfn);
// L1 memory [gpa, gpa + size) left L1 without a memslot change (pages the
// L1 VM's owner took away): the same zap as a memslot delete of the range
// (SPs shadowing L1 tables in it, then shadow leaves mapping it; one flush).
void sh_zap_range(struct sh_mmu *m, unsigned as, uint64_t gpa, uint64_t size);

// ---- statistics and checks ----------------------------------------------------
struct sh_stats {
	uint64_t used;		// SPs alive (active list: hashed + invalid roots still referenced)
	uint64_t used_max;	// high-water mark
	uint64_t quota;		// n_max
	uint64_t hashed;	// SPs in the hash
	uint64_t longest_chain; // longest hash bucket (computed)
	uint64_t orphans;	// nested non-root SPs without a parent (computed)
	uint64_t rmap_entries;	// shadow leaves on the rmaps
	uint64_t created, zapped, zapped_orphans, evicted, freed, pending_free;
	uint64_t faults, faults_l1, faults_mmio, faults_emulate;
	uint64_t emul_writes, emul_updates, emul_zaps, emul_whole;
	uint64_t flushes, write_protects, nospc;
	uint64_t nomem;	   // allocations the page source refused
	uint64_t protects; // L1 pages handed to track.protect (first shadow of each)
	uint64_t reclaims; // operations that zapped the oldest SPs to go on (sh_fault, sh_root_get)
	uint64_t slot_zaps;  // SPs zapped because the L1 table they shadow is in a deleted slot
	uint64_t unprotects; // SPs zapped by sh_unprotect_gfn
};
// Also runs the deferred frees that are due (never waits).
void sh_stats(struct sh_mmu *m, struct sh_stats *out);
// SPs zapped so far (a lock-free read of one counter, for timing a zap).
uint64_t sh_zapped_total(const struct sh_mmu *m);

// Checks the invariants (I2.4 hash/active/live agreement, parent lists against
// the entries that point to children, rmaps against the leaves, I2.1 no orphan
// in recursive mode). Returns 0, or the number of violations (each logged).
int sh_check(struct sh_mmu *m);

#endif
