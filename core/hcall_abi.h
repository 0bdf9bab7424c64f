// SPDX-License-Identifier: Apache-2.0
//
// Slat's hypercall ABI (docs/hypercalls.md): the numbers and layouts shared
// by Slat and by the primary's Linux module (linux/slat/), which includes this
// file as it is. Only fixed-width types; no functions. The current version is
// HC_ABI_MAJOR.HC_ABI_MINOR below (VERSION returns HC_VERSION).
//
// Registers: function id in x0 / RAX, arguments a0..a5 in x1..x6 / RBX, RCX,
// RDX, RSI, RDI, R8; status back in x0 / RAX, results r0..r2 in x1..x3 /
// RBX, RCX, RDX. Every other register is preserved.
#ifndef SLAT_CORE_HCALL_ABI_H
#define SLAT_CORE_HCALL_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define HC_ABI_MAJOR 1u
// 1.1: lazy slots (SLOT_SET ADD_EMPTY, FILL, DROP; MEMFAULT exits).
// 1.2: read-only slots (SLOT_SET's HC_SLOT_F_READONLY).
// 1.3: x86 vCPU configuration: the VMM's CPUID table (VCPU_SET_CPUID, checked
//      against CPUID_SUPPORTED) and the MSRs Slat keeps per vCPU (VCPU_MSRS).
// 1.4: x86 interrupt injection through the run page (hc_run.irq, irq_window;
//      HC_EXIT_IRQ_WINDOW): KVM's KVM_INTERRUPT / request_interrupt_window.
// 1.5: x86 MSR exits (HC_EXIT_MSR) for the MSRs of a device the VMM emulates:
//      IA32_TSC_DEADLINE once the vCPU's CPUID table has the TSC-deadline
//      timer, which CPUID_SUPPORTED now offers (the VMM's LAPIC runs it).
// 1.6: arm64 virtual interrupts: the GICv3 virtual CPU interface's list
//      registers through the run page (hc_run.vgic), the guest's SGIs as
//      HC_EXIT_SYSREG exits, its virtual timer's state at each exit.
// 1.7: arm64 GICv2 machines: the same list registers for the GICv2 virtual
//      CPU interface (HC_VGIC_V2, hc_run.vgic.cpuif_ipa), whose guest
//      accesses Slat performs on the GICV frame; hc_run.vgic.gic says which
//      interface the CPU has.
// 1.8: x86 NMIs for secondaries through the run page (hc_run.nmi, nmi_state):
//      KVM's KVM_NMI and the NMI IPIs of the VMM's LAPIC.
// 1.9: dirty logging of slots (HC_SLOT_F_DIRTY_LOG, SLOT_SET LOG, DIRTY_GET,
//      DIRTY_TAKE, DIRTY_CLEAR): KVM_MEM_LOG_DIRTY_PAGES, KVM_GET_DIRTY_LOG,
//      KVM_CLEAR_DIRTY_LOG. arm64 FP/SIMD registers in the SET_REGS / GET_REGS page
//      (hc_regs_arm64.flags, v, fpsr, fpcr): GET fills them and sets
//      HC_REGS_ARM64_FP; SET takes them only with that flag (an older
//      module's page has 0 there and leaves them as they are). SET with
//      HC_REGS_ARM64_KEEP_PENDING keeps the completion of the last exit
//      (an MMIO access: pc past it, a read's register) for the next RUN, as
//      KVM completes an MMIO exit at the next KVM_RUN whatever registers the
//      VMM wrote in between. x86 x87/SSE state of a stopped vCPU (VCPU_FPU):
//      KVM's KVM_GET/SET_FPU.
// 1.10: lazy slots (ADD_EMPTY) up to HC_SLOT_LAZY_MAX_PAGES (64 GiB, the
//      largest slot that can log); a pinned ADD stays at
//      HC_SLOT_PINNED_MAX_PAGES (1 GiB, one directory of list pages). FILL,
//      DROP and the DIRTY calls take page indexes up to the lazy limit.
// 1.11: x86 event state in the SET_REGS / GET_REGS page (hc_regs_x86.flags,
//      event, event_error, shadow, nmi): an event whose delivery is under
//      way, the STI / MOV SS interrupt shadow and the NMI state, so that a
//      VMM saves and restores them (KVM_GET/SET_VCPU_EVENTS). GET fills them
//      and sets HC_REGS_X86_EVENTS; SET takes them only with that flag (an
//      older caller's page has 0 there: the event and the shadow are
//      dropped, the NMI state kept, as before 1.11). SET with
//      HC_REGS_X86_KEEP_PENDING keeps the last exit's completion (an IN's or
//      MMIO read's data, an MSR exit) for the next RUN when the RIP it sets
//      is the vCPU's, as KVM completes it at the next KVM_RUN unless the VMM
//      moved RIP; without it (and before 1.11) SET drops the completion.
// 1.12: arm64 state for save/restore in the SET_REGS / GET_REGS page
//      (HC_REGS_ARM64_GIC): the guest's virtual CPU interface (ICH_VMCR_EL2
//      and its active priorities) and the vCPU's virtual counter offset
//      (CNTVOFF_EL2 while it runs); GET also names the CPU's ICH_VTR_EL2.
//      KVM's vGIC CPU_SYSREGS and KVM_REG_ARM_TIMER_CNT writes.
// 1.13: x86 MSR exits for every MSR Slat does not keep: with hc_run.msr_exits
//      set, a secondary's RDMSR / WRMSR of such an MSR exits HC_EXIT_MSR
//      instead of taking #GP, and the VMM answers with the value or, with
//      hc_run.u.msr.fault, a #GP(0) at the next RUN:
//      KVM's MSRs emulated in the kernel (MSR_PLATFORM_INFO) and its exits
//      to user space (KVM_CAP_X86_USER_SPACE_MSR).
// 1.14: LOG_READ: a window of Slat's log (its ring in Slat's memory) into a
//      primary page, so that a box without a serial port can read it.
// 1.15: x86 TSC offset per vCPU: VCPU_MSRS of HC_MSR_TSC_OFFSET reads and
//      sets it; the guest's RDTSC and RDMSR IA32_TSC read the host's TSC
//      plus it (KVM's TSC offset, which the VMM keeps: IA32_TSC writes and
//      IA32_TSC_ADJUST exit to it).
// 1.16: arm64 MDSCR_EL1 (as the guest wrote it: not in effect) and
//      CSSELR_EL1 in the SET_REGS / GET_REGS page (HC_REGS_ARM64_EL1X; GET
//      sets it, SET takes them only with it): KVM_GET/SET_ONE_REG of both.
#define HC_ABI_MINOR 16u
#define HC_VERSION   (HC_ABI_MAJOR << 16 | HC_ABI_MINOR)

