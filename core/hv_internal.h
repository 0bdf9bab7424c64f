// SPDX-License-Identifier: Apache-2.0
//
// Inside the secondary-VM layer (core/hv*.c; the contract is core/hv.h):
// the deposit pool, the records kept in deposited pages, and the pieces the
// files share. docs/secondary-vms.md describes the design.
//
// Locks, outermost first: hv.lock (management calls) > the engine's locks >
// own.lock > depot.lock. VCPU_RUN takes hv.lock only to find and claim its
// vCPU; faults inside a run take the engine's locks and depot.lock.
#ifndef SLAT_CORE_HV_INTERNAL_H
#define SLAT_CORE_HV_INTERNAL_H

#include "core/hv.h"
#include "core/own.h"
#include "mm/sync.h"

#define HV_PAGE		  4096ull
#define HV_SLOT_INLINE	  8u // frame numbers kept in the slot record itself
#define HV_SLOTS_PER_PAGE ((HV_PAGE - 8) / sizeof(struct hv_slot)) // + the page link

// ---- the deposit pool (core/hv_depot.c) ------------------------------------------
// Pages the primary deposited, Slat's (ownership OWN_SLAT) from DEPOSIT until
// WITHDRAW. The first word of a free page links the free list.
struct hv_depot {
	struct mm_spinlock lock;
	uint64_t free_list; // physical address of the first free page, 0: none
	uint64_t nfree;
	uint64_t deposited, withdrawn; // pages since boot
};
void hv_depot_init(struct hv_depot *d);
uint64_t hv_depot_alloc(struct hv_depot *d); // a zeroed page, 0 when empty
void hv_depot_free(struct hv_depot *d, uint64_t pa);
// Free pages now (a hint: others may take some before the caller does).
uint64_t hv_depot_nfree(struct hv_depot *d);
// Puts [pa, pa + n pages) on the free list (the caller claimed them).
void hv_depot_add(struct hv_depot *d, uint64_t pa, uint64_t n);
// Takes back from the free list every page of [pa, pa + n pages) that is on
// it (a failed claim); returns how many.
uint64_t hv_depot_remove_range(struct hv_depot *d, uint64_t pa, uint64_t n);

// ---- records -------------------------------------------------------------------------
// A secondary VM or vCPU is one deposited page holding core's one record
// (core/vm.h: struct vm / struct vcpu, with their `hv` and `arch` parts).
//
// One memslot: its frame list (the engine's s2_backing) and place. Frame
// numbers live inline (<= HV_SLOT_INLINE), in one list page (<= 512), in a
// directory page of list pages (<= 512^2) or in a directory of directories
// (a lazy slot, <= HC_SLOT_LAZY_MAX_PAGES), all deposited pages.
struct hv_slot {
	struct s2_backing b; // first: the engine hands it back to the callbacks
	uint64_t gpa;
	uint32_t pages;	  // <= HC_SLOT_LAZY_MAX_PAGES
	uint32_t present; // pages with a frame (ADD: all; ADD_EMPTY: none; FILL/DROP change it)
	uint64_t list;	  // the list tree's top page (pages > HV_SLOT_INLINE)
	uint64_t inl[HV_SLOT_INLINE];
	uint32_t id;
	uint32_t used; // 1 while the record holds a slot
};
// The frame number of a slot page that has none (ADD_EMPTY, DROP), and the
// mark DROP puts on a frame between making it absent and giving it back
// (faults see the page absent; only DROP itself ever sees the mark).
#define HV_PFN_ABSENT	(~0ull)
#define HV_PFN_DROPPING (1ull << 63)
_Static_assert(HC_SLOT_LAZY_MAX_PAGES <= UINT32_MAX && HC_SLOT_PINNED_MAX_PAGES <= UINT32_MAX,
	       "a slot's page count fits its record");

// ---- the layer's state (core/hv.c) ----------------------------------------------------
struct hv_pcpu {
	uint64_t token, gen; // the VM whose translations this CPU may cache, at gen
};

struct hv_state {
	bool ready;
	enum hc_abi abi;
	int (*arch_call)(uint32_t fn, const uint64_t *a, uint64_t *res); // hv_boot's
	unsigned ncpus;
	struct mm_spinlock lock;
	struct own_table own;
	struct hv_depot depot;
	struct vm *vms;
	uint32_t next_id;
	uint64_t next_token;
	uint64_t vms_live, vms_created, vms_destroyed;
	uint64_t calls, calls_failed;
	struct hv_pcpu pcpu[HV_MAX_PCPUS];
};
extern struct hv_state hv;

// ---- shared helpers -----------------------------------------------------------------
int hv_err_of_s2(int s2_err);
struct vm *hv_vm_find(uint32_t id); // hv.lock held
struct vcpu *hv_vcpu_find(struct vm *vm, uint32_t index);

// core/hv_vm.c
int hv_vm_create(uint32_t flags, uint32_t vcpu_limit, uint64_t *id);
int hv_vm_destroy(uint32_t id);
int hv_vcpu_create(uint32_t vm, uint32_t index);
void hv_vm_stats(struct vm *vm, struct hc_vm_stats *out);
// core/hv_slot.c
int hv_slot_set(const struct hc_call *c, uint64_t *bad);
void hv_slots_release(struct vm *vm); // VM destroy, after the engine's teardown
// core/hv_run.c
extern const struct s2_backend hv_s2_backend;
int hv_vcpu_run(uint32_t vm, uint32_t index, struct vcpu *caller, uint64_t run_pa,
		uint64_t *reason);
void hv_vcpu_drop_root(struct vcpu *v);

#endif
