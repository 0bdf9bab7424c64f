// SPDX-License-Identifier: Apache-2.0
//
// The backend-neutral x86 vCPU: the contract between the shared x86 exit
// layer (arch/x86/*.c: CPUID and MSR policy, instruction decoding, I/O,
// XSETBV, the INIT/SIPI APIC mailbox, power-off detection) and the two
// hardware back ends (arch/x86/svm/ for AMD SVM, arch/x86/vmx/ for Intel
// VT-x). Policy is written once, here; a back end only moves state between
// its control block (VMCB / VMCS) and the vCPU's x86 part (`v->arch`),
// decodes its exits and implements the operations in `struct x86_vcpu_ops`.
//
// How a back end uses the layer on each exit (svm_handle_exit,
// vmx_handle_exit):
//
//   1. copy the guest's GPRs (RAX and RSP included: SVM keeps them in the
//      VMCB, VMX keeps RSP in the VMCS) into v->arch.gpr[], and RIP into
//      v->arch.rip;
//   2. decode the exit into a `struct x86_exit` (svm_decode_exit,
//      vmx_decode_exit) and call x86_handle_exit(), the one policy; the
//      result says what happened (enum x86_action) and goes to
//      x86_apply_action();
//   3. copy v->arch.gpr[] and v->arch.rip back (the handlers change them only
//      as the emulated instruction would) and resume the guest.
//
// The records are core's (core/vm.h): `struct vcpu` with the x86 part
// `struct vcpu_arch` (arch/x86/inc/vm_arch_types.h) embedded, and one
// `struct vm` for the primary VM, x86_primary.
//
// A handler that "completes" an instruction advances v->rip by its length:
// ops->insn_len() when the CPU reported it (SVM NRIPS, VMX exit instruction
// length), else the length decoded from the guest's code (decode.c). A
// handler that faults the instruction calls ops->inject() and leaves RIP.
//
// Invariants the back ends keep:
//  - The guest's XCR0 is the hardware XCR0 while the host runs (neither SVM
//    nor VMX switches it; the host is built with -mgeneral-regs-only and never
//    uses extended state). The host runs with CR4.OSXSAVE set when the CPU has
//    XSAVE, so x86_handle_xsetbv() can execute XSETBV for the guest.
//  - Guest-physical == host-physical for every address the primary VM may use
//    (identity second-level map); Slat's region is never mapped for the guest,
//    and the host's own page tables identity-map all RAM, so the layer reads
//    guest memory by physical address (x86_guest_read_phys) after refusing
//    Slat's region.
//  - Guest SVM/VMX state is hidden: CPUID reports neither, EFER.SVME reads as
//    the guest wrote it (the back end keeps the real bit set), VM_CR reads as
//    disabled and locked, IA32_FEATURE_CONTROL reads as locked with VMX off.
#ifndef SLAT_ARCH_X86_VCPU_H
#define SLAT_ARCH_X86_VCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "core/region.h"
#include "core/vm.h"

// General-purpose registers in instruction-encoding order (ModRM reg/rm).
enum x86_gpr {
	X86_RAX,
	X86_RCX,
	X86_RDX,
	X86_RBX,
	X86_RSP,
	X86_RBP,
	X86_RSI,
	X86_RDI,
	X86_R8,
	X86_R9,
	X86_R10,
	X86_R11,
	X86_R12,
	X86_R13,
	X86_R14,
	X86_R15,
};
_Static_assert(X86_R15 + 1 == X86_NR_GPRS, "vm_arch_types.h sizes gpr[]");

enum x86_seg_reg { X86_ES, X86_CS, X86_SS, X86_DS, X86_FS, X86_GS };

// A segment register as the CPU caches it. `attr` uses the SVM VMCB packing
// (descriptor byte 5 in bits 0-7, the flags nibble G/D/L/AVL in bits 8-11);
// the VMX back end converts its access-rights format to this one.
struct x86_seg {
	uint16_t sel;
	uint16_t attr;
	uint32_t limit;
	uint64_t base;
};
#define X86_SEG_ATTR_L (1u << 9)  // 64-bit code segment
#define X86_SEG_ATTR_D (1u << 10) // default operand size 32 bits