// SMCCC function id: fast call (bit 31), 64-bit convention (bit 30), owner 6
// (vendor-specific hypervisor service, bits 29:24), function number in 15:0.
#define HC_FN_BASE     0xC6000000u
#define HC_FN_SVE_HINT (1u << 16) // SMCCC 1.3: caller's SVE-state hint, ignored
#define HC_FN_NUM_MASK 0xffffu
#define HC_FN(n)       (HC_FN_BASE | (n))

// arm64 discovery: the SMCCC "vendor hypervisor call UID" query (through the
// primary's SMCCC conduit, HVC or SMC) answers this UUID in w0..w3.
#define HC_SMCCC_UID_FN 0x8600ff01u
#define HC_UID_W0	0x74616c53u // "Slat"
#define HC_UID_W1	0x3158564du // "MVX1"
#define HC_UID_W2	0x2d6d7261u
#define HC_UID_W3	0x76736263u
// x86 discovery: CPUID 0x40000000 answers "SlatSlatSlat" in EBX, ECX, EDX.

#define HC_NARGS	   6u
#define HC_GPA_BITS	   52u
#define HC_MAX_VCPUS	   1024u  // vCPU index < HC_MAX_VCPUS
#define HC_MAX_SLOTS	   32764u // slot index < HC_MAX_SLOTS (KVM_CAP_NR_MEMSLOTS)
#define HC_LIST_MAX	   512u	  // frame numbers in one list page
// Pages in one slot: a pinned ADD passes its frames in one directory page of
// list pages (1 GiB); a lazy slot (ADD_EMPTY) may be as large as the largest
// slot that can log (mm/s2.h S2_DIRTY_MAX_PAGES, 64 GiB). Before 1.10 both were 1 GiB.
#define HC_SLOT_PINNED_MAX_PAGES (HC_LIST_MAX * HC_LIST_MAX) // 1 GiB
#define HC_SLOT_LAZY_MAX_PAGES	 (1u << 24)		     // 64 GiB
#define HC_DEPOSIT_MAX	   65536u		       // pages in one DEPOSIT (256 MiB)
#define HC_VM_MAX	   ((1u << 30) - 1)	       // VM ids 1..HC_VM_MAX
#define HC_VM_FLAG_DONATE  1u // the VM's slots are donated (refused: HC_E_INVAL)
#define HC_VM_FLAG_ZAP_ALL 2u // slot delete/move zaps everything (the old way: benchmarks)

