// SPDX-License-Identifier: Apache-2.0
//
// AMD SVM back end of the primary VM (internal to arch/x86/svm/). VMCB
// offsets and encodings from the AMD64 Architecture Programmer's Manual,
// vol. 2, appendix B (layout of the VMCB) and chapter 15.
//
// Two copies of slat.efi exist once Slat runs (boot/resident.h): the loaded
// image, which stays in the primary VM, and the resident copy in Slat's
// region, which is the only code that runs in host mode. Globals here are
// the resident copy's.
#ifndef SLAT_ARCH_X86_SVM_SVM_H
#define SLAT_ARCH_X86_SVM_SVM_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/host_env.h"
#include "arch/x86/vcpu.h"
#include "core/plan.h"

struct sh_page;

// Nested SVM state of one CPU (nested.h; here for struct svm_cpu).
struct svm_nested_cpu {
	bool svme;	    // L1's EFER.SVME (the real bit stays set)
	bool gif;	    // L1's global interrupt flag
	bool in_l2;	    // L2 runs: the CPU's VMRUN enters vmcb02 (nested_run.c)
	bool flush;	    // INVLPGA or a new root: flush L2's TLB at entry
	bool la57;	    // L1 pages with five levels (its CR4.LA57 at VMRUN): so does NPT12
	bool np;	    // vmcb12's NP_ENABLE at VMRUN (L1 may rewrite vmcb12 while L2 runs)
	uint64_t ncr3;	    // vmcb12's N_CR3 at VMRUN (likewise: read once)
	uint64_t msrpm12;   // L1's MSR map as checked at VMRUN, 0 when not intercepting:
	uint64_t iopm12;    // never re-read from vmcb12 (L1 could point it at Slat)
	uint64_t vmcb02_pa; // Slat's VMCB for L2 (Slat's region)
	uint64_t msrpm_pa;  // vmcb02's MSR permission map: L1's OR Slat's
	uint64_t iopm_pa;   // vmcb02's I/O permission map: L1's OR Slat's
	struct sh_page *root;
	uint64_t root_gpa;  // L1's nCR3 the shadow root shadows
	uint64_t vmcb12_pa; // L1's VMCB of the L2 that runs
};

// ---- VMCB control area --------------------------------------------------------
#define VMCB_INTERCEPT_CR    0x000
#define VMCB_INTERCEPT_DR    0x004
#define VMCB_INTERCEPT_EXC   0x008
#define VMCB_INTERCEPT_MISC1 0x00c
#define VMCB_INTERCEPT_MISC2 0x010
#define VMCB_IOPM_PA	     0x040
#define VMCB_MSRPM_PA	     0x048
#define VMCB_TSC_OFFSET	     0x050
#define VMCB_ASID	     0x058
#define VMCB_TLB_CONTROL     0x05c
#define VMCB_VINTR	     0x060
#define VMCB_INT_SHADOW	     0x068
#define VMCB_EXITCODE	     0x070
#define VMCB_EXITINFO1	     0x078
#define VMCB_EXITINFO2	     0x080
#define VMCB_EXITINTINFO     0x088
#define VMCB_NP_ENABLE	     0x090
#define VMCB_EVENTINJ	     0x0a8
#define VMCB_N_CR3	     0x0b0
#define VMCB_NRIP	     0x0c8

// ---- VMCB state save area (offsets from the VMCB's start) -----------------------
#define VMCB_ES		  0x400 // segments: selector u16, attrib u16, limit u32, base u64
#define VMCB_CS		  0x410
#define VMCB_SS		  0x420
#define VMCB_DS		  0x430
#define VMCB_FS		  0x440
#define VMCB_GS		  0x450
#define VMCB_GDTR	  0x460
#define VMCB_LDTR	  0x470
#define VMCB_IDTR	  0x480
#define VMCB_TR		  0x490
#define VMCB_CPL	  0x4cb
#define VMCB_EFER	  0x4d0
#define VMCB_CR4	  0x548
#define VMCB_CR3	  0x550
#define VMCB_CR0	  0x558
#define VMCB_DR7	  0x560
#define VMCB_DR6	  0x568
#define VMCB_RFLAGS	  0x570
#define VMCB_RIP	  0x578
#define VMCB_RSP	  0x5d8
#define VMCB_RAX	  0x5f8
#define VMCB_STAR	  0x600
#define VMCB_LSTAR	  0x608
#define VMCB_CSTAR	  0x610
#define VMCB_SFMASK	  0x618
#define VMCB_KGSBASE	  0x620
#define VMCB_SYSENTER_CS  0x628
#define VMCB_SYSENTER_ESP 0x630
#define VMCB_SYSENTER_EIP 0x638
#define VMCB_CR2	  0x640
#define VMCB_G_PAT	  0x668