// Architectural exception vectors the layer injects.
enum {
	X86_EXC_DE = 0,
	X86_EXC_DB = 1,
	X86_EXC_UD = 6,
	X86_EXC_GP = 13,
	X86_EXC_PF = 14,
	X86_EXC_MC = 18,
};

// What the back end implements. Every operation acts on the calling CPU's
// own vCPU (no cross-CPU calls).
// Outcome of a handler.
enum x86_action {
	X86_CONTINUE,  // resume the guest (RIP advanced or an exception queued)
	X86_POWER_OFF, // the guest asked to power off: call x86_vm_shutdown()
	X86_RESET,     // the guest asked to reset: call x86_vm_shutdown()
};

struct x86_exit;

struct x86_vcpu_ops {
	// CR0, CR2, CR3 or CR4 as in effect for the guest (VMX: the real guest
	// value, not the read shadow).
	uint64_t (*read_cr)(struct vcpu *v, unsigned n);
	// The guest's EFER as the guest sees it (SVM: without the SVME bit the
	// back end forces).
	uint64_t (*read_efer)(struct vcpu *v);
	// Sets the guest's EFER to `efer` (already checked by msr.c); the back
	// end adds what the hardware needs (SVM: SVME) and keeps LMA consistent.
	void (*write_efer)(struct vcpu *v, uint64_t efer);
	uint64_t (*read_rflags)(struct vcpu *v);
	void (*read_seg)(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out);
	// Queues a hardware exception for the next entry (error code when
	// has_error). The guest takes it at the current RIP.
	void (*inject)(struct vcpu *v, unsigned vector, bool has_error, uint32_t error);
	// Sets CR2 for a #PF the layer injects (SVM only: VT-x reads operands
	// itself, so its #PFs are the CPU's).
	void (*write_cr2)(struct vcpu *v, uint64_t la);
	// Length of the intercepted instruction when the CPU reported it, else 0.
	unsigned (*insn_len)(struct vcpu *v);
	// The emulated instruction completed (RIP already advanced): end an
	// interrupt shadow it ran in, and when `single_step` queue the #DB trap
	// a single-stepping CPU takes after it (DR6.BS set). The decision is
	// x86_handle_exit()'s (handle_exit.c); the back end only applies it.
	void (*complete_insn)(struct vcpu *v, bool single_step);

	// Hooks for what differs between the back ends, called by
	// x86_handle_exit() after it counted the exit (the policy stays there):
	// HLT, MWAIT or MONITOR (how a parked CPU waits for its mailbox).
	enum x86_action (*wait)(struct vcpu *v, const struct x86_exit *e);
	// A control-register access (VMX: guest/host masks; NULL when the back
	// end never intercepts CRs: such an exit is then unexpected).
	enum x86_action (*cr_access)(struct vcpu *v, const struct x86_exit *e);
	// An architectural INIT or SIPI (VMX native wait-for-SIPI; NULL: none).
	enum x86_action (*init_sipi)(struct vcpu *v, const struct x86_exit *e);
	// Optional: the guest's own NMI (not one of Slat's kicks) is now held in
	// v->arch.nmi (nmi.c); the back end injects it per x86_nmi_plan().
	void (*deliver_nmi)(struct vcpu *v);
	// Optional: the guest's CPL (SVM: the VMCB's CPL field). NULL: SS.DPL.
	unsigned (*cpl)(struct vcpu *v);
	// Optional: reads guest-physical memory of this vCPU's VM (a secondary's
	// gpa is not the host address). NULL: x86_guest_read_phys (identity).
	bool (*read_phys)(struct vcpu *v, uint64_t gpa, void *buf, unsigned len);
};

// INIT/SIPI mailbox of one vCPU (apic_mailbox.c). `state` is written by any
// CPU (the sender of an INIT or SIPI) and consumed by the owner.
enum x86_mbox_state {
	X86_MBOX_RUNNING = 0, // nothing pending
	X86_MBOX_WAIT_SIPI,   // an INIT arrived: the CPU must stop and wait for a SIPI
	X86_MBOX_SIPI,	      // a SIPI arrived while waiting: start at `sipi_vector`
};

