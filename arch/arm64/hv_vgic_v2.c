// SPDX-License-Identifier: Apache-2.0
//
// A secondary's GICv2 virtual CPU interface (ABI 1.7; hv_vgic.c has the
// shape). On a GICv2 machine (GIC-400, QEMU virt gic-version=2) the
// interface's controls are the memory-mapped GICH frame and the guest's CPU
// interface is the GICV frame, each banked per CPU at one address that the
// MADT's GICC entries give. Both are Slat's: the primary's stage-2 loses
// them at boot. The guest does not get GICV mapped either: the VMM names an
// IPA for its CPU interface and Slat performs the guest's accesses there on
// GICV at EL2 (KVM does the same where GICV is not page-aligned), so a
// secondary's stage-2 only ever holds its slots.
//
// The run page keeps the ICH_LR format of GICv3; this file converts it to
// and from GICH_LR<n> (32 bits: vINTID 9:0, the SGI source or the physical
// INTID from bit 10, EOI 19, priority 27:23, state 29:28, group 30, HW 31).
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hv_vcpu.h"
#include "arch/arm64/hyp.h"
#include "core/hv.h"
#include "core/log.h"

#define GICH_HCR   0x000
#define GICH_VTR   0x004
#define GICH_VMCR  0x008
#define GICH_APR   0x0f0
#define GICH_LR(n) (0x100 + 4 * (n))

#define GICH_HCR_EN   (1u << 0)
#define GICH_HCR_NPIE (1u << 3)

#define V2_LR_PINTID_SHIFT 10
#define V2_LR_EOI	   (1u << 19)
#define V2_LR_PRIO_SHIFT   23 // the top 5 bits of the 8-bit priority
#define V2_LR_STATE_SHIFT  28
#define V2_LR_GRP1	   (1u << 30)
#define V2_LR_HW	   (1u << 31)

#define LR_PINTID(lr)	((unsigned)((lr) >> HC_VGIC_LR_PINTID_SHIFT) & 0x1fff)
#define CPUIF_WORD_MASK 3u

static uint64_t v2_gich, v2_gicv;
static unsigned v2_nlr; // list registers (GICH_VTR, read once at boot)

static volatile uint32_t *gich(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(v2_gich + off);
}

// At boot, after the primary's stage-2 exists: find the frames and take them
// from the primary (its Linux runs at EL1 and has no use for them; left
// mapped they would let it rewrite a secondary's interrupts).
void arm64_vgic_v2_init(void)
{
	uint64_t h, v;

	if (!arm64_hv_gicv2_frames(&h, &v))
		return;
	if (arch_hv_primary_unmap(h, 1) || arch_hv_primary_unmap(v, 2)) {
		log_err("arm64: GICH 0x%llx / GICV 0x%llx stay the primary's: no virtual GICv2\n",
			(unsigned long long)h, (unsigned long long)v);
		return;
	}
	v2_gich = h;
	v2_gicv = v;
	v2_nlr = (*gich(GICH_VTR) & 0x3f) + 1;
	if (v2_nlr > HC_VGIC_LR_MAX)
		v2_nlr = HC_VGIC_LR_MAX;
	log_info("arm64: GICv2 virtual CPU interface: GICH 0x%llx, GICV 0x%llx (taken from the "
		 "primary), %u list registers\n",
		 (unsigned long long)h, (unsigned long long)v, arm64_vgic_v2_lr_count());
}

unsigned arm64_vgic_v2_lr_count(void)
{
	return v2_nlr;
}

static uint32_t lr_to_v2(uint64_t lr)
{
	uint32_t v = (uint32_t)(lr & 0x1fff); // vINTID and an SGI's source
	unsigned prio = (unsigned)(lr >> HC_VGIC_LR_PRIO_SHIFT) & 0xff;

	v |= (uint32_t)(prio >> 3) << V2_LR_PRIO_SHIFT;
	v |= (uint32_t)(lr >> HC_VGIC_LR_STATE_SHIFT) << V2_LR_STATE_SHIFT;
	if (lr & HC_VGIC_LR_GROUP1)
		v |= V2_LR_GRP1;
	if (lr & HC_VGIC_LR_HW)
		v |= V2_LR_HW | (uint32_t)LR_PINTID(lr) << V2_LR_PINTID_SHIFT;
	else if (lr & HC_VGIC_LR_EOI)
		v |= V2_LR_EOI;
	return v;
}

// Only the state changes while the guest runs: the rest is the VMM's lr.
static uint64_t lr_from_v2(uint64_t lr, uint32_t v)
{
	uint64_t state = (v >> V2_LR_STATE_SHIFT) & 3;

	return (lr & ~(3ull << HC_VGIC_LR_STATE_SHIFT)) | state << HC_VGIC_LR_STATE_SHIFT;
}

void arm64_vgic_v2_load(const struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g)
{
	for (unsigned i = 0; i < g->lr_max; i++)
		*gich(GICH_LR(i)) = i < g->nr ? lr_to_v2(g->lr[i]) : 0;
	*gich(GICH_VMCR) = (uint32_t)s->vgic_vmcr;
	*gich(GICH_APR) = s->vgic_ap1r[0];
	*gich(GICH_HCR) = GICH_HCR_EN | ((g->flags & HC_VGIC_NPIE) ? GICH_HCR_NPIE : 0);
	dsb(sy);
	isb();
}

void arm64_vgic_v2_save(struct arm64_hv_vcpu *s, const struct arm64_vgic_run *g, struct hc_run *run)
{
	for (unsigned i = 0; i < g->lr_max; i++) {
		if (i < g->nr)
			run->vgic.lr[i] = lr_from_v2(g->lr[i], *gich(GICH_LR(i)));
		*gich(GICH_LR(i)) = 0;
	}
	s->vgic_vmcr = *gich(GICH_VMCR);
	s->vgic_ap1r[0] = *gich(GICH_APR);
	*gich(GICH_HCR) = 0;
	dsb(sy);
	isb();
}

// The guest's access at `off` in its CPU interface, done on this CPU's GICV
// (the guest's list registers are loaded). The interface's registers are
// 32-bit words; other sizes read as zero and ignore writes.
uint64_t arm64_vgic_v2_cpuif(uint64_t off, unsigned len, bool write, uint64_t val)
{
	volatile uint32_t *reg = (volatile uint32_t *)(uintptr_t)(v2_gicv + off);

	if (len != 4 || (off & CPUIF_WORD_MASK) || off >= HC_VGIC_V2_CPUIF_SIZE)
		return 0;
	if (write) {
		*reg = (uint32_t)val;
		dsb(sy);
		return 0;
	}
	return *reg;
}
