// SPDX-License-Identifier: Apache-2.0
//
// Nested SVM (internal to arch/x86/svm/): the primary's Linux runs its own
// hypervisor (KVM's kvm_amd) as L1; its guests (L2) run under Slat. Slat
// shows the primary an SVM CPU with nested paging (CPUID, a virtual
// EFER.SVME, VM_CR, VM_HSAVE_PA), emulates VMRUN, VMLOAD, VMSAVE, STGI, CLGI
// and INVLPGA, runs L2 on a VMCB of its own (vmcb02) built from L1's
// (vmcb12), and either handles an L2 exit itself or reflects it to L1 as a
// #VMEXIT. L2's nested page tables (NPT02) are shadow pages of the mm/ shadow
// engine over L1's own (NPT12) composed with the primary's map (NPT01). See
// docs/nested-svm.md.
//
//   nested.c       the virtual SVM state, the instructions, #VMEXIT to L1
//   nested_run.c   vmcb02, entering L2, routing of L2's exits
//   nested_mmu.c   the shadow engine: NPT12 walks, write tracking, faults
#ifndef SLAT_ARCH_X86_SVM_NESTED_H
#define SLAT_ARCH_X86_SVM_NESTED_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/svm/svm.h"

struct region;
struct slat_plan;
struct sh_page;

#define NESTED_ASID	   3 // L2's (the primary has 1, secondaries 2)
#define VMCB_VINTR_MASKING (1ull << 24)
#define SVM_EXIT_ERR	   (~0ull) // VMEXIT_INVALID
#define VMCB_SVM_PAGE	   4096ull

// Figures for the exit summary (atomic counters).
struct svm_nested_stats {
	uint64_t vmruns, vmexits, l2_exits;
	uint64_t npf_fixed, npf_reflected, emulated_writes, unprotects, wp_pages;
	uint64_t reload_roots, nospc, bad_vmcb12;
	uint64_t zap_max_sps, zap_max_us; // the costliest single zap of shadow pages
};
extern struct svm_nested_stats svm_nested_stats;
#define NESTED_COUNT(f) __atomic_fetch_add(&svm_nested_stats.f, 1, __ATOMIC_RELAXED)

// ---- nested.c ---------------------------------------------------------------------
// Boot (boot CPU, resident copy): the per-CPU pages and the shadow engine.
// False: nested SVM stays off (SVM hidden from the primary, as before).
bool svm_nested_init(struct region *r, const struct slat_plan *plan);
// EFER as L1 sees it, and L1's EFER write (already checked by the policy).
uint64_t svm_nested_efer_view(struct svm_cpu *c, uint64_t efer);
void svm_nested_efer_write(struct svm_cpu *c, uint64_t efer);
// An exit of the primary's vCPU for an SVM instruction (VMRUN ... INVLPGA,
// SKINIT): emulated, or the exception it raises queued. True when handled
// (false: nested SVM is off, the policy's #UD applies).
bool svm_nested_insn(struct svm_cpu *c, uint64_t code);
// INIT: SVM off, GIF set, no shadow root held.
void svm_nested_reset(struct svm_cpu *c);
// L1's GIF gates what Slat injects into it (NMIs).
bool svm_nested_gif(const struct svm_cpu *c);
void svm_nested_summary(void);

// What VMLOAD and VMSAVE move (FS, GS, TR, LDTR, KernelGSBase, STAR, LSTAR,
// CSTAR, SFMASK, SYSENTER_*), from one VMCB-layout page to another.
void svm_nested_copy_hidden(void *dst, const void *src);
// Reflects L2's exit to L1: vmcb12 gets L2's state and the exit fields,
// L1 resumes after its VMRUN with GIF clear (nested.c).
void svm_nested_vmexit(struct svm_cpu *c, uint64_t code, uint64_t info1, uint64_t info2,
		       uint64_t intinfo);

// ---- nested_run.c -----------------------------------------------------------------
// VMRUN of vmcb12 at `vmcb12_pa` (checked, mapped): builds vmcb02 and points
// the CPU's VMRUN loop at it (or refuses vmcb12 with VMEXIT_INVALID).
void svm_nested_vmrun(struct svm_cpu *c, uint64_t vmcb12_pa);
// An exit of L2 (c->nested.in_l2): true when Slat handled it and L2 runs
// again; false when it went to L1 (#VMEXIT: the CPU runs L1 next).
bool svm_nested_exit(struct svm_cpu *c);

// ---- nested_mmu.c -----------------------------------------------------------------
bool svm_nested_mmu_init(const struct slat_plan *plan);
// L1 memory Slat may read and write for L1 (VMCBs, save areas): RAM the
// primary maps writable or write-tracked, not Slat's, `len` inside one page.
bool svm_nested_l1_ram(uint64_t gpa, uint64_t len);
// Before Slat itself writes L1 page `gpa` (vmcb12, a VMSAVE area): a page
// that holds NPT12 tables stops being tracked (its SPs go).
void svm_nested_before_write(uint64_t gpa);
// The four-level table at the top of L1's NPT12 (below a five-level top
// table's entry 0 when L1 runs with LA57). False: L1 maps nothing yet.
bool svm_nested_npt12_root(const struct svm_cpu *c, uint64_t ncr3, uint64_t *root4);
// NPT02 while L1 maps nothing: an empty table (every access faults).
uint64_t svm_nested_empty_root(void);
// The shadow root for that table (cached per CPU). False: no memory.
bool svm_nested_root(struct svm_cpu *c, uint64_t root4);
void svm_nested_root_drop(struct svm_cpu *c);
// L2's NPF (info1 error code, info2 L2-physical address): true when Slat
// fixed it (re-enter L2); false with *err12 set: reflect an NPF with this
// error code to L1.
bool svm_nested_npf(struct svm_cpu *c, uint64_t ncr3, uint64_t info1, uint64_t gpa,
		    uint64_t *err12);
// The primary's NPF on a page Slat write-protected because it holds NPT12
// tables (or held them): the write is emulated through the shadow engine,
// or the page is given back. True when handled.
bool svm_nested_l1_write_fault(struct svm_cpu *c, uint64_t gpa, uint64_t info1);
// Shadow engine figures for the summary.
void svm_nested_mmu_summary(void);

#endif