// ---- the VM-wide part (exit.c) -------------------------------------------
struct x86_vm_ops {
	// vcpu_arch_run(): enters the guest on the calling CPU, whose vCPU
	// record `v` the back end has prepared (VMX: VMLAUNCH with the current
	// VMCS, returns only on failure; SVM: the VMRUN loop, never returns).
	void (*run)(struct vcpu *v);
	// Second-level figures for the exit summary.
	void (*mm_counts)(struct slat_mm_counts *out);
	// Batched teardown of the second-level tables (no CPU may run the guest
	// afterwards): pages freed and invalidations issued.
	void (*teardown)(uint64_t *pages_freed, uint64_t *invalidations);
	// Optional (may be NULL): makes `target`, another CPU that may be running
	// its guest without exiting (e.g. halted with HLT not intercepted), exit
	// soon so that it sees an INIT in its mailbox. Called after
	// target->kicks was set; the back end's NMI exit consumes it
	// (x86_consume_kick; both back ends: an NMI to the target, NMIs
	// intercepted).
	void (*kick)(struct vcpu *target);
	// Lets the calling CPU, in the host, take the external interrupts its
	// local APIC has pending (host IDT vectors 32-255 acknowledge them) for
	// a moment, then blocks them again. An NMI in that window is a kick
	// (consumed) or the guest's (dropped: the caller handles an INIT).
	void (*irq_window)(struct vcpu *v);
	// Optional: the back end's own lines of the exit summary.
	void (*summary)(void);
};

// The primary VM (the firmware and the OS it boots) and its vCPU records.
extern struct vm x86_primary;

// Prepares x86_primary (single-threaded, in the resident copy): core's
// vm_init(), then the x86 part (vm_arch_init()). 0, or -1 after logging why.
int x86_vm_init(const char *slat_name, const struct x86_vm_ops *ops, const struct region *slat,
		uint64_t tsc_start, uint64_t tsc_hz, const struct x86_power_ports *power);
// The vCPU of the CPU with local APIC ID `apic_id` (its hw_id), created (and
// its x86 part initialised with vcpu_arch_init()) on first use; NULL when
// X86_MAX_CPUS are taken.
struct vcpu *x86_vcpu_for_apic(uint32_t apic_id);
// Tears down, prints the exit summary and performs the power-off / reset
// request (`port`/`value` written as the guest asked). Only the first CPU
// gets here; later ones park. Does not return.
__attribute__((noreturn)) void x86_vm_shutdown(struct vcpu *v, bool reset, uint16_t port,
					       uint32_t value, unsigned size);
__attribute__((noreturn)) void x86_park(void);

// ---- exits handled by the shared layer -----------------------------------
// CPUID (cpuid.c): the policy applied to the real CPUID of this CPU.
void x86_cpuid_policy(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);
// The same for a guest whose CR4 is `cr4` (OSXSAVE and OSPKE follow it).
void x86_cpuid_policy_cr4(uint64_t cr4, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);
enum x86_action x86_handle_cpuid(struct vcpu *v);
// CPUID's answer `out` into EAX..EDX, the instruction skipped.
void x86_cpuid_answer(struct vcpu *v, const uint32_t out[4]);

// RDMSR / WRMSR (msr.c) for the MSRs the back end intercepts.
enum x86_action x86_handle_rdmsr(struct vcpu *v);
enum x86_action x86_handle_wrmsr(struct vcpu *v);
// The MSRs the policy needs to see; the back end intercepts at least these
// (SVM: MSR permission map; VMX: MSR bitmap) and lets the rest through.
struct x86_msr_intercept {
	uint32_t first, last; // an inclusive range of MSR numbers
	bool read, write;
	bool vmx_only; // exists only on Intel (the SVM back end skips it)
};
extern const struct x86_msr_intercept x86_msr_intercepts[];
extern const unsigned x86_n_msr_intercepts;

// XSETBV (exit.c): checks the new XCR0 like the CPU would (#GP otherwise)
// and loads it.
enum x86_action x86_handle_xsetbv(struct vcpu *v);

