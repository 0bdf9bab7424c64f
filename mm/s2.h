// SPDX-License-Identifier: Apache-2.0
//
// The SLAT engine's public interface: VMs, roots, memslots, map/unmap/protect,
// faults, teardown, the identity map for primary VMs, and the generic walker
// (for mm/ itself and for the nested shadow code). See docs/mm.md.
// mm/s2.c holds the VM object; each section names the file that implements it.
//
// Locking: every function takes the locks it needs; callers hold none.
// Errors are negative S2_E_* values; 0 is success.
#ifndef SLAT_MM_S2_H
#define SLAT_MM_S2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/s2_backend.h"
#include "mm/s2_fmt.h"

enum s2_err {
	S2_OK = 0,
	S2_E_INVAL = -1,     // bad argument (NULL, unknown flag, bad ia_bits)
	S2_E_UNALIGNED = -2, // address or size not 4 KiB aligned
	S2_E_ZERO = -3,	     // zero-sized slot or range
	S2_E_RANGE = -4,     // beyond the format's input address width
	S2_E_OVERLAP = -5,   // overlaps another slot of the address space
	S2_E_EXIST = -6,     // slot id already used
	S2_E_NOENT = -7,     // no such slot
	S2_E_NOMEM = -8,     // page allocation failed: nothing changed
	S2_E_FULL = -9,	     // too many slots
	S2_E_AS = -10,	     // address space id out of range
	S2_E_PERM = -11,     // access not allowed by the slot (write to read-only)
	S2_E_INTERNAL = -12, // an engine invariant broke (a bug): see the log
};

#define S2_NR_AS       2     // address spaces per VM (normal, SMM-like)
#define S2_MAX_SLOTS   32764 // slots per address space (Linux 6.1 KVM_CAP_NR_MEMSLOTS)
#define S2_YIELD_EVERY 512   // a yieldable walk checks need_resched at least this often

enum s2_zap_mode {
	S2_ZAP_SLOT = 0, // default: slot delete/move zaps the slot's range only
	S2_ZAP_ALL = 1,	 // A/B mode: invalidate all roots, zap them entirely
};

struct s2_vm_config {
	const struct s2_fmt *fmt;
	unsigned ia_bits;	// 0: fmt->max_ia_bits
	unsigned caps;		// enabled S2_CAP_* (subset of fmt->caps)
	unsigned mmio_gen_bits; // 0: fmt->mmio_gen_bits (tests use few bits)
	enum s2_zap_mode zap_mode;
	const struct s2_backend *be;
	void *be_ctx;
	// CPU slots of the VM's epoch domain (deferred frees): every CPU that
	// calls into the engine passes its slot through be->cpu_index. 0: 1.
	unsigned ncpus;
};

// Counters of everything the engine did (per VM). The backend counts what it
// received independently; these are for reports and benchmarks.
struct s2_stats {
	uint64_t inval_context, inval_range, inval_range_pages;
	uint64_t cmo_calls, cmo_bytes;
	// Table pages: root pages and root headers count as tables here, so
	// tables_live == tables_alloc - tables_freed; tables_max is the highest
	// tables_live ever reached (exact: updated at every allocation).
	uint64_t tables_alloc, tables_freed, tables_deferred, tables_live, tables_max;
	uint64_t leaves_mapped[S2_MAX_LEVELS];
	uint64_t leaves_zapped, tables_zapped, splits, collapses, bbm;
	uint64_t yield_checks, yields, restarts, max_entries_between_checks;
	uint64_t faults, faults_mmio, faults_retry, markers, zap_all, slot_updates;
	// Slot index nodes looked at by lookups, checks and updates (O(log n) each).
	uint64_t slot_visits;
	// From the mm/sync.h statistics: mmu rwlock acquisitions (read, write),
	// acquisitions that had to wait (mmu lock either mode + roots spinlock).
	// `yields` above: walker yields (those that dropped the mmu lock are the
	// rwlock's yields, plus yields of lockless teardown walks).
	uint64_t lock_read, lock_write, lock_contended;
	uint64_t roots_alloc, roots_freed;
	// Deferred frees (mm_epoch): grace periods ended, pages still waiting.
	uint64_t grace_periods, deferred_pending;
	// Dirty logging (mm/dirty.c): pages the fault path marked dirty, pages
	// a harvest reported, leaves it write-protected again.
	uint64_t dirty_marked, dirty_reported, dirty_protected;
};

