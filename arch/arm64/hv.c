// SPDX-License-Identifier: Apache-2.0
//
// arm64 side of secondary VMs (core/hv.h, docs/secondary-vms-arm64.md): the
// primary's hypercalls into core's dispatcher, the vCPU records and their
// registers, and VCPU_RUN's world switch. A secondary vCPU runs from inside
// the primary's HVC handler, on this CPU's EL2 stack with interrupts masked:
// the primary's EL1 system registers and EL2 controls are saved, the
// secondary's loaded, and arm64_hv_enter() ERETs into it; every exception
// from the lower EL comes back there (pcpu->hv_frame), and exits Slat can
// handle itself (stage-2 faults on slots, SMC, trapped system registers)
// re-enter at once with the secondary's state still loaded. The primary's
// state is restored before VCPU_RUN returns.
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/fmt_s2.h"
#include "arch/arm64/hv_vcpu.h"
#include "arch/arm64/hyp.h"
#include "core/hv.h"
#include "core/log.h"
#include "core/mem.h"

// A secondary's IPA width. Core's pages come one at a time, so the stage-2
// root must be one page: 44 bits (a level-0 root of 32 entries) where the
// CPU's PA range reaches 44 bits, which covers KVM's default 40-bit IPA (VM
// type 0 of the KVM API); 39 bits (a full level-1 root) otherwise.
#define HV_IPA_BITS_WIDE   44u
#define HV_IPA_BITS_NARROW 39u
#define HV_PARANGE_44	   4u // ID_AA64MMFR0_EL1.PARange encoding of 44 bits

static uint64_t hv_vtcr; // VTCR_EL2 of every secondary (arm64_hv_boot)
static unsigned hv_ipa_bits = HV_IPA_BITS_NARROW;

// ---- boot and small contract pieces -------------------------------------------------

uint64_t arm64_hv_vtcr(void)
{
	return hv_vtcr;
}

// PS of VTCR_EL2: the CPU's physical address size, at most 48 bits (52 needs
// FEAT_LPA2 with 4 KiB pages).
static unsigned hv_ps(void)
{
	unsigned enc = (unsigned)(read_sysreg(SYSREG_ID_AA64MMFR0_EL1) & 0xf);

	return enc > 5 ? 5 : enc;
}

void arm64_hv_boot_ranges(const uint64_t (*ram)[2], unsigned nram)
{
	const struct slat_plan *plan = arm64_resident_plan();
	static uint64_t slat[1][2];
	struct s2_geom g;

	hv_ipa_bits = hv_ps() >= HV_PARANGE_44 ? HV_IPA_BITS_WIDE : HV_IPA_BITS_NARROW;
	if (!s2_fmt_geom(&s2_fmt_arm64_4k, hv_ipa_bits, &g) || g.root_pages != 1) {
		log_err("arm64: no one-page stage-2 root for %u-bit IPAs; no secondary VMs\n",
			hv_ipa_bits);
		return;
	}
	hv_vtcr = arm64_s2_vtcr(&g, hv_ps());
	arm64_hv_tick_init(plan->fw.acpi_rsdp);
	arm64_vgic_v2_init();
	slat[0][0] = plan->region.base;
	slat[0][1] = plan->region.size;
	struct hv_boot b = {
	    .ram = ram,
	    .nram = nram,
	    .slat = (const uint64_t(*)[2])slat,
	    .nslat = 1,
	    .abi = HC_ABI_ARM64,
	    .ncpus = ARM64_MAX_CPUS,
	};
	if (hv_init(&b))
		log_warn("arm64: secondary VMs unavailable (hv_init failed)\n");
}

unsigned arm64_hv_ipa_bits(void)
{
	return hv_ipa_bits;
}

void arch_hv_s2_config(struct s2_vm_config *cfg)
{
	cfg->fmt = &s2_fmt_arm64_4k;
	cfg->ia_bits = hv_ipa_bits;
	cfg->caps = S2_CAP_BBM; // no FWB, no range TLBI (as the primary's)
}

unsigned arch_hv_pcpu(void)
{
	return arm64_pcpu_index();
}

void arch_hv_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}

// Slat has no SGI of its own yet: a vCPU in guest mode leaves it at the next
// physical interrupt (the primary's timer tick at the latest). Core only
// kicks when arch_hv_flush_vm answers false, which it never does here.
void arch_hv_kick_pcpu(unsigned pcpu)
{
	(void)pcpu;
}

// Every stage-1 and stage-2 entry tagged with the secondaries' VMID, on every
// CPU: TLBI VMALLS12E1IS acts on the VMID in VTTBR_EL2, so this CPU holds
// ARM64_HV_VMID there for the two instructions (the primary's base address stays).
bool arch_hv_flush_vm(struct vm *vm)
{
	uint64_t vttbr = read_sysreg("vttbr_el2");

	(void)vm;
	write_sysreg("vttbr_el2", (vttbr & ~(0xffffull << 48)) | (ARM64_HV_VMID << 48));
	isb();
	dsb(ishst);
	__asm__ volatile("tlbi vmalls12e1is" ::: "memory");
	dsb(ish);
	write_sysreg("vttbr_el2", vttbr);
	isb();
	return true;
}

// ---- the primary's calls ---------------------------------------------------------------

bool arm64_hv_uid_query(struct arm64_frame *f)
{
	if ((uint32_t)f->x[0] != HC_SMCCC_UID_FN)
		return false;
	f->x[0] = HC_UID_W0;
	f->x[1] = HC_UID_W1;
	f->x[2] = HC_UID_W2;
	f->x[3] = HC_UID_W3;
	return true;
}

