// SPDX-License-Identifier: Apache-2.0
//
// Secondary VMs on x86 (docs/secondary-vms-x86.md): the arch_hv_* of
// core/hv.h written once for both vendors, over a small back-end interface
// (struct x86_hv_ops: the SVM back end in svm/hv.c; VT-x would be a second
// one). The shared part owns the policy: which exit goes to the VMM as which
// hc_exit (x86_hv_exit), what is handled in Slat (CPUID, a few MSRs, #UD
// for virtualization instructions), the completion of an exit on the next
// RUN, and the SET_REGS consistency checks. A back end moves state between
// its control block and v->arch (gpr[], rip) and runs one entry.
#ifndef SLAT_ARCH_X86_HV_H
#define SLAT_ARCH_X86_HV_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/vcpu.h"
#include "core/hv.h"

struct x86_hv_ops {
	const struct s2_fmt *fmt;	      // the SLAT format of a secondary
	const struct x86_vcpu_ops *vcpu_ops;  // v->arch.ops of a secondary vCPU
	int (*vcpu_create)(struct vcpu *v);   // control block in reset state; HC_E_NOMEM
	void (*vcpu_destroy)(struct vcpu *v); // frees what vcpu_create took
	void (*set_state)(struct vcpu *v, const struct hc_regs_x86 *r); // checked already
	void (*get_state)(struct vcpu *v, struct hc_regs_x86 *r);
	// ABI 1.11, between RUNs, after set_state / get_state: what the control
	// block keeps of the event state. get_events: the interrupt shadow
	// (HC_SHADOW_*) and an event queued for the next entry (r->event and
	// r->event_error, only when the shared part found none in
	// v->arch.hv.intinfo). set_events: the shadow, and the guest's NMI
	// blocking where the CPU keeps it (v->arch.nmi already set from r->nmi).
	void (*get_events)(struct vcpu *v, struct hc_regs_x86 *r);
	void (*set_events)(struct vcpu *v, const struct hc_regs_x86 *r);
	// World switch: before the first entry of a RUN (the caller's hidden
	// state saved), after the last (the caller's restored at its next entry).
	void (*begin)(struct vcpu *caller, struct vcpu *v);
	void (*end)(struct vcpu *caller, struct vcpu *v);
	// One entry of `v` with `en` (root, flush) and its exit decoded into *e;
	// v->arch.gpr[] and rip hold the guest's state before and after.
	void (*enter)(struct vcpu *v, const struct hv_entry *en, struct x86_exit *e);
	// RDMSR / WRMSR of an MSR the control block holds (EFER, PAT, the
	// SYSCALL/SYSENTER MSRs, FS/GS/KernelGS base): false when it is not one.
	// A write value has been checked to be legal. Inside a RUN only (VT-x:
	// the VMCS and the live MSRs are the vCPU's only then).
	bool (*msr)(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);
	// The same MSRs between RUNs (VCPU_MSRS): the state the next RUN loads;
	// no EFER write (SET_REGS sets EFER, with its checks); values checked.
	bool (*msr_stopped)(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);
	// Makes physical CPU `pcpu` exit guest mode (its primary vCPU's kick).
	void (*kick)(unsigned pcpu);
	// ABI 1.4's interrupt injection, between begin and end. irq_open: the
	// guest would take an external interrupt at the next entry (RFLAGS.IF,
	// no interrupt shadow, no event queued or being re-delivered).
	// irq_inject: queue one (only when open). irq_window: exit
	// (X86_EXIT_IRQ_WINDOW) as soon as the guest can take one, or not.
	bool (*irq_open)(struct vcpu *v);
	// ABI 1.8: true when the back end delivers the guest's NMIs (v->arch.nmi)
	// at its entries; false: an NMI from the VMM is refused (HC_E_INVAL).
	bool (*nmi_ok)(void);
	void (*irq_inject)(struct vcpu *v, uint8_t vector);
	void (*irq_window)(struct vcpu *v, bool on);
	// After the entry that followed irq_inject: whether the guest took the
	// vector (its delivery may still be re-done from the exit's event
	// information). False: not taken, and the back end has forgotten it.
	bool (*irq_taken)(struct vcpu *v);
};

