// SPDX-License-Identifier: Apache-2.0
//
// Intel VT-x back end internals (not a public contract: boot/ sees only
// arch/arch.h, arch/x86/primary.c calls vmx_enter_hypervisor()).
//
// As on arm64 there are two copies of slat.efi once Slat has started (see
// boot/resident.h): the firmware-loaded image, which keeps running in the
// primary VM as a VMX guest (it loads the OS), and the resident copy in
// Slat's reserved region, the only code that ever runs in VMX root operation.
// Every global below is the resident copy's.
#ifndef SLAT_ARCH_X86_VMX_VMX_H
#define SLAT_ARCH_X86_VMX_VMX_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/vmx/vmcs.h"
#include "core/plan.h"
#include "core/region.h"
#include "arch/x86/host_env.h"
#include "arch/x86/vcpu.h"
#include "core/vm.h"

#define VMX_STACK_PAGES 4 // 16 KiB host stack per CPU
#define VMX_VPID	1 // one VM: one tag

struct vcpu;

// The controls and fixed bits chosen once from the capability MSRs.
struct vmx_config {
	uint64_t basic, misc, ept_vpid;
	uint32_t pin, proc, proc2, exit, entry;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	uint64_t cr0_mask, cr4_mask; // bits Slat owns (writes exit)
	bool unrestricted, vpid, invept_single, invept_all, invvpid_single, invvpid_all;
	bool ept_1g, ept_2m, ept_wb;
	bool native_sipi; // use the wait-for-SIPI activity state (untested)
	// Virtual NMIs: the CPU keeps the guest's NMI blocking (interruptibility
	// state) apart from the host's, and NMI-window exiting tells when the
	// guest can take an NMI Slat holds (arch/x86/nmi.c).
	bool vnmi, nmi_window;
};

// One per physical CPU, in Slat's region.
struct vmx_pcpu {
	uint64_t vmxon_pa, vmcs_pa;
	uint64_t stack_top;
	unsigned index;
	uint32_t apic_id;
	struct vcpu *vcpu;   // core's vCPU record this CPU runs (arch part: vcpu.h)
	uint64_t cr0_shadow; // the guest's view of CR0 (owned bits)
	bool launched;	     // VMLAUNCH succeeded: VMRESUME from now on
	uint64_t exits_by_reason[VMX_EXIT_REASONS];
	bool bsp;
	uint64_t monitor_la; // last MONITOR address (guest-linear) while parked
	bool monitor_armed;
};

// Host state shared by every CPU (built once on the boot CPU).
struct vmx_host {
	struct x86_host_env env; // page tables, GDT, IDT, TSS (host_env.h)
	uint64_t msr_bitmap, io_bitmap_a, io_bitmap_b;
	uint64_t eptp;
};

// ---- vmx_entry.S ------------------------------------------------------------
// Loaded image: saves callee-saved registers and RFLAGS, calls
// fn(arg, resume_rip, resume_rsp) with interrupts masked. When fn launches
// the CPU as a guest at resume_rip/resume_rsp, this returns 0 in guest mode;
// when fn returns (an error, nothing launched), this returns its value.
int64_t vmx_call_then_launch(uint64_t fn, void *arg);
// Resident: one VM entry with the current VMCS (every vCPU's, primary or
// secondary): VMLAUNCH (resume 0) or VMRESUME, the guest's GPRs loaded from
// and stored back to gprs (enum x86_gpr order, RSP in the VMCS). 0 after a
// VM exit, 1 when the entry failed (VMCS_INSN_ERROR says why, if anything).
int vmx_enter_guest(uint64_t *gprs, uint64_t resume);
// Resident: fn(arg) on the stack below stack_top; returns when fn does.
void vmx_call_on_stack(void (*fn)(void *), void *arg, uint64_t stack_top);
extern char vmx_idt_stubs[]; // 32 entry stubs, 16 bytes apart

// ---- exit_decode.c: the VMCS exit fields to the shared form ---------------
struct vmx_exit_fields {
	uint32_t reason;    // EXIT_REASON (bit 31: VM-entry failure)
	uint64_t qual;	    // EXIT_QUALIFICATION
	uint64_t gpa;	    // GUEST_PHYSICAL_ADDRESS (EPT violations)
	uint32_t intr_info; // VM-exit interruption information
};
void vmx_decode_exit(const struct vmx_exit_fields *f, struct x86_exit *out);

// ---- caps.c: feature control, controls, fixed bits --------------------------
// Reads the capability MSRs into `c`. Returns NULL or why VMX is unusable.
const char *vmx_config_init(struct vmx_config *c);
// Makes VMXON legal on this CPU: IA32_FEATURE_CONTROL (locks it with VMX
// outside SMX when unlocked), CR0/CR4 fixed bits. False with a message.
bool vmx_cpu_prepare(const struct vmx_config *c, unsigned cpu);
void vmx_report_config(const struct vmx_config *c);

// ---- host.c: Slat's own tables for root operation ----------------------------
bool vmx_host_build(struct region *r, const struct slat_plan *plan, struct vmx_host *h);
void vmx_host_exception(uint64_t vector, uint64_t *frame);

// ---- vmcs.c: VMCS contents ------------------------------------------------
// Writes controls, host state and a guest state copied from the running CPU
// (the firmware's context) into the current VMCS.
bool vmx_vmcs_setup(struct vmx_pcpu *pc, uint64_t rip, uint64_t rsp);
const char *vmx_insn_error_name(uint64_t err);