// Port I/O (exit.c). The back end intercepts the ports x86_io_intercepted()
// names and passes everything else through.
struct x86_io {
	uint16_t port;
	uint8_t size; // 1, 2 or 4
	bool in;      // IN (else OUT)
	bool string;  // INS/OUTS: not emulated, #GP
	bool rep;
};
bool x86_io_intercepted(uint16_t port);
// The I/O fast path (exit.c): performs an access the policy has nothing to
// decide about, updating *rax for an IN; false when the full path must run.
// The caller steps over the instruction.
bool x86_io_fast(struct vcpu *v, const struct x86_io *io, uint64_t *rax);
enum x86_action x86_handle_io(struct vcpu *v, const struct x86_io *io);

// ---- one exit, decoded (handle_exit.c) ----------------------------------------
// What a back end's decoder (svm_decode_exit, vmx_decode_exit: pure functions
// of the exit fields) makes of its exit code and qualification. Everything
// the policy needs is here, so both vendors get the same answer for the
// same architectural event.
enum x86_exit_kind {
	X86_EXIT_UNKNOWN,   // nothing the layer knows: logged once per code, #UD
	X86_EXIT_INTR,	    // a physical interrupt (taken by the host on resume)
	X86_EXIT_NMI,	    // an NMI: one of Slat's kicks or the guest's own
	X86_EXIT_EXCEPTION, // an intercepted exception other than NMI: logged once
	X86_EXIT_CPUID,
	X86_EXIT_RDMSR,
	X86_EXIT_WRMSR,
	X86_EXIT_XSETBV,
	X86_EXIT_CR,		 // CR access (ops->cr_access)
	X86_EXIT_IO,		 // .io
	X86_EXIT_SLAT_VIOLATION, // .gpa, .write, .fetch (NPF / EPT violation)
	X86_EXIT_HYPERCALL,	 // VMMCALL / VMCALL
	X86_EXIT_HLT,		 // ops->wait
	X86_EXIT_MWAIT,		 // ops->wait
	X86_EXIT_MONITOR,	 // ops->wait
	X86_EXIT_PAUSE,
	X86_EXIT_CACHE_FLUSH,  // INVD / WBINVD
	X86_EXIT_INIT,	       // ops->init_sipi
	X86_EXIT_SIPI,	       // ops->init_sipi, .sipi_vector
	X86_EXIT_VIRT_INSN,    // an SVM or VMX instruction: #UD (not offered)
	X86_EXIT_TRIPLE_FAULT, // shutdown: the machine resets
	X86_EXIT_IRET,	       // SVM IRET intercept (before the IRET runs): nmi.c
	X86_EXIT_NMI_WINDOW,   // VT-x NMI-window exit: the back end injects
	X86_EXIT_IRQ_WINDOW,   // interrupt window (SVM VINTR, VT-x): a secondary can take one
	X86_EXIT_BAD_STATE,    // entry refused / SLAT misconfigured: power-off
};

struct x86_exit {
	enum x86_exit_kind kind;
	const char *vendor; // "svm", "vmx" (logs)
	uint64_t code;	    // the vendor's exit code or basic reason (logs)
	uint64_t qual;	    // EXITINFO1 / exit qualification (logs, CR access)
	struct x86_io io;
	uint64_t gpa; // SLAT violation
	bool write, fetch;
	uint64_t next_rip; // RIP after the instruction when the exit gives it, else 0
	uint8_t sipi_vector;
};

// The primary's exit policy, one for both back ends (a secondary's is
// x86_hv_exit, hv.h): counts the exit (core/vm.h), makes
// every decision (CPUID, MSRs, XSETBV, I/O, hypercalls, APIC write vs SLAT
// violation, triple fault, unknown exits) and calls the back end's hooks
// (ops->wait, ...) only for what differs in hardware. v->arch.gpr[] and
// v->arch.rip hold the guest's state. The result goes to x86_apply_action().
enum x86_action x86_handle_exit(struct vcpu *v, const struct x86_exit *e);
// The core/vm.h statistics class of an exit kind, for the primary's vCPUs
// and secondaries alike (a primary's SLAT violation is counted where it is
// told apart: MMIO or SLAT fault).
enum exit_reason x86_exit_class(enum x86_exit_kind k);
// Performs a power-off or reset result (the port write the guest asked for,
// recorded in v->arch.shutdown); does nothing for X86_CONTINUE.
void x86_apply_action(struct vcpu *v, enum x86_action a);