struct s2_vm;
struct s2_root;

// ---- VM (mm/s2.c; deferred frees mm/defer.c) -------------------------------
int s2_vm_create(const struct s2_vm_config *cfg, struct s2_vm **out);
// Zaps everything, frees every root, table and slot array (teardown rules:
// no per-leaf invalidation, no CMO, at most one context invalidation).
void s2_vm_destroy(struct s2_vm *vm);
const struct s2_geom *s2_vm_geom(const struct s2_vm *vm);
const struct s2_fmt *s2_vm_fmt(const struct s2_vm *vm);
unsigned s2_vm_caps(const struct s2_vm *vm);
void s2_vm_stats(struct s2_vm *vm, struct s2_stats *out);

// Deferred frees. Table pages and root headers that a walker might still
// read are freed only after a grace period of the VM's epoch domain that
// starts after they were unlinked (I4.1). Readers: every mmu lock section,
// s2_translate, and any lockless reader that brackets its reads with
// s2_read_enter/exit (on the CPU slot be->cpu_index gives; sections nest).
void s2_read_enter(struct s2_vm *vm);
void s2_read_exit(struct s2_vm *vm);
// Frees what is due (never waits; runs anywhere, also inside a read
// section, where it cannot end a grace period that section holds back).
// The engine calls it itself after writes and zaps; callers may call it at
// idle points. Returns the pages still waiting.
uint64_t s2_reclaim(struct s2_vm *vm);

// Optional hooks of the nested shadow code (mm/shadow*). Called with the mmu
// lock held for write.
struct s2_shadow_ops {
	// Zap shadow pages that shadow guest tables in [gpa, gpa + size) of
	// address space `as`, and shadow leaves that map it. Returns true when a
	// live (valid-root) entry changed: the caller's one flush covers it.
	bool (*zap_range)(void *ctx, struct s2_vm *vm, unsigned as, uint64_t gpa, uint64_t size);
	// Everything goes (VM teardown, zap-all).
	void (*destroy_all)(void *ctx, struct s2_vm *vm);
};
void s2_vm_set_shadow(struct s2_vm *vm, const struct s2_shadow_ops *ops, void *ctx);

// ---- roots (mm/roots.c) ----------------------------------------------------
// A root's role: the address space (and room for more role bits).
struct s2_role {
	uint16_t as;
	uint16_t kind; // 0 for the direct (non-nested) map
};

// Returns a valid root of `role` with one reference for the caller (a vCPU),
// allocating it (with a second reference for the MMU) when none exists.
// Never returns an invalid root. S2_E_NOMEM when allocation fails.
int s2_root_get(struct s2_vm *vm, struct s2_role role, struct s2_root **out);
// Drops the caller's reference. The last reference may drop only on an
// invalid root (asserts otherwise); the root is freed after a grace period.
void s2_root_put(struct s2_vm *vm, struct s2_root *root);
uint64_t s2_root_pa(const struct s2_root *root); // for EPTP/nCR3/VTTBR
bool s2_root_is_invalid(const struct s2_root *root);
// Marks every root invalid and scheduled for zapping (mmu lock for write),
// asks vCPUs to drop them (backend kick_reload), then zaps them under the
// read lock. Returns after the zap is done.
void s2_roots_invalidate_all(struct s2_vm *vm);
// The two halves of the above (tests, and the zap-all slot path).
void s2_roots_mark_invalid(struct s2_vm *vm);
void s2_roots_zap_invalid(struct s2_vm *vm);

// ---- memslots (mm/slots.c) ---------------------------------------------------
enum {
	S2_SLOT_READONLY = 1u << 0,  // writes fault with S2_E_PERM (emulated)
	S2_SLOT_DEVICE = 1u << 1,    // mapped as device memory (pass-through MMIO)
	S2_SLOT_DIRTY_LOG = 1u << 2, // writes are logged per page (mm/dirty.c; not with DEVICE)
};