// The back end's start at boot: installs its operations and starts core's
// secondary-VM layer with the plan's RAM (Normal ranges) and Slat's region.
struct slat_plan;
bool x86_hv_start(const struct x86_hv_ops *ops, const struct slat_plan *plan);
const struct x86_hv_ops *x86_hv_ops_of(void);

// What the exit policy decided.
enum x86_hv_step {
	X86_HV_REENTER, // handled in Slat: enter again
	X86_HV_RETURN,	// *run filled for the VMM (or an error in *rc)
};

// The exit policy of a secondary vCPU (hv_exit.c). `caller` is the primary's
// vCPU that called RUN (its NMIs are held for it).
enum x86_hv_step x86_hv_exit(struct vcpu *caller, struct vcpu *v, const struct x86_exit *e,
			     struct hc_run *run, int *rc);
// Applies the VMM's answer in *run to the exit `v` returned last (hv_exit.c).
void x86_hv_complete(struct vcpu *v, const struct hc_run *run);

// The consistency checks of SET_REGS (hv_regs.c): true when VMRUN / VM entry
// would accept the state (with EFER.SVME added by the back end).
bool x86_hv_regs_ok(struct vcpu *v, const struct hc_regs_x86 *r);
// ABI 1.11: the event fields of a SET_REGS page with HC_REGS_X86_EVENTS
// (hv_regs.c); `nmi_ok`: the back end delivers NMIs.
bool x86_hv_events_ok(const struct hc_regs_x86 *r, bool nmi_ok);
// The bound of a VMM's table: the default with CR4 = 0 (x86_cpuid_source).
void x86_hv_supported(uint32_t leaf, uint32_t sub, uint32_t out[4]);
// MSR value checks of both back ends (hv_exit.c): a canonical 48-bit address;
// PAT entries of defined memory types only (not 2, 3 or above 7).
bool x86_canonical(uint64_t a);
bool x86_pat_ok(uint64_t pat);
// ABI 1.3's VCPU_MSRS for one MSR of a stopped vCPU (hv_exit.c): the same
// MSRs (the TSC read only, EFER read only), on the state the next RUN loads.
bool x86_hv_msr_stopped(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);
// The CPUID a secondary sees (hv_exit.c: the VMM's table or Slat's default)
// for a guest whose CR4 is `cr4` (SET_REGS checks a new state).
void x86_hv_cpuid_cr4(struct vcpu *v, uint64_t cr4, uint32_t leaf, uint32_t sub, uint32_t out[4]);

// The extended state of one world in a page (hv.c): x87/SSE by FXSAVE, the
// rest by XSAVE when `xsave`; the pages that keep each CPU's primary vCPU's
// during a RUN (arch_hv_run switches) from `r`. False: no secondary VMs.
bool x86_hv_fpu_setup(struct region *r, bool xsave);
void x86_hv_fpu_init(uint64_t pa); // a new vCPU's area (zeroed page): reset state
void x86_hv_fpu_save(uint64_t pa);
// VCPU_FPU (ABI 1.9): read or write the FXSAVE64 image of a stopped vCPU.
int x86_hv_fpu_access(uint64_t fpu_pa, void *page, uint32_t write);
void x86_hv_fpu_load(uint64_t pa);
// x86_hv_ops.kick of both back ends: the kick NMI of the CPU's primary vCPU.
void x86_hv_kick_primary(unsigned pcpu);

// x86_vcpu_ops.read_phys of both back ends: guest-physical memory through the
// vCPU's SLAT (EPT's R/W bits sit where NPT's P/RW do, so one walker reads
// both), never Slat's region nor beyond the host's map.
bool x86_hv_read_phys(struct vcpu *v, uint64_t gpa, void *buf, unsigned len);

#endif