enum hc_fn {
	HC_VERSION_FN = 0x00,
	HC_DEPOSIT = 0x01,
	HC_WITHDRAW = 0x02,
	HC_VM_CREATE = 0x03,
	HC_VM_DESTROY = 0x04,
	HC_VCPU_CREATE = 0x05,
	HC_SLOT_SET = 0x06,
	HC_VCPU_RUN = 0x07,
	HC_VCPU_SET_REGS = 0x08, // a0 = VM, a1 = vCPU, a2 = page holding struct hc_regs_<arch>
	HC_VCPU_GET_REGS = 0x09, // same; Slat writes the page
	HC_VM_STATS = 0x0a,	 // a0 = VM, a1 = page: struct hc_vm_stats
	HC_HV_STATS = 0x0b,	 // a0 = page: struct hc_hv_stats
	// 1.3, x86 only (HC_E_UNKNOWN on arm64):
	HC_VCPU_SET_CPUID = 0x0c,  // a0 = VM, a1 = vCPU, a2 = page of struct hc_cpuid_entry,
				   // a3 = entries (<= HC_CPUID_MAX; 0: Slat's default again)
	HC_CPUID_SUPPORTED = 0x0d, // a0 = page: Slat writes its table; r0 = entries
	HC_VCPU_MSRS = 0x0e,	   // a0 = VM, a1 = vCPU, a2 = page of struct hc_msr_entry,
				   // a3 = entries (<= HC_MSR_MAX), a4 = 0 read / 1 write;
				   // r0 = entries done (stops at the first refused one)
	// 1.9, x86 only:
	HC_VCPU_FPU = 0x0f, // a0 = VM, a1 = vCPU, a2 = page holding the vCPU's x87/SSE
			    // state as FXSAVE64 writes it (bytes 0..415: FCW .. XMM15),
			    // a3 = 0 read / 1 write (an MXCSR the CPU refuses: HC_E_INVAL)
	HC_FN_COUNT,	    // the calls numbered from 0 without a gap (0x00..0x0f)
	// 1.14, generic calls after the architecture's range:
	HC_LOG_READ = 0x20, // a0 = page, a1 = position: r0 = bytes copied, r1 = position
			    // of the first, r2 = end (docs/hypercalls.md)
	HC_FN_END,	    // every function number is below
};
// Numbers HC_FN_ARCH_FIRST..HC_FN_ARCH_END - 1 are the architecture's calls
// (x86: 12-15 above; arm64: none); the others there are unknown functions.
#define HC_FN_ARCH_FIRST 0x0cu
#define HC_FN_ARCH_END	 0x20u
#define HC_LOG_READ_MAX	 4096u // bytes one LOG_READ copies at most

