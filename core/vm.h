// SPDX-License-Identifier: Apache-2.0
//
// Architecture-neutral VM and vCPU records, exit statistics and the exit
// summary Slat prints when a VM powers off or resets.
//
// An architecture back end decodes each trap into an `enum exit_reason` and
// counts it with vcpu_count_exit() on the trapping CPU. Counters are per vCPU
// and written only by their own CPU; readers (the summary, printed by whichever
// CPU handles the power-off) load them with relaxed atomics, so a count that is
// racing with its CPU is at worst one exit behind.
//
// The second-level translation's figures (table pages, invalidations, cache
// maintenance) come from the mm back end as a `struct slat_mm_counts`.
#ifndef SLAT_CORE_VM_H
#define SLAT_CORE_VM_H

#include <stdbool.h>
#include <stdint.h>

enum exit_reason {
	EXIT_FIRMWARE_CALL, // SMC (PSCI, SMCCC) on arm64
	EXIT_HYPERCALL,	    // HVC / VMMCALL / VMCALL
	EXIT_SLAT_FAULT,    // stage-2 / NPT / EPT fault
	EXIT_SYSREG,	    // system register or MSR access
	EXIT_IO,	    // port I/O
	EXIT_CPUID,
	EXIT_WAIT,	// WFI / WFE / HLT / PAUSE
	EXIT_INTERRUPT, // physical interrupt taken while the guest ran
	EXIT_OTHER,	// anything the back end could not classify
	EXIT_MMIO,	// an emulated device access (x86: writes to the local APIC page)
	EXIT_REASONS
};

// Short stable names ("firmware-call", "slat-fault", ...) used in the summary.
const char *exit_reason_name(enum exit_reason r);

struct vcpu {
	unsigned index; // 0 = the boot CPU
	uint64_t hw_id; // MPIDR / APIC ID
	bool online;	// ever entered the guest
	uint64_t exits[EXIT_REASONS];
};

// Figures of one VM's second-level translation, kept by the mm back end.
struct slat_mm_counts {
	uint64_t table_pages;	  // table pages in use now
	uint64_t table_pages_max; // high-water mark
	uint64_t invalidations;	  // TLB invalidation operations issued
	uint64_t cmos;		  // cache maintenance operations (one per line range)
};

struct vm {
	const char *name;      // "primary"
	const char *slat_name; // "stage-2", "NPT", "EPT"
	struct vcpu *vcpus;
	unsigned max_vcpus;
};

// Prepares `vm` with `max_vcpus` records in `vcpus` (zeroed here).
void vm_init(struct vm *vm, const char *name, const char *slat_name, struct vcpu *vcpus,
	     unsigned max_vcpus);

// The record for hardware id `hw_id`, creating it on first use. NULL when all
// records are taken. Safe against concurrent callers.
struct vcpu *vm_vcpu_for(struct vm *vm, uint64_t hw_id);

// The record for `hw_id` or NULL if it has none yet.
struct vcpu *vm_vcpu_find(struct vm *vm, uint64_t hw_id);

static inline void vcpu_count_exit(struct vcpu *v, enum exit_reason r)
{
	unsigned i = (unsigned)r < EXIT_REASONS ? (unsigned)r : EXIT_OTHER;

	__atomic_store_n(&v->exits[i], __atomic_load_n(&v->exits[i], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

// Sum of one reason over every vCPU (relaxed reads).
uint64_t vm_exit_total(const struct vm *vm, enum exit_reason r);

// What the summary reports beyond the VM's own counters.
struct exit_summary {
	const char *event;		 // "power-off", "reset"
	uint64_t uptime_us;		 // since Slat took over
	struct slat_mm_counts live;	 // before teardown
	uint64_t teardown_pages;	 // table pages freed by the teardown
	uint64_t teardown_invalidations; // invalidations the teardown issued
};

// True the first time a guest faults on `page` (a page frame number) on the
// second level, so that a guest that retries does not flood the log: at most
// VM_FAULT_LOG_PAGES distinct pages are reported, then Slat stays quiet.
// Safe from every CPU, including exception handlers.
#define VM_FAULT_LOG_PAGES 8
bool vm_fault_first_report(uint64_t page);

// Logs the exit summary (several lines, each starting "slat: ").
void vm_print_exit_summary(const struct vm *vm, const struct exit_summary *s);

#endif