// An HVC of the primary at EL1 (HVC at EL0 is UNDEFINED and never traps).
// Vendor-hypervisor ids go to core; x0..x3 carry the answer, every other
// register is left as it was.
void arm64_hv_primary_call(struct vcpu *v, struct arm64_frame *f)
{
	uint32_t w = (uint32_t)f->x[0];

	if (arm64_hv_uid_query(f))
		return;
	if ((w & ~(HC_FN_SVE_HINT | HC_FN_NUM_MASK)) != HC_FN_BASE) {
		f->x[0] = (uint64_t)-1; // SMCCC: unknown function
		return;
	}
	struct hc_regs r = {.fn = f->x[0]};

	for (unsigned i = 0; i < HC_NARGS; i++)
		r.a[i] = f->x[1 + i];
	hv_dispatch(v, &r);
	f->x[0] = r.fn;
	for (unsigned i = 0; i < 3; i++)
		f->x[1 + i] = r.a[i];
}

// ---- vCPU records ----------------------------------------------------------------------

static struct arm64_hv_vcpu *hv_state(const struct vcpu *v)
{
	return (struct arm64_hv_vcpu *)(uintptr_t)v->arch.hv_state;
}

// KVM's layout: 16 vCPUs per Aff0 cluster, then Aff1, Aff2; bit 31 RES1.
static uint64_t hv_mpidr(unsigned index)
{
	return (1ull << 31) | (index & 0xf) | (uint64_t)((index >> 4) & 0xff) << 8 |
	       (uint64_t)((index >> 12) & 0xff) << 16;
}

int arch_hv_vcpu_create(struct vcpu *v)
{
	uint64_t pa = hv_page_alloc(v->vm);

	if (!pa)
		return HC_E_NOMEM;
	v->arch = (struct vcpu_arch){.hv_state = pa};
	struct arm64_hv_vcpu *s = hv_state(v); // a zeroed page

	s->frame.spsr = PSR_DAIF | PSR_MODE_EL1H; // reset: EL1h, masked, pc 0
	s->el1.sctlr = SCTLR_EL1_RES1;		  // MMU and caches off
	s->vmpidr = hv_mpidr(v->index);
	return HC_OK;
}

void arch_hv_vcpu_destroy(struct vcpu *v)
{
	if (v->arch.hv_state)
		hv_page_free(v->vm, v->arch.hv_state);
	v->arch.hv_state = 0;
}

// x0..x30, pc and pstate live in the frame the exit vectors fill; the EL1
// system registers in s->el1 (hv_el1.c maps them).
int arch_hv_set_regs(struct vcpu *v, const void *page)
{
	const struct hc_regs_arm64 *r = page;
	struct arm64_hv_vcpu *s = hv_state(v);

	if (!arm64_hv_pstate_ok(&arm64_cpu, r->pstate))
		return HC_E_INVAL; // a privilege check: never EL2, AArch32 or odd bits
	for (unsigned i = 0; i < 31; i++)
		s->frame.x[i] = r->x[i];
	s->frame.elr = r->pc;
	s->frame.spsr = r->pstate;
	arm64_hv_regs_to_el1(r, &s->el1);
	if (r->flags & HC_REGS_ARM64_FP) { // 1.9; s->fp: V0-V31, FPSR, FPCR
		memcpy(s->fp, r->v, sizeof(r->v));
		memcpy(s->fp + 512, &r->fpsr, 8);
		memcpy(s->fp + 520, &r->fpcr, 8);
	}
	if (r->flags & HC_REGS_ARM64_GIC) { // 1.12
		s->vgic_vmcr = r->ich_vmcr & HC_ICH_VMCR_MASK;
		memcpy(s->vgic_ap0r, r->ich_ap0r, sizeof(s->vgic_ap0r));
		memcpy(s->vgic_ap1r, r->ich_ap1r, sizeof(s->vgic_ap1r));
		s->cntvoff = r->cntvoff;
	}
	if (r->flags & HC_REGS_ARM64_EL1X) { // 1.15
		s->mdscr_guest = r->mdscr_el1;
		s->el1.csselr = r->csselr_el1;
	}
	// The VMM set a new state: nothing to complete, unless it asks (1.9).
	if (!(r->flags & HC_REGS_ARM64_KEEP_PENDING))
		s->pending = HV_PENDING_NONE;
	return HC_OK;
}

void arch_hv_get_regs(struct vcpu *v, void *page)
{
	struct hc_regs_arm64 *r = page;
	const struct arm64_hv_vcpu *s = hv_state(v);

	for (unsigned i = 0; i < 31; i++)
		r->x[i] = s->frame.x[i];
	r->pc = s->frame.elr;
	r->pstate = s->frame.spsr;
	arm64_hv_el1_to_regs(&s->el1, r);
	r->mpidr_el1 = s->vmpidr;
	r->flags = HC_REGS_ARM64_FP | HC_REGS_ARM64_GIC | HC_REGS_ARM64_EL1X;
	r->mdscr_el1 = s->mdscr_guest;
	r->csselr_el1 = s->el1.csselr;
	r->ich_vmcr = s->vgic_vmcr;
	memcpy(r->ich_ap0r, s->vgic_ap0r, sizeof(r->ich_ap0r));
	memcpy(r->ich_ap1r, s->vgic_ap1r, sizeof(r->ich_ap1r));
	r->cntvoff = s->cntvoff;
	r->ich_vtr = arm64_hv_ich_vtr();
	memcpy(r->v, s->fp, sizeof(r->v));
	memcpy(&r->fpsr, s->fp + 512, 8);
	memcpy(&r->fpcr, s->fp + 520, 8);
}
