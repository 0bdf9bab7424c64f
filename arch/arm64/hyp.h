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

#include "arch/arm64/el2_policy.h"
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

// Exception frame built by the EL2 vectors (el2_entry.S).
struct arm64_frame {
	uint64_t x[31];
	uint64_t elr;
	uint64_t spsr;
	uint64_t pad;
};

// One per physical CPU, in Slat's region; TPIDR_EL2 points to it. Only what
// belongs to the CPU itself: the vCPU it runs (`vcpu`: core's record with the
// arm64 part embedded) carries the guest's identity and entry state.
struct arm64_pcpu {
	uint64_t stack_top;	   // 0: EL2 stack
	struct arm64_el2_mmu *mmu; // 8: Slat's EL2 translation, for the secondary entry
	struct vcpu *vcpu;	   // 16: the vCPU this CPU runs (read by the exit vectors)
	// While a secondary vCPU runs (arm64_hv_enter to its exit): where the
	// exit vectors save its registers, and the EL2 stack pointer of the
	// run-once caller to return to. hv_frame is 0 at every other time.
	struct arm64_frame *hv_frame; // 24
	uint64_t hv_sp;		      // 32
};
// el2_entry.S reads these fields at fixed offsets.
_Static_assert(__builtin_offsetof(struct arm64_pcpu, stack_top) == 0, "el2_entry.S");
_Static_assert(__builtin_offsetof(struct arm64_pcpu, mmu) == 8, "el2_entry.S");
_Static_assert(__builtin_offsetof(struct arm64_pcpu, vcpu) == 16, "el2_entry.S");
_Static_assert(__builtin_offsetof(struct arm64_pcpu, hv_frame) == 24, "el2_entry.S");
_Static_assert(__builtin_offsetof(struct arm64_pcpu, hv_sp) == 32, "el2_entry.S");

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
// Run-once entry of a secondary vCPU (arch/arm64/hv.c): saves the EL2
// callee-saved registers and SP in `pc`, loads x0..x30, ELR_EL2 and SPSR_EL2
// from `frame` and ERETs. The next exception from the lower EL saves the
// guest's registers back into `frame` and returns its vector index (8-15).
uint64_t arm64_hv_enter(struct arm64_pcpu *pc, struct arm64_frame *frame);
// FP/SIMD registers V0-V31, FPSR, FPCR to / from a 528-byte area.
void arm64_fp_save(void *area);
void arm64_fp_load(const void *area);

// ---- el2_mmu.c: Slat's own EL2 stage-1 tables ---------------------------
// Builds identity tables for EL2 in `r` from the plan's memory ranges, keeping
// the firmware's TCR/MAIR/SCTLR; fills `mmu`. Returns false with a message.
bool arm64_el2_mmu_build(struct region *r, const struct slat_plan *plan, struct arm64_el2_mmu *mmu);
// Adds to the plan, as Normal, memory the firmware's EL2 tables map cacheable
// but its memory map does not list (e.g. firmware code run in place from flash).
bool arm64_plan_add_fw_cacheable(struct slat_plan *plan);

// ---- s2.c: the primary VM's stage-2 -------------------------------------
bool arm64_s2_build_primary(struct region *r, const struct slat_plan *plan, struct arm64_s2 *s2);
// Detaches and frees the primary's stage-2 (batched: one invalidation).
void arm64_s2_teardown(struct arm64_s2 *s2, uint64_t *pages_freed, uint64_t *invalidations);
// The primary's stage-2 figures for the exit summary, from the engine's statistics.
void arm64_s2_mm_counts(struct slat_mm_counts *out);
// The primary's stage-2 over deposited pages: core/hv.h's arch_hv_primary_*
// are s2.c's (S2_E_* of the engine; unmap returns after the broadcast TLBI).

// ---- mm_backend.c: TLB, cache maintenance and pages for mm/ -------------
void arm64_mm_backend_init(struct region *r);
void arm64_dcache_clean_inval_poc(uint64_t start, uint64_t len);

// ---- hyp.c: resident state, per-CPU records, shutdown -------------------
extern struct vm arm64_primary;
extern struct arm64_cpu_features arm64_cpu;
// The plan the resident copy keeps (its memory layout and Slat's region).
struct slat_plan *arm64_resident_plan(void);
struct arm64_pcpu *arm64_this_pcpu(void);
// The physical CPU record that runs `v`, now pointing at it. The primary's
// vCPUs are pinned: vCPU i always runs on the CPU holding record i.
struct arm64_pcpu *arm64_pcpu_bind(struct vcpu *v);
// The vCPU of `vm` for MPIDR `mpidr` (affinity bits), claimed and its arm64
// part initialised on first use; NULL when every record is taken.
struct vcpu *arm64_vcpu_claim(struct vm *vm, uint64_t mpidr);
// Powers off or resets (PSCI function `psci_fn`, arguments from `f`) after
// tearing `vm` down and printing the exit summary. A CPU that comes second
// parks.
__attribute__((noreturn)) void arm64_vm_shutdown(struct vm *vm, struct arm64_frame *f, bool reset,
						 uint64_t psci_fn);
__attribute__((noreturn)) void arm64_park(void);

// ---- vm.c: core/vm_arch.h for arm64 -------------------------------------
// vcpu_arch_run() loads the VM's EL2 state on the calling CPU and drops to
// EL1 at the vCPU's entry; it does not return (every exit comes back through
// arm64_handle_exit on the CPU's EL2 stack).

// ---- traps.c / psci.c ---------------------------------------------------
// Exit entry (el2_entry.S): an exception from EL1/EL0 while `v` ran; `kind`
// is the vector index (8-15: lower EL, AArch64 then AArch32).
void arm64_handle_exit(struct vcpu *v, struct arm64_frame *f, uint64_t kind);
// An exception taken at EL2 itself (vector index 0-7): reported; parks.
__attribute__((noreturn)) void arm64_el2_fault(uint64_t kind, struct arm64_frame *f);
void arm64_psci_call(struct vcpu *v, struct arm64_frame *f);
void arm64_inject_undef(struct arm64_frame *f);
// A hypercall of the primary's kernel (HVC at EL1): core's dispatcher, or
// the SMCCC vendor-hypervisor UID query (also asked through SMC).
void arm64_hv_primary_call(struct vcpu *v, struct arm64_frame *f);
bool arm64_hv_uid_query(struct arm64_frame *f);
// hv_init() with the RAM ranges (the primary's frames) and Slat's region.
void arm64_hv_boot_ranges(const uint64_t (*ram)[2], unsigned nram);
// The index of the calling CPU's record (arch_hv_pcpu).
unsigned arm64_pcpu_index(void);

#endif
