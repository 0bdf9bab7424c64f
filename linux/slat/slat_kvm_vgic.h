/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel GICv3 of /dev/kvm on arm64 (KVM_CREATE_DEVICE with
 * KVM_DEV_TYPE_ARM_VGIC_V3; docs/kvm-api.md), emulated in the module as KVM
 * emulates it in its kernel, written from the GICv3 architecture
 * specification (Arm IHI 0069): the distributor and one redistributor per
 * vCPU as MMIO the guest's accesses exit for, SGIs from Slat's sysreg exits,
 * the virtual timer's PPI from the timer state Slat reports at each exit.
 * Slat's virtual CPU interface (ABI 1.6) takes the interrupts through the list
 * registers: before each entry the module offers the highest-priority ones
 * for the vCPU (slat_vgic_flush), after each run it reads back what the guest
 * did with them (slat_vgic_sync).
 *
 * On a GICv2 machine (ABI 1.7) the same code is KVM_DEV_TYPE_ARM_VGIC_V2: a
 * 4 KiB GICv2 distributor (slat_kvm_vgic_v2.c, Arm IHI 0048B) whose private
 * registers are banked per accessing vCPU, SGIs from GICD_SGIR with their
 * source vCPU, no redistributors; the guest's memory-mapped CPU interface is
 * Slat's (it performs those accesses on the GICV frame), the module only
 * names its address in the run page. A vCPU's id is its CPU interface number.
 *
 * Locking: the VM's kvcpus xarray lock guards all of it (the distributor,
 * every vCPU's private interrupts): it also guards PSCI state, and every
 * path here is short.
 */
#ifndef SLAT_KVM_VGIC_H
#define SLAT_KVM_VGIC_H

#include "slat_kvm.h"
#include "slat_vgic_lr.h"

#define VGIC_NR_PRIVATE	     32u
#define VGIC_NR_IRQS_MAX     1024u /* GICD_TYPER.ITLinesNumber 31: INTIDs up to 1019 */
#define VGIC_NR_IRQS_SET_MAX 1023u /* KVM's bound on GRP_NR_IRQS: 992 in steps of 32 */
#define VGIC_NR_IRQS_DEF     256u  /* KVM's default without KVM_DEV_ARM_VGIC_GRP_NR_IRQS */
#define VGIC_INTID_LIMIT     1020u
#define VGIC_DIST_SIZE	     0x10000ull
#define VGIC_REDIST_SIZE     0x20000ull /* RD_base and SGI_base frames */
#define VGIC_ADDR_UNSET	     (~0ull)
#define VGIC_V2_DIST_SIZE    0x1000ull /* KVM_VGIC_V2_DIST_SIZE */
#define VGIC_V2_CPU_SIZE     0x2000ull /* KVM_VGIC_V2_CPU_SIZE */

/* The VM's distributor (slat_vm.irqchip on arm64); one allocation. */
struct slat_irqchip {
	u64 dist_base, redist_base; /* VGIC_ADDR_UNSET until the VMM sets them */
	u32 redist_count; /* REDIST_REGION's frames, 0 with the legacy REDIST: one per vCPU */
	u64 cpu_base;		    /* GICv2: the guest's CPU interface (GICC), or unset */
	u32 nr_irqs;		    /* INTIDs below this exist (SPIs from 32) */
	bool v2;		    /* KVM_DEV_TYPE_ARM_VGIC_V2 (no redistributors) */
	bool ready;  /* initialised (CTRL_INIT or a first RUN): no new vCPU, NR_IRQS fixed */
	bool mapped; /* a vCPU has run: the addresses are fixed too */
	u32 ctlr;    /* GICD_CTLR: v3 EnableGrp1 (the only group), v2 Enable */
	struct vgic_irq spi[VGIC_NR_IRQS_MAX - VGIC_NR_PRIVATE];
};

/* A vCPU's part (slat_kvm_vcpu.arch on arm64). */
struct slat_vgic_cpu {
	struct vgic_irq priv[VGIC_NR_PRIVATE]; /* SGIs 0-15, PPIs 16-31 */
	bool asleep;			       /* GICR_WAKER.ProcessorSleep */
	/* What the last flush put in Slat's list registers: the vINTIDs (a
	 * GICv2 SGI's with its source). */
	u16 lr_intid[HC_VGIC_LR_MAX];
	bool lr_latch[HC_VGIC_LR_MAX]; /* the latch moved into that lr */
	unsigned int nr_lr;
	bool loaded;		  /* a flush not yet synced */
	struct task_struct *task; /* in KVM_RUN, or NULL: kicked on new interrupts */
};