// A guest write to its local APIC page (mapped read-only in the second-level
// tables so that every write exits): decode, emulate, mailbox (apic_mailbox.c).
enum x86_action x86_handle_apic_write(struct vcpu *v, uint64_t gpa);
// Called by the back end on every exit of `v` and whenever it parks: true
// when an INIT+SIPI arrived; then *vector is the SIPI vector and the back end
// puts the vCPU in the real-mode state a SIPI gives (CS = vector << 8,
// base vector << 12, IP 0). With an INIT but no SIPI yet it waits here.
bool x86_mailbox_poll(struct vcpu *v, uint8_t *vector);
// True when an INIT is pending for `v` (the back end may want to exit soon).
bool x86_mailbox_pending(const struct vcpu *v);
// Kicks: the sender of an INIT makes the target exit with an NMI (both back
// ends intercept NMIs), so the INIT reaches a CPU the OS halted without an
// intercepted HLT. x86_kick_nmi sends it from host/root mode (the guest's ICR
// high is put back); a back end that takes an NMI calls x86_consume_kick:
// true when it was one of Slat's kicks, false when it is the guest's own NMI
// and must be injected. A kick is a flag, not a count: NMIs that arrive
// together merge in the CPU, so two kicks may come as one NMI, and a stale
// count would later swallow a guest NMI.
void x86_kick_nmi(struct vcpu *target);
bool x86_consume_kick(struct vcpu *v);

// ---- the guest's NMI blocking (nmi.c) -----------------------------------------
// An NMI for the guest arrived (not a kick): held until the guest can take it.
void x86_nmi_raise(struct x86_nmi_state *s);
// The guest is about to execute IRET at `rip` (SVM IRET intercept).
void x86_nmi_at_iret(struct x86_nmi_state *s, uint64_t rip);
// Called on every exit with the guest's RIP: an IRET seen earlier completed
// when the RIP moved.
void x86_nmi_progress(struct x86_nmi_state *s, uint64_t rip);
// What the back end does before the next entry; `slot_free`: no other event
// is queued for injection (and nothing blocks injecting an NMI).
struct x86_nmi_plan {
	// Inject an NMI now (the state counts the guest blocked from here).
	bool inject;
	// Blocked until the guest's IRET: intercept it (SVM).
	bool intercept_iret;
	// One held and the guest is at its IRET: run the IRET alone
	// (single-step), then decide again (SVM).
	bool step_over_iret;
	// One held, not injected: exit as soon as the guest can take it (VT-x
	// NMI-window exiting).
	bool want_window;
};
struct x86_nmi_plan x86_nmi_plan(struct x86_nmi_state *s, bool slot_free);
// INIT/SIPI: nothing pending, not blocked.
void x86_nmi_reset(struct x86_nmi_state *s);

// An access to guest-physical `gpa` that the second level does not allow and
// that is not emulated: logged once per page, #GP(0) injected (see
// docs/x86-exits.md for why not #PF or #MC).
enum x86_action x86_handle_slat_violation(struct vcpu *v, uint64_t gpa, bool write, bool fetch);

// SVM/VMX instructions from the guest and other refused instructions: #UD.
enum x86_action x86_inject_ud(struct vcpu *v);
enum x86_action x86_inject_gp0(struct vcpu *v);

// The guest's current privilege level (ops->cpl, else SS.DPL).
unsigned x86_guest_cpl(struct vcpu *v);

// Advances RIP past the current instruction (reported or decoded length).
// False (and #UD queued) when the instruction cannot be decoded.
bool x86_skip_insn(struct vcpu *v);

// True when a single-step trap is due after an emulated instruction that
// completed with the guest's RFLAGS as they were when it started (TF set).
bool x86_single_step_due(uint64_t rflags);

