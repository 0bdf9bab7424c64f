// SPDX-License-Identifier: Apache-2.0
//
// The VM and vCPU records every path shares, exit statistics and the exit
// summary Slat prints when a VM powers off or resets. core/ owns the records;
// each architecture embeds its own part (`struct vm_arch`, `struct vcpu_arch`
// from arch/<arch>/inc/vm_arch_types.h, found through the include path of the
// build: arch/x86, arch/arm64 or arch/host) and implements the contract in
// core/vm_arch.h.
//
// An architecture back end decodes each trap into an `enum exit_reason` and
// counts it with vcpu_count_exit() on the trapping CPU. Counters are per vCPU
// and written only by their own CPU; readers (the summary, printed by whichever
// CPU handles the power-off) load them with relaxed atomics, so a count that is
// racing with its CPU is at worst one exit behind.
//
// The second-level translation's figures (table pages, invalidations, cache
// maintenance) come from the mm/ engine's statistics of the VM as a
// `struct slat_mm_counts` (the architecture fills it, arch/slat_counts.h).
#ifndef SLAT_CORE_VM_H
#define SLAT_CORE_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hcall_abi.h"
#include "core/log.h"
#include "core/region.h"
#include "vm_arch_types.h" // struct vm_arch, struct vcpu_arch of the arch being built

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

// Life cycle of a vCPU record. FREE records have hw_id == VCPU_HW_ID_FREE.
enum vcpu_state {
	VCPU_FREE,    // no CPU or VMM has claimed the record
	VCPU_CREATED, // claimed, arch part initialised, never entered the guest
	VCPU_RUNNING, // entered the guest at least once and not stopped
	VCPU_STOPPED, // will not enter the guest again (VM shutting down)
};

enum vm_state {
	VM_RUNNING,	  // vCPUs may enter the guest
	VM_SHUTTING_DOWN, // one CPU is tearing the VM down; the others stop
};

#define VCPU_HW_ID_FREE UINT64_MAX

struct vm;

// A secondary vCPU's part (core/hv*.c, docs/secondary-vms.md); zero in the primary's.
struct vcpu_hv {
	struct s2_root *root;
	uint32_t running_on; // atomic: physical CPU + 1 while a RUN owns the vCPU, else 0
	uint32_t in_guest;   // atomic: between hv_vcpu_enter and hv_vcpu_exited
	uint32_t pcpu;	     // where it last entered
	uint64_t exit_seq;   // atomic: exits so far
};

// One virtual CPU. The generic part is core's; `arch` is the architecture's
// (arch/<arch>/inc/vm_arch_types.h), embedded so that one allocation holds
// both and each side reaches the other without a lookup (vcpu_of_arch()).
struct vcpu {
	struct vm *vm;
	unsigned index; // 0 = the VM's first vCPU (the primary: the boot CPU)
	uint64_t hw_id; // MPIDR affinity / APIC ID; VCPU_HW_ID_FREE when unused
	int state;	// enum vcpu_state (atomic)
	bool entered;	// has entered the guest at least once (atomic)
	uint64_t exits[EXIT_REASONS];
	// hv_primary_fault_retry(): the frame (+ 1) faulted on last, and how often
	uint64_t fault_retry_pfn;
	uint32_t fault_retries;
	struct vcpu_hv hv;
	struct vcpu_arch arch;
};

// Figures of one VM's second-level translation, from the engine's s2_stats.
struct slat_mm_counts {
	uint64_t table_pages;	  // table pages in use now
	uint64_t table_pages_max; // high-water mark
	uint64_t invalidations;	  // TLB invalidation operations issued
	uint64_t cmos;		  // cache maintenance operations (one per line range)
};

// A secondary VM's part (core/hv*.c); zero in the primary. Its vCPUs are in
// vcpu_dir (struct vm's vcpus / max_vcpus stay unused).
#define HV_PTRS_PER_PAGE  512u
#define HV_SLOT_DIR_PAGES ((HC_MAX_SLOTS + HV_PTRS_PER_PAGE - 1) / HV_PTRS_PER_PAGE)
#define HV_VCPU_DIR_PAGES (HC_MAX_VCPUS / HV_PTRS_PER_PAGE)
struct vm_hv {
	struct vm *next;
	struct s2_vm *s2;
	uint64_t token;	     // unique for the life of Slat (TLB tagging)
	uint64_t tlb_gen;    // atomic: bumped by every flush of the VM
	uint64_t meta_pages; // atomic: deposited pages the VM holds
	uint32_t flags;	     // HC_VM_FLAG_*
	uint32_t vcpu_limit; // VM_CREATE's limit
	uint32_t nvcpus;     // created
	uint32_t runs;	     // atomic: RUN calls inside the VM right now
	uint64_t nslots, slot_frames;
	uint64_t vcpu_dir[HV_VCPU_DIR_PAGES]; // pages of struct vcpu pointers
	uint64_t slot_dir[HV_SLOT_DIR_PAGES]; // pages of struct hv_slot pointers
	uint64_t slot_pages; // pages of hv_slot records, linked through their last word
	struct hv_slot *slot_free;
};

// One VM: identity, state, its memory (what it must never reach), its vCPUs
// and exit statistics, a secondary's part (`hv`) and the architecture's
// (`arch`).
struct vm {
	unsigned id;	       // 0 = the primary
	const char *name;      // "primary"
	const char *slat_name; // "stage-2", "NPT", "EPT"
	int state;	       // enum vm_state (atomic)
	struct region hidden;  // memory the VM never maps (Slat's own region)
	struct vcpu *vcpus;
	unsigned max_vcpus;
	struct vm_hv hv;
	struct vm_arch arch;
};

// Prepares `vm` (id, names, vCPU records in `vcpus`, zeroed here; the arch
// parts are zero too) in state VM_RUNNING. `hidden` is what the VM must never
// map. Does not call the architecture: the caller runs vm_arch_init().
void vm_init(struct vm *vm, unsigned id, const char *name, const char *slat_name,
	     const struct region *hidden, struct vcpu *vcpus, unsigned max_vcpus);

// The record for hardware id `hw_id`, claiming a free one on first use (state
// FREE -> CREATED; the caller then initialises its arch part). NULL when all
// records are taken. Safe against concurrent callers.
struct vcpu *vm_vcpu_for(struct vm *vm, uint64_t hw_id);

// The record for `hw_id` or NULL if it has none yet.
struct vcpu *vm_vcpu_find(struct vm *vm, uint64_t hw_id);

// Marks `v` as having entered the guest (CREATED -> RUNNING); idempotent.
void vcpu_set_running(struct vcpu *v);
// True once `v` has entered the guest (RUNNING, or STOPPED after that).
bool vcpu_has_run(const struct vcpu *v);

// The first caller gets true and owns the shutdown (RUNNING ->
// SHUTTING_DOWN); every later caller, on any CPU, gets false and must stop
// its vCPU. Every vCPU record is STOPPED afterwards.
bool vm_begin_shutdown(struct vm *vm);
bool vm_is_shutting_down(const struct vm *vm);

// From the arch part back to its vCPU.
#define vcpu_of_arch(a) ((struct vcpu *)((char *)(a) - __builtin_offsetof(struct vcpu, arch)))

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
#define VM_FAULT_LOG_PAGES LOG_ONCE_KEYS
bool vm_fault_first_report(uint64_t page);

// Logs the exit summary (several lines, each starting "slat: ").
void vm_print_exit_summary(const struct vm *vm, const struct exit_summary *s);

#endif