// A slot's memory as a list of host frames (secondary VMs: the pages the
// VMM pinned) rather than one contiguous range. Owned by the caller; it must
// stay valid and unchanged until the slot's delete has returned.
struct s2_backing {
	// Host-physical address of the slot's page `index` (< size / 4 KiB), or
	// S2_HPA_ABSENT for a page that has no frame yet (a fault on it answers
	// S2_FAULT_ABSENT: the owner fills it and the guest retries).
	uint64_t (*page_hpa)(const struct s2_backing *b, uint64_t index);
	// True when pages [index, index + n) are contiguous in host memory.
	bool (*contiguous)(const struct s2_backing *b, uint64_t index, uint64_t n);
	unsigned max_level; // largest leaf level the fault path tries (1: 2 MiB)
};

struct s2_slot {
	uint32_t id;
	uint16_t as;
	uint16_t flags;			  // S2_SLOT_*; bit 15 internal (being changed)
	uint64_t gpa;			  // guest-physical base
	uint64_t size;			  // bytes
	uint64_t hpa;			  // backing host-physical base (0 when `backing` is set)
	const struct s2_backing *backing; // NULL: contiguous from hpa
	uint64_t dirty_dir;		  // S2_SLOT_DIRTY_LOG: the bitmap's directory page
};

// Host-physical address of the page of `sl` that holds `gpa` (inside the slot).
static inline uint64_t s2_slot_page_hpa(const struct s2_slot *sl, uint64_t gpa)
{
	uint64_t off = (gpa - sl->gpa) & ~4095ull;

	return sl->backing ? sl->backing->page_hpa(sl->backing, off >> 12) : sl->hpa + off;
}

// Every request is checked before anything changes: unaligned, zero-sized,
// out-of-range (gpa + size beyond the input width), overlapping, duplicate or
// unknown ids give their own error and no change.
int s2_slot_add(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t gpa, uint64_t size,
		uint64_t hpa, unsigned flags);
// The same with a frame list (`b` checked by the caller: every frame RAM the
// VM may map); faults map the largest leaf, up to b->max_level, whose pages
// are contiguous and aligned in host memory.
int s2_slot_add_backed(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t gpa, uint64_t size,
		       const struct s2_backing *b, unsigned flags);
#define S2_HPA_ABSENT (~0ull)
// Pages [first, first + n) of frame-list slot `id`, which the caller has just
// made absent in its backing: returns once no fault that read their old
// frames can still install them (the slot readers are drained) and no root
// maps them (slot-scoped zap of the range, one flush). A leaf that covers
// more than the range goes whole; the rest refaults. Zap-all mode zaps all.
int s2_slot_zap_pages(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n);
// Delete and move return only once no root maps the old range any more (and
// the translation caches are flushed).
int s2_slot_delete(struct s2_vm *vm, unsigned as, uint32_t id);
int s2_slot_move(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t new_gpa);
int s2_slot_set_flags(struct s2_vm *vm, unsigned as, uint32_t id, unsigned flags);
// ---- dirty logging (mm/dirty.c) ------------------------------------------------
// A slot with S2_SLOT_DIRTY_LOG (given at add or with s2_slot_set_flags,
// which zaps the slot once: every page refaults) is mapped with 4 KiB leaves;
// a read fault maps the page read-only, a write fault maps it writable and
// sets its bit in the slot's bitmap. Bit i of the bitmap is the slot's page
// i (KVM_GET_DIRTY_LOG's layout: 64 pages a word, LSB first). Slots larger
// than S2_DIRTY_MAX_PAGES pages cannot log (S2_E_RANGE).
#define S2_DIRTY_MAX_PAGES (512ull * 4096 * 8) // 64 GiB: one directory page
// Pages [first, first + n) of the slot: their bits into out[] (bit i: page
// first + i); with `clear`, also cleared in the bitmap, and exactly the pages
// reported write-protected, in every root, with one flush, before returning
// (KVM_GET_DIRTY_LOG). `first` a multiple of 64; n a multiple of 64 or
// reaching the slot's end (S2_E_INVAL otherwise, as KVM); zero or beyond the
// slot S2_E_RANGE. S2_E_INVAL also when the slot does not log.
int s2_slot_dirty_get(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
		      uint64_t *out, bool clear);