enum hc_slot_op {
	HC_SLOT_ADD = 0,    // new slot at gpa backed by `count` listed frames
	HC_SLOT_DELETE = 2, // slot-scoped zap, flush, frames back to the primary
	HC_SLOT_MOVE = 3,   // same frames at a new gpa
	// 1.1, lazy slots (KVM's model: the VMM gives a page a frame when the guest
	// first touches it and takes it back when its own mapping changes):
	HC_SLOT_ADD_EMPTY = 4, // a3 = gpa, a4 = 0, a5 = pages: a slot whose pages all
			       // lack a frame; a guest access to one exits HC_EXIT_MEMFAULT
	HC_SLOT_FILL = 5,      // a3 = first page index, a4 = list page, a5 = count (<=
			       // HC_LIST_MAX): frames for pages that lack one (any slot)
	HC_SLOT_DROP = 6,      // a3 = first page index, a4 = 0, a5 = count: the range's
			       // frames go back to the primary after a zap of the range
			       // and its flush; pages without a frame are skipped; r0 =
			       // frames given back
	// 1.9, dirty logging (mm/dirty.c: 4 KiB leaves, read-only until written):
	HC_SLOT_LOG = 7,	  // a3 = 1: the slot starts logging (its leaves are zapped
				  // once), 0: stops; a4 = a5 = 0
	HC_SLOT_DIRTY_GET = 8,	  // a3 = first page (a multiple of 64), a4 = a page of the
				  // primary's, a5 = count (<= HC_DIRTY_MAX_PAGES; a multiple
				  // of 64 unless it reaches the slot's end): the pages' bits
				  // into the page (bit i: page a3 + i), the log unchanged
	HC_SLOT_DIRTY_TAKE = 9,	  // the same, and the bits reported are cleared and their
				  // pages write-protected (one flush) before the call returns
	HC_SLOT_DIRTY_CLEAR = 10, // the same range; the page holds a mask in: the pages
				  // dirty under it are cleared and write-protected, and the
				  // page holds exactly those on return
	HC_SLOT_OP_COUNT = 11,
};
#define HC_DIRTY_MAX_PAGES 32768u // one page of bits
// SLOT_SET's a2: the op in bits 7:0, flags above (with ADD or ADD_EMPTY only).
// 1.2: HC_SLOT_F_READONLY makes the slot read-only for the guest: reads and fetches
// map its frames, a write exits as an MMIO write (HC_EXIT_MMIO) and leaves the
// memory unchanged. Any other flag, or a flag with another op: HC_E_INVAL.
#define HC_SLOT_OP_MASK	    0xffull
#define HC_SLOT_F_READONLY  (1ull << 8)
#define HC_SLOT_F_DIRTY_LOG (1ull << 9) // 1.9: the slot logs writes from the start

// Status in x0 / RAX: 0 or one of these.
enum hc_err {
	HC_OK = 0,
	HC_E_UNKNOWN = -1,	  // unknown function; also every call from a secondary
	HC_E_NOT_OWNED = -2,	  // a frame is not the primary's (or not in the needed state)
	HC_E_SLAT = -3,		  // a frame is Slat's
	HC_E_OTHER_VM = -4,	  // a frame is shared with or donated to another VM
	HC_E_ALREADY_SHARED = -5, // a frame is already shared with this VM
	HC_E_RANGE = -6,	  // beyond 2^52, wrapping, or not RAM
	HC_E_ALIGN = -7,	  // not 4 KiB aligned
	HC_E_TOO_MANY = -8,	  // a count above the call's limit
	HC_E_NOMEM = -9,	  // needs memory: DEPOSIT and retry; nothing changed
	HC_E_BAD_VM = -10,	  // no such VM
	HC_E_INVAL = -12,	  // a must-be-zero register or bit, bad flags/op/state
	HC_E_BAD_SLOT = -13,	  // slot index out of bounds or no such slot
	HC_E_BAD_VCPU = -14,	  // vCPU index out of bounds or no such vCPU
	HC_E_BUSY = -15,	  // the vCPU runs on another CPU
	HC_E_EXISTS = -16,	  // the slot/vCPU exists, or the slot overlaps one
};

// VCPU_RUN's result r0 and hc_run.reason.
enum hc_exit {
	HC_EXIT_MMIO = 1,
	HC_EXIT_IO = 2, // x86 port I/O
	HC_EXIT_HYPERCALL = 3,
	HC_EXIT_HALT = 4,
	HC_EXIT_SHUTDOWN = 5,
	HC_EXIT_PREEMPTED = 6, // a physical interrupt for the primary: run again
	HC_EXIT_FAIL_ENTRY = 7,
	HC_EXIT_INTERNAL = 8,	 // Slat could not handle the exit (hw_reason says what)
	HC_EXIT_MEMFAULT = 9,	 // 1.1: an access to a slot page without a frame (FILL it)
	HC_EXIT_IRQ_WINDOW = 10, // 1.4, x86: the guest can take an interrupt (irq_window asked)
	HC_EXIT_MSR = 11,	 // 1.5, x86: RDMSR / WRMSR of an MSR the VMM emulates
	HC_EXIT_SYSREG = 12,	 // 1.6, arm64: a GIC system register the VMM emulates (SGIs)
};

