// SPDX-License-Identifier: Apache-2.0
//
// The backend contract of the SLAT engine: what mm/ asks of the machine. A VM
// gets its backend at creation (struct s2_vm_config), so tests swap it freely:
// arch/host/ provides a software TLB with counting and fault injection,
// arch/arm64/mm_backend.c the real TLBI/DC CIVAC/region pages, and the x86
// primary code INVEPT/ASID flushes.
//
// Addresses: mm/ treats the physical address a page source returns as
// directly dereferenceable (identity mapping, true in slat.efi at EL2 / in
// VMX root / SVM host mode, and hosted where a "physical address" is a
// pointer). Every page mm/ uses (tables, roots, the VM struct, slot arrays)
// comes from page_alloc: mm/ never calls malloc.
#ifndef SLAT_MM_S2_BACKEND_H
#define SLAT_MM_S2_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

struct s2_vm;

struct s2_backend {
	// `npages` zeroed contiguous 4 KiB pages aligned to `align` bytes (a power
	// of two >= 4096); 0 when none. mm/ pre-allocates everything an operation
	// needs before it changes any entry (prepare/commit), so a 0 here never
	// leaves tables half-changed.
	uint64_t (*page_alloc)(void *ctx, unsigned npages, uint64_t align);
	// Free: no walker (hardware or software) can reach the pages any more.
	// Pages that lockless walkers might still read are handed over only
	// after the engine's own grace period (mm/defer.c, the VM's mm_epoch).
	void (*page_free)(void *ctx, uint64_t pa, unsigned npages);

	// Invalidates every translation and paging-structure cache entry of the
	// VM (all roots): INVEPT single-context per EPTP, ASID flush, TLBI
	// VMALLS12E1IS.
	void (*inval_context)(void *ctx, struct s2_vm *vm);
	// Invalidates translations of [gpa, gpa + size) (and the walk caches that
	// cover it). NULL or without S2_CAP_RANGE_INVAL: inval_context is used.
	void (*inval_range)(void *ctx, struct s2_vm *vm, uint64_t gpa, uint64_t size);
	// Clean and invalidate data cache lines to the point of coherency for
	// [pa, pa + size) (arm64 DC CIVAC). NULL: not needed on this machine.
	void (*cmo_clean_inval)(void *ctx, uint64_t pa, uint64_t size);

	// Should a long walk yield now? (scheduler tick, pending IPI, injector).
	// A walk also yields when a CPU waits for the mmu lock
	// (mm_rwlock_should_yield).
	bool (*need_resched)(void *ctx);
	// Called at each yield point of a walk, once its pending invalidations
	// are issued and just before the mmu lock is dropped (the lock's own
	// yield lets others run while it is free: mm_rwlock_yield_*, relaxing
	// through the mm_sync_set_relax hook). NULL: nothing to do.
	void (*yield)(void *ctx);
	// Spin-wait hint for the engine's drain loops (slot-set readers, zaps in
	// flight). Lock waits use mm/sync.h's relax hook.
	void (*cpu_relax)(void *ctx);
	// Asks every vCPU of the VM to drop roots marked invalid and waits for the
	// acknowledgements. NULL: no vCPU is running (tests, teardown).
	void (*kick_reload)(void *ctx, struct s2_vm *vm);
	// The calling CPU's slot in the VM's epoch domain, < s2_vm_config.ncpus:
	// the physical CPU index in slat.efi, a per-thread slot hosted. mm/
	// enters the epoch on that slot around every mmu lock section and every
	// software walk. NULL: slot 0 (then ncpus must be 1 and one CPU at a time
	// uses the VM).
	unsigned (*cpu_index)(void *ctx);
};

#endif