// Intercept vector 0 (VMCB 0x000): CR reads in bits 0-15, writes in 16-31.
#define INT0_WRITE_CR0 (1u << 16)
// Intercept vector 3 (VMCB 0x00c) and 4 (0x010) bits.
#define INT3_INTR	(1u << 0)
#define INT3_NMI	(1u << 1)
#define INT3_SMI	(1u << 2)
#define INT3_INIT	(1u << 3)
#define INT3_CPUID	(1u << 18)
#define INT3_IRET	(1u << 20)
#define INT3_HLT	(1u << 24)
#define INT3_INVLPGA	(1u << 26)
#define INT3_IOIO	(1u << 27)
#define INT3_MSR	(1u << 28)
#define INT3_SHUTDOWN	(1u << 31)
#define INT4_VMRUN	(1u << 0)
#define INT4_VMMCALL	(1u << 1)
#define INT4_VMLOAD	(1u << 2)
#define INT4_VMSAVE	(1u << 3)
#define INT4_STGI	(1u << 4)
#define INT4_CLGI	(1u << 5)
#define INT4_SKINIT	(1u << 6)
#define INT4_MWAIT	(1u << 11)
#define INT4_MWAIT_COND (1u << 12)
#define INT4_XSETBV	(1u << 13)

// Exit codes.
#define SVM_EXIT_WRITE_CR0 0x010
#define SVM_EXIT_EXC_DB	   0x041
#define SVM_EXIT_INTR	   0x060
#define SVM_EXIT_NMI	   0x061
#define SVM_EXIT_SMI	   0x062
#define SVM_EXIT_VINTR	   0x064
#define SVM_EXIT_CPUID	   0x072
#define SVM_EXIT_IRET	   0x074
#define SVM_EXIT_HLT	   0x078
#define SVM_EXIT_INVLPGA   0x07a
#define SVM_EXIT_IOIO	   0x07b
#define SVM_EXIT_MSR	   0x07c
#define SVM_EXIT_SHUTDOWN  0x07f
#define SVM_EXIT_VMRUN	   0x080
#define SVM_EXIT_VMMCALL   0x081
#define SVM_EXIT_VMLOAD	   0x082
#define SVM_EXIT_VMSAVE	   0x083
#define SVM_EXIT_STGI	   0x084
#define SVM_EXIT_CLGI	   0x085
#define SVM_EXIT_SKINIT	   0x086
#define SVM_EXIT_MWAIT	   0x08b
#define SVM_EXIT_MWAIT_C   0x08c
#define SVM_EXIT_XSETBV	   0x08d
#define SVM_EXIT_NPF	   0x400
#define SVM_EXIT_INVALID   0xffffffffffffffffull

#define EVENTINJ_VALID	   (1u << 31)
#define EVENTINJ_ERR_VALID (1u << 11)
#define EVENTINJ_TYPE_INTR (0u << 8)
#define EVENTINJ_TYPE_EXC  (3u << 8)
#define EVENTINJ_TYPE_NMI  (2u << 8)

#define RFLAGS_TF (1ull << 8)
#define RFLAGS_RF (1ull << 16)

#define TLB_CONTROL_NONE       0
#define TLB_CONTROL_FLUSH_ALL  1
#define TLB_CONTROL_FLUSH_ASID 3

#define SVM_ASID 1 // the primary VM (QEMU offers 16 ASIDs)

static inline uint64_t *vmcb64(void *vmcb, unsigned off)
{
	return (uint64_t *)((uint8_t *)vmcb + off);
}
static inline uint32_t *vmcb32(void *vmcb, unsigned off)
{
	return (uint32_t *)((uint8_t *)vmcb + off);
}
static inline uint16_t *vmcb16(void *vmcb, unsigned off)
{
	return (uint16_t *)((uint8_t *)vmcb + off);
}
static inline uint8_t *vmcb8(void *vmcb, unsigned off)
{
	return (uint8_t *)vmcb + off;
}

// The one rule for an event whose delivery an exit interrupted (EXITINTINFO),
// for the primary, a secondary and L2 alike: it goes in again at the next
// entry, unless the exit's handler queued an exception of its own.
static inline void svm_event_redeliver(void *vmcb, uint64_t intinfo)
{
	if ((intinfo & EVENTINJ_VALID) && !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID))
		*vmcb64(vmcb, VMCB_EVENTINJ) = intinfo;
}