// 1.5: the MSRs that exit to the VMM (HC_EXIT_MSR), each only while the
// vCPU's CPUID table (VCPU_SET_CPUID) offers its feature.
#define HC_MSR_TSC_DEADLINE 0x6e0u // CPUID.1:ECX bit 24
// 1.15: not an MSR (no guest reaches it): the vCPU's TSC offset in VCPU_MSRS.
#define HC_MSR_TSC_OFFSET 0x534c0001u

#define HC_IRQ_VALID (1u << 31) // hc_run.irq: bits 7:0 the vector

// 1.8, x86: hc_run.nmi = 1 raises an NMI for the vCPU at this RUN (it merges
// with one already held, as NMIs do in hardware); Slat writes 0 once the vCPU
// holds it, and delivers it when the guest is not in an NMI handler (NMIs are
// blocked from an NMI's delivery to the handler's IRET). Other values:
// HC_E_INVAL. At every exit nmi_state says what Slat still holds.
#define HC_NMI_HELD    1u // one waits for delivery
#define HC_NMI_BLOCKED 2u // the guest runs its NMI handler (until its IRET)

// 1.6, arm64: hc_run.vgic. With HC_VGIC_ON the guest has the GICv3 virtual
// CPU interface (ICH_HCR_EL2.En): Slat loads lr[0..nr_lr) into ICH_LR<n>_EL2
// at each entry and writes their state back at each exit, and keeps the
// guest's ICH_VMCR_EL2 and active priorities per vCPU. An lr value is the
// ICH_LR_EL2 format; Slat refuses (HC_E_INVAL) group 0, an INTID of 1020 or
// more, RES0 bits, and the HW form for any physical INTID but the virtual
// timer's (HC_VGIC_VTIMER_INTID), whose physical interrupt Slat holds active
// while such an lr is pending or active. HC_VGIC_NPIE asks for an exit
// (PREEMPTED) once no lr is pending (the VMM has more to deliver); an lr
// with its EOI bit exits the same way once the guest deactivates it.
//
// 1.7, GICv2 machines (hc_run.vgic.gic == 2): the flags must add HC_VGIC_V2
// (and must not on GICv3) and cpuif_ipa names where the guest finds its
// memory-mapped CPU interface (8 KiB, 4 KiB aligned, no slot there). Slat
// performs the guest's 32-bit accesses to it on the CPU's GICV frame at EL2
// and does not exit (others read as zero and ignore writes). An lr is still
// in the ICH_LR format, converted to GICH_LR<n>: group 0 is allowed (a GICv2
// guest takes group 0 as IRQs), priorities keep their top 5 bits, and an
// SGI's lr carries its source vCPU in vINTID bits 12:10 (GICH_LR.CPUID).
#define HC_VGIC_ON		 1u
#define HC_VGIC_NPIE		 2u
#define HC_VGIC_V2		 4u
#define HC_VGIC_V2_SGI_SRC_SHIFT 10 // vINTID bits 12:10, SGIs only (v2)
#define HC_VGIC_V2_CPUIF_SIZE	 0x2000u
#define HC_VGIC_LR_MAX		 16u
#define HC_VGIC_VTIMER_INTID	 27u
#define HC_VGIC_LR_STATE_SHIFT	 62 // 0 invalid, 1 pending, 2 active, 3 both
#define HC_VGIC_LR_HW		 (1ull << 61)
#define HC_VGIC_LR_GROUP1	 (1ull << 60)
#define HC_VGIC_LR_PRIO_SHIFT	 48	      // 8 bits
#define HC_VGIC_LR_EOI		 (1ull << 41) // without HW: maintenance at deactivation
#define HC_VGIC_LR_PINTID_SHIFT	 32	      // with HW: 13 bits
#define HC_VGIC_LR_VINTID_MASK	 0xffffffffull

// 1.6, arm64: HC_EXIT_SYSREG's id, the system register in the ESR_EL2 ISS
// layout of a trapped MSR (Op0, Op2, Op1, CRn, CRm; Rt and direction zero).
#define HC_SYSREG_ID(op0, op1, crn, crm, op2)                                                      \
	((uint32_t)(op0) << 20 | (uint32_t)(op2) << 17 | (uint32_t)(op1) << 14 |                   \
	 (uint32_t)(crn) << 10 | (uint32_t)(crm) << 1)