/* Either type (KVM_CAP_IRQCHIP, KVM_CAP_DEVICE_CTRL); one type: the one below. */
bool slat_vgic_offered(void);
bool slat_vgic_type_offered(u32 type);
int slat_vgic_vcpu_create(struct slat_kvm_vcpu *v);
/* Once the vCPU is in kvcpus: a GICv2 takes no vCPU id from 8 up (-EINVAL). */
int slat_vgic_vcpu_added(struct slat_kvm_vcpu *v);
void slat_vgic_vcpu_free(struct slat_kvm_vcpu *v);
long slat_vgic_create_device(struct slat_kvm_vm *kvm, void __user *up);
long slat_vgic_irq_line(struct slat_vm *vm, void __user *up);
/* Before each entry: 0, or -ENXIO (a VGIC without its addresses). */
int slat_vgic_ready(struct slat_kvm_vcpu *v);
void slat_vgic_done(struct slat_kvm_vcpu *v);
/* An exit the VGIC answers (MMIO on its frames, SGIs, WFI): SLAT_KVM_*. */
int slat_vgic_exit(struct slat_kvm_vcpu *v, struct hc_run *hr);

/* ---- shared by slat_kvm_vgic.c and slat_kvm_vgic_v2.c (under the lock) ---- */
u64 slat_vgic_common_access(struct slat_irqchip *c, struct slat_vgic_cpu *cpu, u32 off,
			    unsigned int len, bool write, u64 val, bool *hit, bool *raised);
void slat_vgic_kick(struct slat_kvm_vcpu *t);
/* Under the kvcpus lock: every vCPU in KVM_RUN looks again. */
void slat_vgic_kick_all(struct slat_vm *vm);
/* The GICv2 distributor frame, as accessed by vCPU `v`. */
u64 slat_vgic_v2_dist_access(struct slat_kvm_vcpu *v, struct slat_irqchip *c, u32 off,
			     unsigned int len, bool write, u64 val, bool *raised);
struct slat_kvm_vcpu *slat_vgic_v2_spi_target(struct slat_vm *vm, const struct vgic_irq *irq);
/* Bit n: vCPU n exists (n < 8). */
u8 slat_vgic_v2_cpus(struct slat_vm *vm);
bool slat_vgic_v2_offered(void);
/* KVM_DEV_ARM_VGIC_GRP_ADDR of a GICv2 (cmd: KVM_SET/GET/HAS_DEVICE_ATTR). */
long slat_vgic_v2_addr(struct slat_vm *vm, struct slat_irqchip *c, const struct kvm_device_attr *a,
		       unsigned int cmd);
/* Before a run: both addresses set (-ENXIO), not overlapping (-EINVAL). */
int slat_vgic_v2_check_addrs(const struct slat_irqchip *c);

/* ---- save and restore (KVM_GET/SET/HAS_DEVICE_ATTR of the register groups) ---- */

/*
 * A register block as KVM's user accesses see it: `len` bytes from `off`;
 * with `bpi` (bits per INTID) only the part that names an existing INTID.
 */
struct vgic_region {
	u32 off, len;
	u8 bpi;
};
bool slat_vgic_region_ok(const struct vgic_region *r, size_t n, u32 off, u32 nr_irqs);
int slat_vgic_user_raz_wi(bool write, u32 *val);
/* Reads register `reg` of the interface in `r` into *val, or writes *val. */
typedef int (*slat_vgic_cpuif_fn)(struct hc_regs_arm64 *r, u32 reg, u64 *val, bool set);
int slat_vgic_cpuif_access(struct slat_kvm_vcpu *t, slat_vgic_cpuif_fn fn, u32 reg, u64 *val,
			   bool set);
/* A GICv2's GRP_DIST_REGS / GRP_CPU_REGS (arm-vgic.rst), under vm->lock. */
long slat_vgic_v2_state(struct slat_vm *vm, struct slat_irqchip *c, struct kvm_device_attr *a,
			unsigned int cmd);

#endif