// Pages [first, first + n) of the slot whose bit is set in `mask` (bit i:
// page first + i) and in the bitmap: cleared and write-protected, one flush
// (KVM_CLEAR_DIRTY_LOG); on return `mask` holds exactly those pages. The
// range as for s2_slot_dirty_get.
int s2_slot_dirty_clear(struct s2_vm *vm, unsigned as, uint32_t id, uint64_t first, uint64_t n,
			uint64_t *mask);

// Copy of the slot containing gpa (false when none).
bool s2_slot_find(struct s2_vm *vm, unsigned as, uint64_t gpa, struct s2_slot *out);
// Memslot generation: bit 63 set while an update is in progress.
#define S2_GEN_IN_PROGRESS (1ull << 63)

// ---- faults (mm/fault.c) -----------------------------------------------------
enum s2_fault_result {
	S2_FAULT_MAPPED = 0, // a leaf now maps gpa (or already did)
	S2_FAULT_MMIO = 1,   // no slot: emulate (a marker may have been cached)
	S2_FAULT_RETRY = 2,  // raced with a concurrent change (frozen entry): re-enter the guest
	S2_FAULT_ABSENT = 3, // the slot's page has no frame (S2_HPA_ABSENT): its owner fills it
};
struct s2_fault_info {
	unsigned level;	  // leaf level mapped
	bool from_marker; // S2_FAULT_MMIO answered by a current marker
	uint64_t hpa;	  // translation of gpa (MAPPED)
};
// Handles a stage-2 fault at gpa for `access` (S2_PROT_*) in `root`: maps the
// largest leaf that the slot bounds and the gpa/hpa alignment allow, or
// answers MMIO. Returns enum s2_fault_result or a negative S2_E_*.
int s2_fault(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, unsigned access,
	     struct s2_fault_info *info);

// ---- explicit mapping (mm/map.c) --------------------------------------------
// Maps [gpa, gpa + size) to [hpa, ...) with the largest leaves alignment
// allows, replacing what is there (splitting or collapsing large leaves,
// break-before-make where the format needs it). All-or-nothing on S2_E_NOMEM.
int s2_map(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size, uint64_t hpa,
	   unsigned prot, enum s2_memtype mt);
// Unmaps exactly [gpa, gpa + size) (splits partially covered large leaves),
// reclaims empty tables, one flush. All-or-nothing on S2_E_NOMEM.
int s2_unmap(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size);
// Changes permissions of the mapped leaves in the range (splits as unmap),
// with the mmu lock already held for write (the shadow engine's
// write-tracking hooks run under it). Never yields the lock.
int s2_protect_locked(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size,
		      unsigned prot);

// ---- primary identity map (mm/ident.c) --------------------------------------
// The primary VM's map on every path (arm64 stage-2, NPT, EPT): guest-physical
// == host-physical over [0, top), minus Slat's own region, with attributes
// per range.
struct s2_ident_range {
	uint64_t base, size; // 4 KiB aligned
	enum s2_memtype mt;
	unsigned prot; // S2_PROT_*
};
struct s2_ident_layout {
	uint64_t top;			  // maps [0, top)
	const struct s2_ident_range *mem; // the firmware's memory: ascending, disjoint
	unsigned n_mem;
	enum s2_memtype gap_mt; // [0, top) that no `mem` range covers
	unsigned gap_prot;
	uint64_t hole_base, hole_size;	   // never mapped (Slat's region); size 0: none
	const struct s2_ident_range *over; // win over `mem` and gaps (x86: the APIC
	unsigned n_over;		   // page): ascending, disjoint
};
// Builds the layout into `root` with the largest leaves alignment allows:
// neighbouring pieces with the same attributes are mapped as one range, so a
// leaf spans range boundaries where the attributes do not change. Bad input
// (unaligned, unsorted or overlapping ranges, top beyond the input width)
// gives S2_E_* and maps nothing; S2_E_NOMEM keeps what was built so far.
// `out` (may be NULL): the VM's statistics after the build (s2_vm_stats),
// e.g. leaves_mapped[] per level: on a fresh VM, exactly the build's work.
int s2_map_identity(struct s2_vm *vm, struct s2_root *root, const struct s2_ident_layout *l,
		    struct s2_stats *out);