// ---- per-CPU host state ------------------------------------------------------------
// One per physical CPU, in Slat's region. The first fields are read by
// svm_entry.S (offsets fixed there).
struct svm_cpu {
	uint64_t vmcb_pa;	 // 0: this CPU's VMCB (identity: also its address)
	uint64_t *gprs;		 // 8: the entered guest's GPRs, vcpu->arch.gpr
	uint64_t host_stack_top; // 16
	uint64_t host_cr3;	 // 24
	uint64_t gdtr_base;	 // 32: Slat's GDT
	uint64_t idtr_base;	 // 40: Slat's IDT
	uint64_t host_entry;	 // 48: svm_host_entry in the resident copy
	// 56: VMLOAD before the next VMRUN: the host wrote the VMCB's
	// VMLOAD/VMSAVE state (FS, GS, TR, LDTR, KernelGSBase, the SYSCALL and
	// SYSENTER MSRs), at launch or for a SIPI. Otherwise the CPU still holds
	// the guest's values (the host never changes them): no VMLOAD, and
	// VMSAVE only when the host reads them (svm_vmcb_save_state).
	uint64_t vmload;
	// 64: the VMCB the next VMRUN enters (and VMLOADs): vmcb_pa, the
	// nested L2's vmcb02 while L2 runs (nested_run.c), or a secondary's
	// VMCB for one entry (svm/hv.c). 72: the host's IF for that VMRUN, an
	// enum svm_run_if (set for L2 and secondaries under V_INTR_MASKING).
	uint64_t run_vmcb_pa;
	uint64_t run_sti;
	bool vmsaved;		  // this exit's VMSAVE done
	uint64_t last_exit;	  // the exit code before this one (svm_check_guest_state)
	uint64_t hsave_pa;	  // VM_HSAVE_PA page
	uint64_t next_rip;	  // exit-specific next RIP when known (IOIO), else 0
	volatile bool irq_window; // GIF is set on purpose (svm_irq_window)
	volatile bool smi_window; // GIF is set to take an SMI (svm_take_host_smi)
	volatile bool smi_window_nmi; // an NMI came in that window
	uint64_t smis;		      // SMIs taken in host mode (svm_summary)
	struct vcpu *vcpu;	  // the vCPU this CPU runs
	struct svm_nested_cpu nested;
};

// The host's IF around one VMRUN (struct svm_cpu's run_sti; svm_entry.S's
// SVM_RUN_* keep the same values).
enum svm_run_if {
	SVM_RUN_CLI = 0,	// the host's IF stays clear
	SVM_RUN_STI = 1,	// set, its STI shadow ended before VMRUN
	SVM_RUN_STI_SHADOW = 2, // set by the STI right before VMRUN (svm_run_if)
};

// run_sti for an entry of `vmcb` with the host's IF `host_if`: a guest in an
// interrupt shadow gets SVM_RUN_STI_SHADOW, for QEMU 7.2 (svm_entry.S).
static inline uint64_t svm_run_if(bool host_if, void *vmcb)
{
	if (!host_if)
		return SVM_RUN_CLI;
	return (*vmcb64(vmcb, VMCB_INT_SHADOW) & 1) ? SVM_RUN_STI_SHADOW : SVM_RUN_STI;
}

// svm_entry.S's view of the first fields (its C_* offsets).
_Static_assert(__builtin_offsetof(struct svm_cpu, gprs) == 8, "svm_entry.S C_GPRS");
_Static_assert(__builtin_offsetof(struct svm_cpu, vmload) == 56, "svm_entry.S C_VMLOAD");
_Static_assert(__builtin_offsetof(struct svm_cpu, run_vmcb_pa) == 64, "svm_entry.S C_RUN_VMCB");
_Static_assert(__builtin_offsetof(struct svm_cpu, run_sti) == 72, "svm_entry.S C_RUN_STI");

// The two kinds of SVM vCPU (one ops table, vcpu_ops.c): a primary vCPU's
// v->arch.backend is its CPU's svm_cpu (svm.c); a secondary's is NULL
// (arch_hv_vcpu_create zeroes v->arch) and its VMCB is a deposited page.
static inline struct svm_cpu *svm_primary_cpu(struct vcpu *v)
{
	return (struct svm_cpu *)v->arch.backend;
}
static inline void *svm_vcpu_vmcb(struct vcpu *v) // either kind's
{
	return (void *)(uintptr_t)(v->arch.backend ? svm_primary_cpu(v)->vmcb_pa
						   : v->arch.hv.vmcb_pa);
}