#define HC_SYSREG_ICC_SGI1R  HC_SYSREG_ID(3, 0, 12, 11, 5)
#define HC_SYSREG_ICC_ASGI1R HC_SYSREG_ID(3, 0, 12, 11, 6)
#define HC_SYSREG_ICC_SGI0R  HC_SYSREG_ID(3, 0, 12, 11, 7)

// The run page of VCPU_RUN (a primary page): Slat writes the exit's details
// on the way out and reads the VMM's answer on the next VCPU_RUN of the same
// vCPU (MMIO read data, port input data, hypercall return values).
struct hc_run {
	uint32_t reason; // enum hc_exit
	uint32_t pad;
	union {
		struct {
			uint64_t gpa;
			uint64_t data; // write: the value; read: the VMM fills it
			uint8_t len;   // 1, 2, 4 or 8
			uint8_t is_write;
			uint8_t pad[6];
		} mmio;
		struct {
			uint16_t port;
			uint8_t size; // 1, 2 or 4
			uint8_t is_out;
			uint32_t count; // string I/O repetitions (1 otherwise)
			uint64_t data;	// out: the value; in: the VMM fills it
		} io;
		struct {
			uint64_t nr;
			uint64_t args[6];
			uint64_t ret[4];
		} hcall;
		struct {
			uint64_t hw_reason; // the hardware's own exit code, for diagnostics
			uint64_t info[2];
		} fail;
		struct {
			uint32_t index;	  // the MSR (ECX)
			uint8_t is_write; // WRMSR: data is EDX:EAX; RDMSR: the VMM fills data
			uint8_t fault;	  // 1.13, in: 1 = #GP(0) at the next RUN, no completion
			uint8_t pad[2];
			uint64_t data;
		} msr; // 1.5: the instruction completes at the next RUN (reads: with data)
		struct {
			uint32_t id;	  // HC_SYSREG_*
			uint8_t is_write; // MSR: data is the value; MRS: the VMM fills data
			uint8_t pad[3];
			uint64_t data;
		} sysreg; // 1.6, arm64: the instruction completes at the next RUN
		struct {
			uint64_t gpa;	  // the access's guest-physical address
			uint32_t slot;	  // the slot holding it
			uint32_t index;	  // the page's index in the slot
			uint8_t is_write; // 1: a write (or not known), 0: a read or fetch
			uint8_t pad[7];
		} memfault;
	} u;
	// 1.4, x86: the VMM's external interrupt (KVM_INTERRUPT) and interrupt
	// window (KVM's request_interrupt_window), read at each VCPU_RUN;
	// Slat writes irq back at each exit (0 once delivered) and the guest's
	// state after it. Other bits of irq, or irq_window > 1: HC_E_INVAL.
	uint32_t irq;	    // in/out: HC_IRQ_VALID | vector, delivered when the guest can take it
	uint8_t irq_window; // in: 1 = exit HC_EXIT_IRQ_WINDOW once the guest can take one
	uint8_t if_flag;    // out: the guest's RFLAGS.IF
	uint8_t irq_ready;  // out: an irq set now would be delivered at the next entry
	uint8_t pad_irq;
	// 1.6, arm64 (HC_VGIC_* above); read at each VCPU_RUN.
	struct {
		uint32_t flags; // in: HC_VGIC_ON, HC_VGIC_NPIE, HC_VGIC_V2
		uint8_t nr_lr;	// in: lr[] entries used, at most lr_max
		uint8_t lr_max; // out: the CPU's list registers (at most 16)
		uint8_t gic;	// out (1.7): 3 GICv3, 2 GICv2, 0 no interface
		uint8_t pad;
		uint64_t lr[HC_VGIC_LR_MAX]; // in: loaded at entry; out: their state at exit
		uint64_t vtimer_ctl;	     // out: CNTV_CTL_EL0 at the exit (ISTATUS: expired)
		uint64_t vtimer_cval;	     // out: CNTV_CVAL_EL0 at the exit
		uint64_t cpuif_ipa;	     // in (1.7, HC_VGIC_V2): the guest's GICC base
	} vgic;
	// 1.8, x86 (HC_NMI_* above): read at each VCPU_RUN.
	uint8_t nmi;	   // in: 1 = raise one; 0 once the vCPU holds it
	uint8_t nmi_state; // out: HC_NMI_HELD | HC_NMI_BLOCKED at the exit
	// 1.13, x86: read at each VCPU_RUN (0 or 1, else HC_E_INVAL).
	uint8_t msr_exits; // in: 1 = MSRs Slat does not keep exit HC_EXIT_MSR
	uint8_t pad_nmi[5];
};