// Software translation (a full walk; what hardware would see).
struct s2_xlate {
	bool mapped;
	bool mmio_marker;
	unsigned level, prot;
	enum s2_memtype mt;
	uint64_t hpa; // of the input address (not the leaf base)
	s2_pte_t pte;
};
void s2_translate(struct s2_vm *vm, const struct s2_root *root, uint64_t gpa, struct s2_xlate *out);

// ---- teardown of one root (mm/s2.c) ----------------------------------------
// Detaches the tree below `root` (the root page itself stays, empty, since a
// CPU may still point at it), issues one context invalidation when anything
// was attached, then frees every table page below the root in bounded chunks
// with no per-leaf invalidation and no CMO. Returns the pages freed.
// `work` (may be NULL): this teardown's own work in the engine's statistics
// structure (tables_freed, tables_deferred, inval_context; the rest 0).
uint64_t s2_root_teardown(struct s2_vm *vm, struct s2_root *root, struct s2_stats *work);

// ---- the walker (mm/walk.c; table pages and assertions mm/base.c, assert.c) --
enum {
	S2_WALK_LEAF = 1u << 0,	      // visit present leaves
	S2_WALK_TABLE_PRE = 1u << 1,  // visit table entries before descending
	S2_WALK_TABLE_POST = 1u << 2, // visit table entries after their subtree
	S2_WALK_SHARED = 1u << 3,     // mmu lock held for read: entries change by CAS
	S2_WALK_YIELDABLE = 1u << 4,  // may flush, drop the lock and restart
	S2_WALK_SKIP_INVAL = 1u << 5, // no invalidation (detached/invalid root)
	S2_WALK_SKIP_CMO = 1u << 6,   // no cache maintenance (teardown)
	S2_WALK_NONPRESENT = 1u << 7, // also visit non-present leaf-level entries
};

struct s2_walk;
struct s2_walk_entry {
	uint64_t addr; // base address the entry covers
	unsigned level;
	s2_pte_t *ptep;
	s2_pte_t old; // value read (re-read before the visit)
};
// Visitor return values: 0 continue; S2_WALK_SKIP_CHILDREN from a TABLE_PRE
// visit: do not descend; negative: stop the walk with that error.
#define S2_WALK_SKIP_CHILDREN 1
typedef int (*s2_visit_fn)(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind,
			   void *ctx);
#define S2_VISIT_LEAF	    S2_WALK_LEAF
#define S2_VISIT_TABLE_PRE  S2_WALK_TABLE_PRE
#define S2_VISIT_TABLE_POST S2_WALK_TABLE_POST

// Walks [lo, hi) of `root` down to min_level. Must be called with the mmu
// lock held (read with S2_WALK_SHARED, write otherwise); a YIELDABLE walk may
// release and retake it, restarting from the root at the saved address.
// Invalidations needed by zaps are batched and issued once at the end (or
// before a yield).
int s2_walk(struct s2_vm *vm, struct s2_root *root, uint64_t lo, uint64_t hi, unsigned min_level,
	    unsigned flags, s2_visit_fn fn, void *ctx);
// Helpers for visitors: zap the entry (leaf or table with its subtree
// reclaimed), or replace it (break-before-make when the format needs it).
// They account the pending invalidation and the CMO policy.
void s2_walk_zap(struct s2_walk *w, const struct s2_walk_entry *e);
void s2_walk_replace(struct s2_walk *w, const struct s2_walk_entry *e, s2_pte_t new_pte);
// Under S2_WALK_SHARED: removes a table entry and its subtree (CAS to the
// format's frozen value, invalidate if live, empty the subtree, write the
// normal non-present value, free after the grace period). A racing fault
// that meets the frozen entry returns S2_FAULT_RETRY. False if the entry
// changed under us.
bool s2_walk_remove_table_shared(struct s2_walk *w, const struct s2_walk_entry *e);

// Called by failed internal assertions (e.g. the last reference dropped on a
// valid root). NULL: trap. Tests install a hook that records the failure.
extern void (*s2_assert_hook)(const char *expr, const char *file, int line);

// A table page for the shadow code: same allocator and accounting.
uint64_t s2_table_alloc(struct s2_vm *vm);

#endif
