// SPDX-License-Identifier: Apache-2.0
//
// A secondary vCPU's registers as Slat keeps them between runs (one
// deposited page per vCPU, vcpu->arch.hv_state), and the EL1 system registers
// VCPU_RUN swaps between the primary and a secondary (arch/arm64/hv*.c).
#ifndef SLAT_ARCH_ARM64_HV_VCPU_H
#define SLAT_ARCH_ARM64_HV_VCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/arm64/hyp.h"
#include "core/hcall_abi.h"

// The VMID of every secondary VM (the primary's is 1, arch/arm64/s2.c): one
// for all, so entering a VM other than the last one this CPU ran flushes the
// VMID locally first (hv_entry.flush).
#define ARM64_HV_VMID 2ull

// EL1 (and EL0) system registers that belong to whoever runs at EL1.
struct arm64_el1_regs {
	uint64_t sctlr, ttbr0, ttbr1, tcr, mair, amair, vbar, contextidr;
	uint64_t tpidr_el0, tpidrro_el0, tpidr_el1, sp_el0, sp_el1;
	uint64_t elr, spsr, esr, far, afsr0, afsr1, par, cpacr, cntkctl;
	uint64_t cntv_ctl, cntv_cval, csselr, mdscr;
};

// What the next VCPU_RUN completes before entering (the VMM's answer).
enum arm64_hv_pending {
	HV_PENDING_NONE,
	HV_PENDING_MMIO_READ,  // x[reg] = the VMM's data, pc past the access
	HV_PENDING_MMIO_WRITE, // pc past the access
	HV_PENDING_HCALL,      // x0..x3 = the VMM's ret[]
	HV_PENDING_SYSREG,     // pc past the MSR (HC_EXIT_SYSREG: writes only)
};

struct arm64_hv_vcpu {
	struct arm64_frame frame; // x0..x30, pc (elr), pstate (spsr)
	struct arm64_el1_regs el1;
	uint8_t fp[528] __attribute__((aligned(16))); // V0-V31, FPSR, FPCR
	uint64_t vmpidr;
	uint64_t mdscr_guest; // MDSCR_EL1 as the guest wrote it (trapped, not in effect)
	uint32_t pending;     // enum arm64_hv_pending
	uint8_t mmio_reg, mmio_len, mmio_sse, mmio_sf;
	uint8_t insn_len; // of the access to step over (2: T32 at EL0)
	// The guest's GICv3 virtual CPU interface state (hv_vgic.c).
	uint64_t vgic_vmcr;
	uint32_t vgic_ap0r[4], vgic_ap1r[4];
	uint64_t cntvoff; // CNTVOFF_EL2 while it runs (1.12; 0 until the VMM sets one)
};

// One RUN's list registers (hv_vgic.c), from the run page.
struct arm64_vgic_run {
	uint64_t lr[HC_VGIC_LR_MAX];
	uint32_t flags;	    // HC_VGIC_*
	unsigned nr;	    // lr[] used
	unsigned lr_max;    // the CPU's list registers (with HC_VGIC_ON)
	bool vtimer_hw;	    // an lr holds the virtual timer's physical PPI
	bool vtimer_held;   // the physical timer PPI is held active for the run
	bool v2;	    // HC_VGIC_V2: the GICv2 interface (hv_vgic_v2.c)
	uint64_t cpuif_ipa; // v2: the guest's CPU interface
};
_Static_assert(sizeof(struct arm64_hv_vcpu) <= 4096, "one deposited page");

// hv.c: VTCR_EL2 of every secondary VM, and their IPA size.
uint64_t arm64_hv_vtcr(void);
unsigned arm64_hv_ipa_bits(void);

// hv_tick.c: the primary's virtual-timer deadline on CNTHP during a run.
void arm64_hv_tick_init(const void *acpi_rsdp);
void arm64_hv_tick_arm(const struct arm64_el1_regs *prim);
void arm64_hv_tick_disarm(void);

// hv_tick.c: this CPU's PPIs in its GICv3 redistributor (0: none found),
// enabled for a run with the group and priority of the primary's timer PPI.
uint64_t arm64_hv_gicv3_ppi_frame(void);
void arm64_hv_ppi_enable(unsigned intid);
void arm64_hv_ppi_disable(unsigned intid);
void arm64_hv_ppi_set_active(unsigned intid, bool active);
unsigned arm64_hv_maint_intid(void);
// hv_tick.c: the GICv2 GICH and GICV frames from the MADT (false: none, or
// not a GICv2 machine).
bool arm64_hv_gicv2_frames(uint64_t *gich, uint64_t *gicv);

// hv_vgic.c
unsigned arm64_vgic_kind(void);
unsigned arm64_vgic_lr_count(void);
uint64_t arm64_hv_ich_vtr(void);
int arm64_vgic_take(const struct hc_run *run, struct arm64_vgic_run *g);
uint64_t arm64_vgic_hcr(const struct arm64_vgic_run *g);
void arm64_vgic_load(const struct arm64_hv_vcpu *s, struct arm64_vgic_run *g);
void arm64_vgic_save(struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g, struct hc_run *run);

// hv_vgic_v2.c
void arm64_vgic_v2_init(void);
unsigned arm64_vgic_v2_lr_count(void);
void arm64_vgic_v2_load(const struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g);
void arm64_vgic_v2_save(struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g,
			struct hc_run *run);
uint64_t arm64_vgic_v2_cpuif(uint64_t off, unsigned len, bool write, uint64_t val);

// hv_el1.c
void arm64_el1_save(struct arm64_el1_regs *r);
void arm64_el1_load(const struct arm64_el1_regs *r);
void arm64_hv_regs_to_el1(const struct hc_regs_arm64 *r, struct arm64_el1_regs *e);
void arm64_hv_el1_to_regs(const struct arm64_el1_regs *e, struct hc_regs_arm64 *r);

#endif