// x86 segment register as the VMCB keeps it: attr = type(3:0) S(4) DPL(6:5)
// P(7) AVL(8) L(9) D/B(10) G(11).
struct hc_x86_seg {
	uint64_t base;
	uint32_t limit;
	uint16_t sel;
	uint16_t attr;
};

// SET_REGS / GET_REGS page on x86. gpr[] in encoding order (RAX, RCX, RDX,
// RBX, RSP, RBP, RSI, RDI, R8..R15). Illegal combinations (VMRUN/VM-entry
// consistency checks) give HC_E_INVAL at SET_REGS.
struct hc_regs_x86 {
	uint64_t gpr[16];
	uint64_t rip, rflags;
	uint64_t cr0, cr2, cr3, cr4, efer;
	struct hc_x86_seg es, cs, ss, ds, fs, gs, ldtr, tr;
	uint64_t gdt_base, idt_base;
	uint32_t gdt_limit, idt_limit;
	// 1.11 (HC_REGS_X86_EVENTS and HC_EVENT_* below).
	uint64_t flags;
	uint32_t event;	      // HC_EVENT_VALID | type | HC_EVENT_ERR | vector, or 0
	uint32_t event_error; // its error code (with HC_EVENT_ERR)
	uint8_t shadow;	      // HC_SHADOW_*: interrupts blocked for one instruction
	uint8_t nmi;	      // HC_NMI_HELD | HC_NMI_BLOCKED (the hc_run.nmi_state bits)
	uint8_t pad_events[6];
};
// 1.11: hc_regs_x86.event is an event the CPU was delivering when the vCPU
// last exited (or one Slat queued): the next entry delivers it before the
// guest runs an instruction. The layout is SVM's EVENTINJ (the AMD APM's),
// without the error code: vector 7:0, type 10:8, error code valid 11, valid
// 31. SET accepts an external interrupt (any vector), an NMI (vector 2) and
// an exception (vector 0..31 but 2; the error code only for those that push
// one is not checked, as KVM does not); other types or bits HC_E_INVAL.
// An interrupt shadow needs RFLAGS.IF on VT-x: SET without IF drops it.
#define HC_REGS_X86_EVENTS	 (1ull << 0)
#define HC_REGS_X86_KEEP_PENDING (1ull << 1)
#define HC_EVENT_VALID		 (1u << 31)
#define HC_EVENT_ERR		 (1u << 11)
#define HC_EVENT_TYPE_MASK	 (7u << 8)
#define HC_EVENT_EXTINT		 (0u << 8)
#define HC_EVENT_NMI		 (2u << 8)
#define HC_EVENT_EXC		 (3u << 8)
#define HC_SHADOW_MOV_SS	 1u // KVM's KVM_X86_SHADOW_INT_MOV_SS
#define HC_SHADOW_STI		 2u // KVM's KVM_X86_SHADOW_INT_STI

// One CPUID leaf of VCPU_SET_CPUID / CPUID_SUPPORTED (KVM's kvm_cpuid_entry2
// without its padding). HC_CPUID_F_INDEXED: `index` (ECX) selects the entry;
// otherwise it matches every ECX. A leaf the table lacks reads as zeros.
// The feature registers (docs/hypercalls.md) must be subsets of
// CPUID_SUPPORTED's for the same leaf, or SET_CPUID answers HC_E_INVAL.
#define HC_CPUID_MAX	   128u
#define HC_CPUID_F_INDEXED 1u
struct hc_cpuid_entry {
	uint32_t function, index, flags;
	uint32_t eax, ebx, ecx, edx;
	uint32_t pad; // zero
};

// One MSR of VCPU_MSRS.
#define HC_MSR_MAX 256u
struct hc_msr_entry {
	uint32_t index;
	uint32_t pad; // zero
	uint64_t data;
};