// Settings every CPU shares (set once on the boot CPU in the resident copy).
struct svm_host {
	struct x86_host_env env; // page tables, GDT, IDT (host_env.h)
	uint64_t iopm_pa;	 // 12 KiB I/O permission map
	uint64_t msrpm_pa;	 // 8 KiB MSR permission map
	uint64_t npt_root;	 // nested page tables (nCR3)
	uint32_t features;	 // CPUID 0x8000000A EDX
	bool xsave;		 // CPUID.1:ECX.XSAVE (the host sets CR4.OSXSAVE)
	struct svm_cpu cpus[X86_MAX_CPUS];
};
extern struct svm_host svm_host;

void svm_vmcb_save_state(struct svm_cpu *c); // VMSAVE once per exit (vmcb.c)
void svm_vmsave(uint64_t vmcb_pa);	     // VMSAVE: the CPU's FS, GS, TR, ... into that VMCB
void svm_irq_window(struct vcpu *v);	     // x86_vm_ops.irq_window (exit.c)
void svm_host_nmi(void);		     // the host NMI handler (svm_entry.S)
// The guest's NMIs (exit.c), for the primary's vCPUs and secondaries alike:
// before VMRUN (exit.c's svm_nmi_step_end: at the #DB exit that ends a step
// over the guest's IRET).
void svm_nmi_apply(struct x86_nmi_state *n, void *vmcb);

// An NMI an exit intercepted stays pending while GIF is 0: the host takes it
// here (its handler, svm_host_nmi, just returns).
static inline void svm_take_host_nmi(void)
{
	__asm__ volatile("stgi; nop; nop; clgi" ::: "memory");
}

// An SMI an exit intercepted: taken in host mode (exit.c). True when an NMI
// was taken in the same window (the caller handles it as an NMI exit).
bool svm_take_host_smi(void);
// The back end's lines of the exit summary (x86_vm_ops.summary, exit.c).
void svm_summary(void);

// What the loaded image hands to the resident copy.
struct svm_boot_args {
	struct slat_plan *plan;
	struct x86_power_ports power;
	uint64_t tsc_start, tsc_hz;
	uint32_t features; // CPUID 0x8000000A EDX
};

#define SVM_STACK_PAGES 4

// ---- svm_entry.S ---------------------------------------------------------------------
// Deprivileges the calling CPU: the live state becomes the guest that
// returns 0 from this call; the CPU continues as host in svm_run(). The
// VMCB's guest state must be filled in except RIP, RSP and RFLAGS.
int svm_launch(struct svm_cpu *c);
void svm_run(struct svm_cpu *c);
// Where svm_launch() continues as the host (resident copy): runs the CPU's
// vCPU with vcpu_arch_run() (svm.c), i.e. the VMRUN loop. Never returns.
void svm_host_entry(struct svm_cpu *c);
extern char svm_idt_stubs[]; // 32 exception entry stubs, 16 bytes apart

// The CPU's one VMRUN sequence (svm_entry.S): enters c->run_vmcb_pa with
// c->gprs, VMLOAD first when c->vmload, the host's IF set when c->run_sti;
// returns after the #VMEXIT. svm_run loops on it; secondaries call it.
void svm_vmrun(struct svm_cpu *c);

// ---- exit_decode.c ----------------------------------------------------------------------
// The VMCB fields that say why the guest exited.
struct svm_exit_fields {
	uint64_t code;	// EXITCODE
	uint64_t info1; // EXITINFO1
	uint64_t info2; // EXITINFO2
};
void svm_decode_exit(const struct svm_exit_fields *f, struct x86_exit *out);
// exit.c: the one way a vCPU's exit (the primary's or a secondary's) is
// taken. svm_exit_read: the fields of `vmcb`'s exit, decoded.
// svm_exit_collect, before the policy decides: the guest's RAX, RSP and RIP
// in v->arch, no event left queued and no flush pending in the VMCB, the
// guest's NMI blocking moved on (the #DB that ends Slat's step over an IRET
// becomes an NMI window) and an intercepted NMI taken by the host.
void svm_exit_read(void *vmcb, struct svm_exit_fields *f, struct x86_exit *e);
void svm_exit_collect(struct vcpu *v, void *vmcb, const struct svm_exit_fields *f,
		      struct x86_exit *e);

// ---- svm.c: set-up ------------------------------------------------------------------------
// Resident-copy entry points called from the loaded image.
int svm_resident_init(struct svm_boot_args *a);
// Prepares the calling CPU's VMCB from its live state; the loaded image then
// calls its own svm_launch() with the result (NULL: no record left).
struct svm_cpu *svm_resident_cpu_prepare(void);