// ---- ept.c, ept_backend.c: the EPT through the mm/ engine -----------------------
struct vmx_ept_counts {
	uint64_t leaves_1g, leaves_2m, leaves_4k, table_pages;
	uint64_t top; // guest-physical space mapped: [0, top)
};
struct x86_slat_ops;
extern const struct x86_slat_ops vmx_slat_ops;
// Identity EPT of the plan minus Slat's region, the local APIC page at `apic`
// read-only (mailbox) or RWX (native SIPI); EPTP out.
bool vmx_ept_build(struct region *r, const struct slat_plan *plan, const struct vmx_config *c,
		   uint64_t apic, uint64_t *eptp, struct vmx_ept_counts *counts);
void vmx_ept_teardown(uint64_t *pages_freed, uint64_t *invalidations);
void vmx_ept_mm_counts(struct slat_mm_counts *out);
void vmx_mm_init(struct region *r);
void vmx_mm_set_live(uint64_t eptp);
void vmx_ept_sync(unsigned cpu);

// ---- vcpu.c: the vCPU operations of every vCPU, primary or secondary --------------
extern const struct x86_vcpu_ops vmx_vcpu_ops;
// The vCPU's kind, from its VM record: true for a secondary VM's vCPU.
static inline bool vmx_secondary(const struct vcpu *v)
{
	return v->vm != &x86_primary;
}
// Where the vCPU's VMCS lives (physical address): its CPU's (struct
// vmx_pcpu) for a primary vCPU, a deposited page for a secondary.
uint64_t vmx_vmcs_of(struct vcpu *v);
// x86_vcpu_ops.write_efer: LMA from LME and CR0.PG, the IA-32e entry control from LMA.
void vmx_set_efer(struct vcpu *v, uint64_t efer);

// ---- exit.c ---------------------------------------------------------------------
// The primary's hooks (x86_vcpu_ops.wait, cr_access, init_sipi).
enum x86_action vmx_wait(struct vcpu *v, const struct x86_exit *e);
enum x86_action vmx_cr_access(struct vcpu *v, const struct x86_exit *e);
enum x86_action vmx_init_sipi(struct vcpu *v, const struct x86_exit *e);
// The primary vCPU's run loop on its CPU's host stack (struct vmx_pcpu *):
// vmx_enter_guest, then the exit's handling, again. Returns only when the
// first VMLAUNCH failed.
void vmx_primary_loop(void *pc);
// Event injection before any vCPU's entry (exit.c), the primary's and secondaries'.
void vmx_nmi_apply(struct x86_nmi_state *s, bool window);
void vmx_event_redeliver(uint64_t idt, uint32_t insn_len);
uint64_t vmx_exit_intinfo(void);
void vmx_host_nmi(void);
// Parked CPUs exit on HLT and MWAIT (so they notice their mailbox).
void vmx_set_parked(struct vmx_pcpu *pc, bool parked);

// ---- vmx.c ---------------------------------------------------------------------
// What the loaded image (launch.c) hands to the resident copy.
struct vmx_boot_args {
	struct slat_plan *plan;
	uint64_t tsc_start, tsc_hz;
	struct x86_power_ports power;
	bool native_sipi;
};
int vmx_resident_init(struct vmx_boot_args *a);
int64_t vmx_resident_cpu_start(void *unused, uint64_t rip, uint64_t rsp);
extern struct vmx_config vmx_cfg;
extern struct vmx_host vmx_host;
extern struct slat_plan vmx_plan;

// ---- hv.c: secondary VMs (arch/x86/hv.h) -------------------------------------------
// Controls, the MSR bitmap and save areas, then hv_init with the plan's RAM.
// False (after logging): no secondary VMs, every hypercall answers HC_E_UNKNOWN.
bool vmx_hv_init(struct region *r, const struct slat_plan *plan);
// The controls and owned CR bits of every secondary VMCS (set by vmx_hv_init).
struct vmx_hv_config {
	uint64_t msr_bitmap;
	uint32_t pin, proc, proc2;
	uint64_t cr0_mask, cr4_mask; // owned: the guest reads them from the read shadows
	bool ept_ad;
	bool vnmi; // virtual NMIs and NMI-window exiting: the guest's NMIs (ABI 1.8)
};
extern struct vmx_hv_config vmx_hv;

// ---- hv_state.c: where a secondary vCPU's state lives -------------------------------
struct hc_regs_x86;
// The state page (a deposited page, v->arch.hv.state_pa) in reset state;
// SET_REGS / GET_REGS on it (x86_hv_ops.set_state, get_state).
void vmx_hv_reset_state(struct vcpu *v);
void vmx_hv_set_state(struct vcpu *v, const struct hc_regs_x86 *r);
void vmx_hv_get_state(struct vcpu *v, struct hc_regs_x86 *r);
void vmx_hv_get_events(struct vcpu *v, struct hc_regs_x86 *r);	     // x86_hv_ops.get_events
void vmx_hv_set_events(struct vcpu *v, const struct hc_regs_x86 *r); // x86_hv_ops.set_events
// State page -> the current VMCS (false: a VMWRITE failed) and back.
bool vmx_hv_state_to_vmcs(struct vcpu *v);
void vmx_hv_state_from_vmcs(struct vcpu *v);
// CR2 and the MSRs VT-x does not switch: `in` saves the caller's (the
// primary vCPU's) and loads v's for a RUN; !in saves v's and restores them.
void vmx_hv_swap_live(struct vcpu *caller, struct vcpu *v, bool in);
// x86_hv_ops.msr (inside a RUN) and msr_stopped (between RUNs).
bool vmx_hv_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);
bool vmx_hv_msr_stopped(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);

#endif
