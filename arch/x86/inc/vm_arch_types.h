// SPDX-License-Identifier: Apache-2.0
//
// The x86 part of core's VM and vCPU records (core/vm.h): what the shared x86
// exit layer (arch/x86/vcpu.h) and the two back ends (svm/, vmx/) keep per
// vCPU and per VM. Embedded in `struct vcpu` / `struct vm`; reach the vCPU
// from its arch part with vcpu_of_arch().
#ifndef SLAT_ARCH_X86_VM_ARCH_TYPES_H
#define SLAT_ARCH_X86_VM_ARCH_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#define X86_MAX_CPUS 8
#define X86_NR_GPRS  16

struct x86_vcpu_ops;
struct x86_vm_ops;

// The guest's NMI blocking as Slat keeps it (arch/x86/nmi.c).
struct x86_nmi_state {
	bool pending;	   // an NMI for the guest waits for injection (one, as in hardware)
	bool blocked;	   // the guest runs its NMI handler: NMIs held until its IRET
	bool iret_seen;	   // blocked, and the guest reached its IRET (intercepted) ...
	uint64_t iret_rip; // ... at this RIP: unblocked once an exit shows another RIP
	// SVM: stepping over that IRET to deliver a held NMI after it.
	bool stepping;	   // TF set by Slat, #DB intercepted
	bool step_tf;	   // the guest's own TF when the step began
	uint64_t step_dr6; // the guest's DR6 before the step (the trap sets BS)
};

// What a secondary vCPU's next VCPU_RUN completes with the VMM's answer
// (arch/x86/hv.c).
enum x86_hv_pending {
	X86_HV_PEND_NONE,
	X86_HV_PEND_IN,	     // port input: run->u.io.data -> AL/AX/EAX
	X86_HV_PEND_MMIO_RD, // MMIO read: run->u.mmio.data -> register `reg`
	X86_HV_PEND_HCALL,   // hypercall: run->u.hcall.ret[0..3] -> RAX, RBX, RCX, RDX
	X86_HV_PEND_RDMSR,   // RDMSR the VMM emulates: run->u.msr.data -> EDX:EAX
	X86_HV_PEND_WRMSR,   // WRMSR the VMM emulates: the instruction completes
};

// The x86 part of a secondary vCPU (arch/x86/hv.c, svm/hv.c). All zero for
// the primary's vCPUs.
struct x86_hv_vcpu {
	uint64_t vmcb_pa;  // its VMCB (SVM) or VMCS (VT-x), a deposited page; 0: none
	uint64_t state_pa; // VT-x: its guest state between RUNs (deposited page)
	uint64_t fpu_pa;   // its x87/SSE/AVX state while the primary runs (deposited)
	uint64_t intinfo;  // an event whose delivery the last exit interrupted
	uint64_t next_rip; // the exit's next RIP when the CPU gave it (IOIO), else 0
	uint64_t exit_rip; // RIP at the last exit: moved since, an instruction completed
	uint64_t cpuid_pa; // the VMM's CPUID table (deposited page), 0: Slat's policy
	uint32_t cpuid_n;  // its entries
	uint8_t pending;   // enum x86_hv_pending
	uint8_t intinfo_len; // VT-x: the exit's instruction length with intinfo (a
			     // software event's redelivery needs it), 0 for the VMM's
	bool launched;	   // VT-x: VMLAUNCH done in this RUN (VMRESUME next)
	bool fresh;	   // VT-x: no entry yet in this RUN (flush before the first)
	bool cb_bad;	   // VT-x: its VMCS could not be made current in this RUN
	bool caller_if;	   // SVM: the calling primary vCPU had RFLAGS.IF set (this RUN)
	bool msr_exits;	   // this RUN's hc_run.msr_exits (ABI 1.13)
	uint8_t pend_reg;  // MMIO read: destination register (enum x86_gpr)
	uint8_t pend_size; // bytes
	uint8_t pend_load; // MMIO read: bytes loaded (MOVZX: fewer than pend_size)
	bool pend_pe;	   // MSR: the guest was in protected mode (ABI 1.13's #GP)
	uint64_t pend_rip; // RIP after the instruction being completed
	uint64_t tsc_offset; // ABI 1.15: the guest's TSC is the host's plus this
};

// The x86 part of a vCPU. gpr[] must stay first: the SVM entry code
// (svm/svm_entry.S) saves and restores the guest's GPRs through a pointer
// to it.
struct vcpu_arch {
	uint64_t gpr[X86_NR_GPRS]; // enum x86_gpr order; valid while an exit is handled
	uint64_t rip;
	const struct x86_vcpu_ops *ops; // the back end's operations (vcpu.h)
	void *backend;			// the back end's per-CPU state; NULL: a secondary vCPU

	int mbox_state;	      // enum x86_mbox_state, atomic
	uint8_t sipi_vector;  // valid in X86_MBOX_SIPI
	uint32_t apic_ldr;    // last value the guest wrote to its APIC LDR
	uint32_t apic_dfr;    // ... and DFR (0xffffffff: flat model)
	uint64_t hsave_guest; // what the guest wrote to VM_HSAVE_PA (never used)
	uint32_t kicks;	      // 1: a kick was sent and not yet seen (atomic flag)
	bool insn_done;	      // the exit being handled completed the instruction (RIP advanced)
	uint32_t bad_state_streak; // invalid-state exits in a row (handle_exit.c)
	struct x86_nmi_state nmi;
	struct x86_hv_vcpu hv; // secondary vCPUs only

	// The port write that performs a power-off or reset the guest asked for
	// in the exit being handled (port 0: none; reset through 0xCF9).
	struct {
		uint16_t port;
		uint8_t size;
		uint32_t value;
	} shutdown;
};

// Ports that request power-off or reset (from the FADT, with QEMU/PC
// defaults). 0 = none.
struct x86_power_ports {
	uint16_t pm1a_cnt, pm1b_cnt; // ACPI PM1 control: SLP_EN (bit 13) = sleep/off
	uint16_t reset_port;	     // ACPI RESET_REG when it is in I/O space (0xcf9 on PCs)
	uint16_t pm_tmr;	     // ACPI PM timer port (3.579545 MHz), 0 = none
	bool s5_known;		     // SLP_TYP of S5 found in the DSDT (\_S5_)
	uint8_t s5_slp_typ;
};

// The x86 part of a VM.
struct vm_arch {
	const struct x86_vm_ops *ops; // the back end's VM-wide operations (vcpu.h)
	uint64_t tsc_start, tsc_hz;
	struct x86_power_ports power;
	uint64_t apic_base;    // physical address of the local APIC page
	uint64_t host_map_top; // the host's identity map covers [0, host_map_top)
};

#endif