// ---- hv.c: secondary VMs (arch/x86/hv.h) -------------------------------------------------
// Permission maps and save areas from Slat's region, then hv_init with the
// plan's RAM. False (after logging): no secondary VMs, every hypercall
// answers HC_E_UNKNOWN.
bool svm_hv_init(struct region *r, const struct slat_plan *plan);

// ---- hv_state.c: a secondary vCPU's state in its VMCB -------------------------------------
struct hc_regs_x86;
void svm_hv_set_state(struct vcpu *v, const struct hc_regs_x86 *r); // x86_hv_ops.set_state
void svm_hv_get_state(struct vcpu *v, struct hc_regs_x86 *r);	    // x86_hv_ops.get_state
void svm_hv_get_events(struct vcpu *v, struct hc_regs_x86 *r);	    // x86_hv_ops.get_events
void svm_hv_set_events(struct vcpu *v, const struct hc_regs_x86 *r); // x86_hv_ops.set_events
// x86_hv_ops.msr and msr_stopped: the MSRs the VMCB holds.
bool svm_hv_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val);

// ---- exit.c: the exit entry ----------------------------------------------------------------
void svm_handle_exit(struct svm_cpu *c); // called by svm_entry.S after each #VMEXIT

// ---- vcpu_ops.c: the vCPU operations of every SVM vCPU, primary or secondary ----------------
extern const struct x86_vcpu_ops svm_vcpu_ops;

// ---- vmcb.c: VMCB contents -----------------------------------------------------------------
void svm_vmcb_control(struct svm_cpu *c, void *vmcb);
// The guest state of the calling CPU (all but RIP, RSP, RFLAGS, RAX, which
// svm_launch sets).
void svm_vmcb_guest_from_live(struct svm_cpu *c, void *vmcb);
// One segment of the state save area at `off` (VMCB_CS, ...; GDTR, IDTR: sel, attr 0).
void svm_vmcb_set_seg(void *vmcb, unsigned off, uint16_t sel, uint16_t attr, uint32_t limit,
		      uint64_t base);
// The state after INIT in `vmcb` and v's GPRs: real mode at cs_sel:rip, CS base
// cs_base (a STARTUP IPI's on a primary vCPU, a new secondary vCPU's).
void svm_vmcb_init_state(void *vmcb, struct vcpu *v, uint16_t cs_sel, uint64_t cs_base,
			 uint64_t rip);
// The state a STARTUP IPI gives an AP (after INIT): real mode at vector << 12.
void svm_vmcb_sipi_reset(struct svm_cpu *c, uint8_t vector);
// True when the guest state of `vmcb` is this host's own: RIP in Slat's
// region, CS = X86_HOST_CS and CR3 = the live CR3 (called in host mode). No
// guest can be there (Slat's region is in no VM's SLAT and its CR3 is
// Slat's secret), so a #VMEXIT saved the host's state as the guest's.
bool svm_vmcb_holds_host_state(const void *vmcb);
// After the CPU's VMRUN left c->run_vmcb_pa (exit.c): logs a lost guest
// state (the check above) once per exit code, naming the guest's vCPU.
void svm_check_guest_state(struct svm_cpu *c, const char *kind, unsigned index);

// ---- host.c: permission maps, host exceptions ----------------------------------------------
void svm_iopm_build(uint8_t *iopm);
void svm_msrpm_build(uint8_t *msrpm);
void svm_host_exception(uint64_t *frame); // an exception in the host

// ---- npt_backend.c: pages, TLB flushes and counters for the NPT ------------------------
void svm_mm_init(struct region *r);
uint64_t svm_mm_page_alloc(void);   // one zeroed 4K page or 0
void svm_mm_flush_here(void *vmcb); // this VMCB's next VMRUN flushes its ASID
// The same for the mm/ engine (mm/s2_backend.h), once it is in slat.efi.
struct x86_slat_ops;
extern const struct x86_slat_ops svm_slat_ops;

// ---- npt.c: the primary's NPT through the mm/ engine ---------------------------------------
struct svm_npt_stats {
	uint64_t leaves_1g, leaves_2m, leaves_4k;
	uint64_t top; // mapped guest-physical space [0, top)
};
// The NPT format for every SLAT Slat builds: 1 GiB leaves when the CPU has them.
const struct s2_fmt *svm_npt_fmt(void);
bool svm_npt_build(const struct slat_plan *plan, uint64_t apic_page, unsigned phys_bits,
		   uint64_t *root, struct svm_npt_stats *st);
void svm_npt_teardown(uint64_t *pages_freed, uint64_t *invalidations);
// The NPT's figures for the exit summary, from the engine's statistics (x86
// walks are cache-coherent: no maintenance, so cmos stays 0).
void svm_mm_counts(struct slat_mm_counts *out);

#endif