// SET_REGS / GET_REGS page on arm64. pstate's mode must be EL1h, EL1t or EL0t
// in AArch64 (HC_E_INVAL otherwise).
struct hc_regs_arm64 {
	uint64_t x[31];
	uint64_t sp_el0, sp_el1, pc, pstate;
	uint64_t elr_el1, spsr_el1, esr_el1, far_el1;
	uint64_t sctlr_el1, tcr_el1, ttbr0_el1, ttbr1_el1, mair_el1, vbar_el1;
	uint64_t cpacr_el1, contextidr_el1, tpidr_el0, tpidr_el1, tpidrro_el0;
	uint64_t amair_el1, afsr0_el1, afsr1_el1, par_el1, cntkctl_el1;
	uint64_t cntv_ctl_el0, cntv_cval_el0;
	uint64_t mpidr_el1; // read only (GET): the vCPU's affinity
	// 1.9: FP/SIMD state. flags HC_REGS_ARM64_FP: v, fpsr and fpcr are valid
	// (GET always sets it; SET applies them only with it). SET: with
	// HC_REGS_ARM64_KEEP_PENDING the last exit's completion stays pending.
	uint64_t flags;
	uint64_t v[32][2]; // V0..V31, each low 64 bits first
	uint64_t fpsr, fpcr;
	// 1.11: with HC_REGS_ARM64_GIC (GET always sets it; SET applies them
	// only with it). ich_vmcr: ICH_VMCR_EL2 (GICH_VMCR on GICv2), only its
	// defined fields (HC_ICH_VMCR_MASK); ap0r/ap1r: ICH_AP0R<n>/AP1R<n>_EL2
	// (GICH_APR in ap1r[0] on GICv2); cntvoff: CNTVOFF_EL2 while the vCPU
	// runs (its virtual count is the physical count minus it); ich_vtr: GET
	// only, the CPU's ICH_VTR_EL2 (0 without the system-register interface).
	uint64_t ich_vmcr;
	uint32_t ich_ap0r[4], ich_ap1r[4];
	uint64_t cntvoff;
	uint64_t ich_vtr;
	uint64_t mdscr_el1, csselr_el1; // 1.16, with HC_REGS_ARM64_EL1X
};
#define HC_REGS_ARM64_FP	     1ull
#define HC_REGS_ARM64_KEEP_PENDING 2ull
#define HC_REGS_ARM64_GIC	     4ull
#define HC_REGS_ARM64_EL1X	     8ull
#define HC_ICH_VMCR_MASK	     0xfffc021full // PMR, BPR0, BPR1, EOIM, CBPR, FIQEn, AckCtl, ENG1/0

// VM_STATS page: the SLAT engine's counters of one VM (mm/s2.h s2_stats) and
// what the VM holds.
struct hc_vm_stats {
	uint64_t faults, faults_mmio, faults_retry;
	uint64_t leaves_mapped[4]; // by level: 4K, 2M, 1G, 512G
	uint64_t leaves_zapped, tables_zapped;
	uint64_t tables_live, tables_max;
	uint64_t inval_context, inval_range, inval_range_pages, cmo_calls;
	uint64_t slot_updates, zap_all;
	uint64_t slots, slot_pages; // live slots and the frames they hold
	uint64_t meta_pages;	    // deposited pages the VM uses (records, tables, lists)
	uint64_t vcpus;
	uint64_t roots_alloc, roots_freed;
	uint64_t exits[16]; // per exit reason (core/vm.h order)
};

// HV_STATS page: where every deposited page is. deposited - withdrawn ==
// free + used; used == the sum of the VMs' meta_pages + own_nodes.
struct hc_hv_stats {
	uint64_t deposited, withdrawn; // pages, since boot
	uint64_t free, used;	       // in Slat's hands now
	uint64_t own_nodes;	       // ownership-table node pages
	uint64_t vms, vms_created, vms_destroyed;
	uint64_t shared_frames, donated_frames; // primary frames in slots now
	uint64_t calls, calls_failed;
	// Table pages the primary's own SLAT gained by unmapping deposited
	// pages (splits of large leaves; from Slat's region, not the deposit).
	uint64_t primary_tables;
};

#endif