// ---- control registers (cr.c, checks in cr_check.h) ------------------------------
struct x86_cr_state;
struct x86_cr_caps;
// The guest's current CR0/CR3/CR4/EFER and mode, and what its CPUID
// (after Slat's policy) enumerates.
void x86_guest_cr_state(struct vcpu *v, struct x86_cr_state *out);
void x86_guest_cr_caps(struct vcpu *v, struct x86_cr_caps *out);
// True when loading `val` into CR`n` (0, 3, 4) or EFER (X86_GUEST_EFER) is
// legal for the guest now.
#define X86_GUEST_EFER 0x80
bool x86_guest_cr_ok(struct vcpu *v, unsigned n, uint64_t val);
// An intercepted CR0 write (SVM, no decode assists): decodes MOV CR0, CLTS or
// LMSW at RIP, checks the value like the CPU (#GP(0)), else `apply` loads it
// and RIP advances. An instruction it cannot decode: #UD, logged.
enum x86_action x86_handle_cr0_write(struct vcpu *v, void (*apply)(struct vcpu *, uint64_t));

// ---- nested SVM (svm/nested*.c) ------------------------------------------------
// True once the SVM back end offers SVM to the primary (CPUID, EFER.SVME,
// VM_CR; arch/x86/svm/nested.h); false on VT-x and when nested SVM is off.
extern bool x86_nested_svm;
#define X86_NESTED_ASIDS 16 // CPUID 0x8000000A EBX offered with nested SVM
// CPUID 0x400000F0 with nested SVM: the shadow engine's figures (cpuid.c).
#define X86_NESTED_STATS_LEAF 0x400000f0u
extern void (*x86_nested_stats_leaf)(uint32_t out[4]);

// ---- decode.c ---------------------------------------------------------------
// Reads `len` bytes of guest-physical memory; false when any byte is Slat's
// or not RAM the host maps.
bool x86_guest_read_phys(uint64_t gpa, void *buf, unsigned len);
// Reads `len` bytes at guest-linear `la` through the guest's paging (CR0.PG,
// CR4.PAE/LA57, EFER.LMA); false on a missing translation.
bool x86_guest_read_linear(struct vcpu *v, uint64_t la, void *buf, unsigned len);

// The low `size` bytes of a value (8 or more: all of it).
static inline uint64_t x86_size_mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
}

// A register write of `size` bytes as MOV / IN do it: 8 and 16 bits merge,
// 32 bits zero-extend, 64 bits replace.
static inline void x86_put_reg(uint64_t *r, uint64_t val, unsigned size)
{
	uint64_t m = x86_size_mask(size);

	*r = size >= 4 ? val & m : (*r & ~m) | (val & m);
}

// One decoded instruction (the subset Slat emulates or skips).
struct x86_insn {
	uint8_t len;	// total length in bytes
	uint8_t opcode; // last opcode byte
	bool two_byte;	// 0F xx
	uint8_t modrm;	// when has_modrm
	bool has_modrm;
	uint8_t reg;	 // ModRM.reg with REX.R
	uint8_t rm;	 // ModRM.rm with REX.B (register forms)
	uint8_t op_size; // 2, 4 or 8
	bool rex;	 // a REX prefix: byte registers 4-7 are SPL BPL SIL DIL
	uint64_t imm;	 // immediate, when the instruction has one
	bool has_imm;
	// The memory operand's effective address (32/64-bit addressing, no
	// segment base), when ea_ok.
	uint64_t ea;
	bool ea_ok;
	uint8_t seg;	// its segment (enum x86_seg_reg): the override, else DS or SS
	bool long_mode; // decoded in 64-bit mode
};
// Fetches and decodes the instruction at v->rip. False when it cannot be
// read or is not one of the forms Slat knows (see decode.c).
bool x86_decode(struct vcpu *v, struct x86_insn *out);
// Reads `len` bytes of the decoded memory operand; its linear address in *la
// (also when the read fails: the guest's #PF address).
bool x86_read_mem_operand(struct vcpu *v, const struct x86_insn *in, void *buf, unsigned len,
			  uint64_t *la);

#endif
