// SPDX-License-Identifier: Apache-2.0
//
// arm64 hypervisor internals shared by the files of arch/arm64 (not a public
// contract: boot/ sees only arch/arch.h).
//
// Two copies of slat.efi exist once Slat has started (see boot/resident.h):
// the firmware-loaded image, which keeps running at EL1 as part of the primary
// VM (it loads the OS), and the resident copy in Slat's reserved region, which
// is the only code that ever runs at EL2 after the drop. Every global below is
// the resident copy's unless a comment says otherwise.
#ifndef SLAT_ARCH_ARM64_HYP_H
#define SLAT_ARCH_ARM64_HYP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/plan.h"
#include "core/region.h"
#include "core/vm.h"

#define ARM64_MAX_CPUS	  8
#define ARM64_STACK_PAGES 4 // 16 KiB EL2 stack per CPU

// EL2 translation and vector settings every CPU loads, read by the secondary
// entry with its MMU still off (offsets used by el2_entry.S).
struct arm64_el2_mmu {
	uint64_t tcr;	// 0
	uint64_t mair;	// 8
	uint64_t ttbr0; // 16
	uint64_t sctlr; // 24
	uint64_t vbar;	// 32
};

// One per physical CPU, in Slat's region. TPIDR_EL2 points to it.
struct arm64_pcpu {
	uint64_t stack_top;	   // 0: EL2 stack (offset used by el2_entry.S)
	struct arm64_el2_mmu *mmu; // 8: (offset used by el2_entry.S)
	uint64_t mpidr;		   // affinity of this CPU (MPIDR_EL1 & 0xff00ffffff)
	uint64_t guest_entry;	   // CPU_ON: where the OS wants this CPU at EL1
	uint64_t guest_context;	   // CPU_ON: x0 for the OS
	struct vcpu *vcpu;	   // exit counters
	unsigned index;
};

// EL2 register values shared by every CPU (set once on the boot CPU).
struct arm64_hyp_regs {
	uint64_t hcr;
	uint64_t vtcr;
	uint64_t vttbr;
	uint64_t cptr;
	uint64_t cnthctl;
	bool has_sve, has_sme, has_pan;
};

// Exception frame built by the EL2 vectors (el2_entry.S).
struct arm64_frame {
	uint64_t x[31];
	uint64_t elr;
	uint64_t spsr;
	uint64_t pad;
};

// ---- el2_entry.S --------------------------------------------------------
extern char arm64_el2_vectors[];
void arm64_secondary_entry(void); // PSCI CPU_ON target, x0 = struct arm64_pcpu *
// Calls fn(arg, resume_pc, el1_sp) at EL2 on the current stack. When fn drops
// the CPU to EL1 at resume_pc with SP_EL1 = el1_sp, this returns 0 at EL1;
// when fn returns (an error, still at EL2), this returns that value.
int64_t arm64_call_then_drop(uint64_t fn, void *arg);
// ERETs to `pc` at EL1h (DAIF masked) with SP_EL1 = el1_sp, x0 = x0 and the
// EL2 stack reset to el2_sp. Does not return.
__attribute__((noreturn)) void arm64_eret_to_el1(uint64_t pc, uint64_t el1_sp, uint64_t x0,
						 uint64_t el2_sp);
// SMC to the firmware with x0..x3; returns x0.
uint64_t arm64_smc4(uint64_t x0, uint64_t x1, uint64_t x2, uint64_t x3);
// Switches TTBR0_EL2 to `ttbr0` with the MMU on (same identity layout).
void arm64_el2_switch_ttbr0(uint64_t ttbr0);

// ---- el2_mmu.c: Slat's own EL2 stage-1 tables ---------------------------
// Builds identity tables for EL2 in `r` from the plan's memory ranges, keeping
// the firmware's TCR/MAIR/SCTLR; fills `mmu`. Returns false with a message.
bool arm64_el2_mmu_build(struct region *r, const struct slat_plan *plan, struct arm64_el2_mmu *mmu);
// Adds to the plan, as Normal, memory the firmware's EL2 tables map cacheable
// but its memory map does not list (e.g. firmware code run in place from flash).
bool arm64_plan_add_fw_cacheable(struct slat_plan *plan);

// ---- s2.c: the primary VM's stage-2 -------------------------------------
struct arm64_s2 {
	uint64_t root; // physical address of the (concatenated) root tables
	uint64_t vtcr;
	uint64_t vttbr;
	unsigned ipa_bits;
	uint64_t blocks_1g, blocks_2m, pages_4k; // leaves of the eager map
};
bool arm64_s2_build_primary(struct region *r, const struct slat_plan *plan, struct arm64_s2 *s2);
// Detaches and frees the primary's stage-2 (batched: one invalidation).
void arm64_s2_teardown(struct arm64_s2 *s2, uint64_t *pages_freed, uint64_t *invalidations);

// ---- mm_backend.c: TLB, cache maintenance and pages for mm/ -------------
void arm64_mm_backend_init(struct region *r);
void arm64_tlbi_vmalls12e1is(void);
void arm64_tlbi_ipas2e1is(uint64_t ipa);
void arm64_dcache_clean_inval_poc(uint64_t start, uint64_t len);
void arm64_mm_counts(struct slat_mm_counts *out);

// ---- hyp.c: state and per-CPU bring-up ----------------------------------
extern struct vm arm64_primary;
extern struct arm64_hyp_regs arm64_hyp;
struct arm64_pcpu *arm64_this_pcpu(void);
struct arm64_pcpu *arm64_pcpu_for(uint64_t mpidr); // NULL when out of slots
uint64_t arm64_uptime_us(void);
void arm64_load_el2_state(struct arm64_pcpu *pc);
bool arm64_in_slat_region(uint64_t pa, uint64_t len);
// Powers off or resets after tearing down and printing the exit summary.
__attribute__((noreturn)) void arm64_vm_shutdown(struct arm64_frame *f, bool reset,
						 uint64_t psci_fn);
bool arm64_vm_is_shutting_down(void);

// ---- traps.c / psci.c ---------------------------------------------------
void arm64_el2_trap(uint64_t kind, struct arm64_frame *f);
void arm64_psci_call(struct arm64_frame *f);
void arm64_inject_undef(struct arm64_frame *f);

#endif
