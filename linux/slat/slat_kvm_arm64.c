// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm on arm64 (docs/kvm-api.md): VM types with an IPA size,
 * KVM_ARM_PREFERRED_TARGET / KVM_ARM_VCPU_INIT, the ONE_REG interface over
 * Slat's register page (struct hc_regs_arm64), and the guest's SMCCC calls
 * and WFI, which KVM answers in the kernel and so does this module.
 */
#include <linux/arm-smccc.h>
#include <uapi/linux/psci.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/cputype.h>
#include <asm/sysreg.h>

#include "slat_kvm.h"
#include "slat_kvm_vgic.h"

#define A64_IPA_DEFAULT	 40u /* KVM: VM type 0 */
#define A64_IPA_MIN	 32u
#define A64_IPA_WIDE	 44u /* Slat's secondary IPA where PARange >= 44 bits */
#define A64_IPA_NARROW	 39u /* otherwise (arch/arm64/hv.c) */
#define A64_PARANGE_44	 4u
#define A64_PSTATE_RESET (PSR_MODE_EL1h | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT | PSR_D_BIT)

/* PSCI 0.2+ SYSTEM_OFF and SYSTEM_RESET (SMC32 ids): the VM asks to stop. */
#define A64_PSCI_SYSTEM_OFF   0x84000008u
#define A64_PSCI_SYSTEM_RESET 0x84000009u

/* Slat's secondary IPA width, from the same rule Slat applies. */
static unsigned int a64_ipa_limit(void)
{
	u64 mmfr0 = read_sysreg_s(SYS_ID_AA64MMFR0_EL1);

	return (mmfr0 & 0xf) >= A64_PARANGE_44 ? A64_IPA_WIDE : A64_IPA_NARROW;
}

bool slat_kvm_arch_offered(void)
{
	return true;
}

/* KVM on a GICv2 host offers 8 vCPUs (the GICv2's CPU interfaces); so here. */
unsigned int slat_kvm_arch_max_vcpus(unsigned int limit)
{
	if (!slat_vgic_type_offered(KVM_DEV_TYPE_ARM_VGIC_V3) && slat_vgic_v2_offered())
		return min_t(unsigned int, limit, VGIC_V2_MAX_CPUS);
	return limit;
}

long slat_kvm_arch_cap(long cap)
{
	switch (cap) {
	case KVM_CAP_ONE_REG:
	case KVM_CAP_MP_STATE:
	case KVM_CAP_ARM_PSCI_0_2:	 /* PSCI 1.0 with the vCPU feature */
	case KVM_CAP_ARM_SYSTEM_SUSPEND: /* once enabled (KVM_ENABLE_CAP) */
		return 1;
	case KVM_CAP_ARM_VM_IPA_SIZE:
		return a64_ipa_limit();
	case KVM_CAP_IRQCHIP:	  /* the in-kernel GICv3 or GICv2 (slat_kvm_vgic*.c) */
	case KVM_CAP_DEVICE_CTRL: /* KVM_CREATE_DEVICE for it */
		return slat_vgic_offered();
	default:
		return -1;
	}
}

int slat_kvm_arch_vm_type(unsigned long type, unsigned int *ipa_bits)
{
	unsigned int ipa = type & KVM_VM_TYPE_ARM_IPA_SIZE_MASK;

	if (type & ~(unsigned long)KVM_VM_TYPE_ARM_IPA_SIZE_MASK)
		return -EINVAL;
	if (!ipa)
		ipa = A64_IPA_DEFAULT;
	else if (ipa < A64_IPA_MIN || ipa > a64_ipa_limit())
		return -EINVAL;
	/* A CPU below 44 bits: type 0's 40 bits are cut to Slat's 39 (docs). */
	*ipa_bits = min(ipa, a64_ipa_limit());
	return 0;
}

/* KVM_ENABLE_CAP on the VM: only KVM_CAP_ARM_SYSTEM_SUSPEND (no flags). */
static long a64_enable_cap(struct slat_kvm_vm *kvm, void __user *up)
{
	struct kvm_enable_cap cap;

	if (copy_from_user(&cap, up, sizeof(cap)))
		return -EFAULT;
	if (cap.flags || cap.cap != KVM_CAP_ARM_SYSTEM_SUSPEND)
		return -EINVAL;
	WRITE_ONCE(kvm->vm->kvm_system_suspend, true);
	return 0;
}

/* KVM on arm64 has no kvm_run sync_regs (KVM_CAP_SYNC_REGS 0). */
int slat_kvm_arch_run_begin(struct slat_kvm_vcpu *v)
{
	return 0;
}

void slat_kvm_arch_run_end(struct slat_kvm_vcpu *v)
{
}

void slat_kvm_arch_vcpu_done(struct slat_kvm_vcpu *v)
{
	slat_vgic_done(v);
}

long slat_kvm_arch_dev_ioctl(unsigned int cmd, void __user *up)
{
	return -ENOTTY;
}

long slat_kvm_arch_vm_ioctl(struct slat_kvm_vm *kvm, unsigned int cmd, void __user *up)
{
	struct kvm_vcpu_init init = {.target = KVM_ARM_TARGET_GENERIC_V8};

	switch (cmd) {
	case KVM_ARM_PREFERRED_TARGET:
		return copy_to_user(up, &init, sizeof(init)) ? -EFAULT : 0;
	case KVM_ENABLE_CAP:
		return a64_enable_cap(kvm, up);
	case KVM_CREATE_DEVICE:
		return slat_vgic_create_device(kvm, up);
	case KVM_IRQ_LINE:
		return slat_vgic_irq_line(kvm->vm, up);
	default:
		return -ENOTTY;
	}
}

/* ---- registers ---- */

#define CORE_ID_SZ(sz, f) (KVM_REG_ARM64 | (sz) | KVM_REG_ARM_CORE | KVM_REG_ARM_CORE_REG(f))
#define CORE_ID(f)	  CORE_ID_SZ(KVM_REG_SIZE_U64, f)
#define VREG_ID(i)	  CORE_ID_SZ(KVM_REG_SIZE_U128, fp_regs.vregs[i])
#define FPSR_ID		  CORE_ID_SZ(KVM_REG_SIZE_U32, fp_regs.fpsr)
#define FPCR_ID		  CORE_ID_SZ(KVM_REG_SIZE_U32, fp_regs.fpcr)
#define HCR(f)		  offsetof(struct hc_regs_arm64, f)
#define A64_NR_SPSR32	  (KVM_NR_SPSR - 1) /* the AArch32 banked SPSRs: abt, und, irq, fiq */

struct a64_reg {
	u64 id;
	u32 off; /* in struct hc_regs_arm64 */
};

/* The 64-bit core registers Slat keeps besides x0..x30. */
static const struct a64_reg a64_core[] = {
    {CORE_ID(regs.sp), HCR(sp_el0)},	 {CORE_ID(regs.pc), HCR(pc)},
    {CORE_ID(regs.pstate), HCR(pstate)}, {CORE_ID(sp_el1), HCR(sp_el1)},
    {CORE_ID(elr_el1), HCR(elr_el1)},	 {CORE_ID(spsr[KVM_SPSR_EL1]), HCR(spsr_el1)},
};

static const struct a64_reg a64_sys[] = {
    {ARM64_SYS_REG(3, 0, 1, 0, 0), HCR(sctlr_el1)},
    {ARM64_SYS_REG(3, 0, 1, 0, 2), HCR(cpacr_el1)},
    {ARM64_SYS_REG(3, 0, 2, 0, 0), HCR(ttbr0_el1)},
    {ARM64_SYS_REG(3, 0, 2, 0, 1), HCR(ttbr1_el1)},
    {ARM64_SYS_REG(3, 0, 2, 0, 2), HCR(tcr_el1)},
    {ARM64_SYS_REG(3, 0, 5, 1, 0), HCR(afsr0_el1)},
    {ARM64_SYS_REG(3, 0, 5, 1, 1), HCR(afsr1_el1)},
    {ARM64_SYS_REG(3, 0, 5, 2, 0), HCR(esr_el1)},
    {ARM64_SYS_REG(3, 0, 6, 0, 0), HCR(far_el1)},
    {ARM64_SYS_REG(3, 0, 7, 4, 0), HCR(par_el1)},
    {ARM64_SYS_REG(3, 0, 10, 2, 0), HCR(mair_el1)},
    {ARM64_SYS_REG(3, 0, 10, 3, 0), HCR(amair_el1)},
    {ARM64_SYS_REG(3, 0, 12, 0, 0), HCR(vbar_el1)},
    {ARM64_SYS_REG(3, 0, 13, 0, 1), HCR(contextidr_el1)},
    {ARM64_SYS_REG(3, 0, 13, 0, 4), HCR(tpidr_el1)},
    {ARM64_SYS_REG(3, 0, 14, 1, 0), HCR(cntkctl_el1)},
    {ARM64_SYS_REG(3, 3, 13, 0, 2), HCR(tpidr_el0)},
    {ARM64_SYS_REG(3, 3, 13, 0, 3), HCR(tpidrro_el0)},
    {KVM_REG_ARM_TIMER_CTL, HCR(cntv_ctl_el0)},
    {KVM_REG_ARM_TIMER_CVAL, HCR(cntv_cval_el0)},
    {ARM64_SYS_REG(3, 0, 0, 0, 5), HCR(mpidr_el1)}, /* read only: Slat sets it */
};

#define A64_MPIDR_ID ARM64_SYS_REG(3, 0, 0, 0, 5)

/* ABI 1.16: MDSCR_EL1 (as the guest wrote it; Slat keeps it out of effect) and CSSELR_EL1. */
static const struct a64_reg a64_el1x[] = {
    {ARM64_SYS_REG(2, 0, 0, 2, 2), HCR(mdscr_el1)},
    {ARM64_SYS_REG(3, 2, 0, 0, 0), HCR(csselr_el1)},
};

static bool a64_el1x_ok(void)
{
	return (slat_hv_version & 0xffff) >= 16;
}

/*
 * Registers KVM keeps for a vCPU that a guest on Slat never reaches: ACTLR_EL1
 * (trapped, UNDEFINED), DISR_EL1 and the AArch32-only DBGVCR32, DACR32,
 * IFSR32, FPEXC32. Kept in the module as set (v->kept, same order), not in
 * effect; KVM_ARM_VCPU_INIT puts KVM's reset values back.
 */
static const struct {
	u64 id, reset;
} a64_kept[] = {
    {ARM64_SYS_REG(3, 0, 1, 0, 1), 0},	   /* ACTLR_EL1 */
    {ARM64_SYS_REG(3, 0, 12, 1, 1), 0},	   /* DISR_EL1 */
    {ARM64_SYS_REG(2, 4, 0, 7, 0), 0},	   /* DBGVCR32_EL2 */
    {ARM64_SYS_REG(3, 4, 3, 0, 0), 0},	   /* DACR32_EL2 */
    {ARM64_SYS_REG(3, 4, 5, 0, 1), 0},	   /* IFSR32_EL2 */
    {ARM64_SYS_REG(3, 4, 5, 3, 0), 0x700}, /* FPEXC32_EL2 */
};

static int a64_kept_index(u64 id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(a64_kept); i++)
		if (a64_kept[i].id == id)
			return i;
	return -1;
}

/*
 * The debug registers a guest on Slat reads as zero (MDCR_EL2 traps them,
 * writes are ignored: arch/arm64/el2_policy.c): DBGB/W{V,C}R<n>, MDCCINT
 * and OSLSR. ONE_REG reads them as the guest does and refuses another value.
 */
#define A64_MDCCINT_ID ARM64_SYS_REG(2, 0, 0, 2, 0)
#define A64_OSLSR_ID   ARM64_SYS_REG(2, 0, 1, 1, 4)
#define A64_NR_DBG     (16 * 4 + 2)

static u64 a64_dbg_list(unsigned int i)
{
	if (i >= 64)
		return i == 64 ? A64_MDCCINT_ID : A64_OSLSR_ID;
	return ARM64_SYS_REG(2, 0, 0, i / 4, 4 + i % 4);
}

static bool a64_dbg_raz(u64 id)
{
	unsigned int i;

	for (i = 0; i < A64_NR_DBG; i++)
		if (a64_dbg_list(i) == id)
			return true;
	return false;
}

/* KVM's firmware pseudo-registers, all listed whatever the vCPU's features. */
static const u64 a64_fw[] = {
    KVM_REG_ARM_PSCI_VERSION,
    KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_1,
    KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2,
    KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_3,
    KVM_REG_ARM_STD_BMAP,
    KVM_REG_ARM_STD_HYP_BMAP,
    KVM_REG_ARM_VENDOR_HYP_BMAP,
};

/* CLIDR_EL1, AIDR_EL1, CTR_EL0: as the CPU has them (the guest reads them untrapped). */
static const u64 a64_invariant[] = {
    ARM64_SYS_REG(3, 1, 0, 0, 1),
    ARM64_SYS_REG(3, 1, 0, 0, 7),
    ARM64_SYS_REG(3, 3, 0, 0, 1),
};

/* ABI 1.9: Slat's register page carries V0..V31, FPSR and FPCR. */
static bool a64_fp_ok(void)
{
	return (slat_hv_version & 0xffff) >= 9;
}

/*
 * ID registers: a secondary reads the CPU's own (Slat does not trap them),
 * which are what the primary reads too: MIDR, REVIDR and the whole ID space
 * op0 3, op1 0, CRn 0, CRm 1..7 (AArch32 ones included; its unallocated
 * encodings read as zero, architecturally RAZ), as KVM lists them. They read
 * as such and cannot change.
 */
#define ID_CASE(crm, op2)                                                                          \
	case ((crm) << 3 | (op2)):                                                                 \
		return read_sysreg_s(sys_reg(3, 0, 0, crm, op2))
#define ID_ROW(crm)                                                                                \
	ID_CASE(crm, 0);                                                                           \
	ID_CASE(crm, 1);                                                                           \
	ID_CASE(crm, 2);                                                                           \
	ID_CASE(crm, 3);                                                                           \
	ID_CASE(crm, 4);                                                                           \
	ID_CASE(crm, 5);                                                                           \
	ID_CASE(crm, 6);                                                                           \
	ID_CASE(crm, 7)

static u64 a64_id_read(unsigned int crm_op2)
{
	switch (crm_op2) {
	case 0:
		return read_cpuid_id();
		ID_CASE(0, 6); /* REVIDR */
		ID_ROW(1);
		ID_ROW(2);
		ID_ROW(3);
		ID_ROW(4);
		ID_ROW(5);
		ID_ROW(6);
		ID_ROW(7);
	default:
		return 0;
	}
}

/* The ID register `id` is (encoded as KVM_REG_ARM64_SYSREG): its value in *val. */
static bool a64_id_reg(u64 id, u64 *val)
{
	u64 base = ARM64_SYS_REG(3, 0, 0, 0, 0);
	unsigned int crm_op2;

	if ((id & ~(u64)0x3f) != base)
		return false;
	crm_op2 = id & 0x3f; /* CRm bits 6:3, op2 bits 2:0 of the sysreg id */
	if (crm_op2 < 8 && crm_op2 != 0 && crm_op2 != 6)
		return false; /* CRm 0: MIDR and REVIDR here; MPIDR is Slat's (a64_sys) */
	*val = a64_id_read(crm_op2);
	return true;
}

#define A64_NR_ID (2 + 7 * 8)

static u64 a64_id_list(unsigned int i)
{
	if (i < 2)
		return ARM64_SYS_REG(3, 0, 0, 0, i ? 6 : 0);
	i -= 2;
	return ARM64_SYS_REG(3, 0, 0, 1 + i / 8, i % 8);
}

bool slat_kvm_a64_state_ok(void)
{
	return (slat_hv_version & 0xffff) >= 12;
}

/*
 * KVM_REG_ARM_TIMER_CNT: the guest's virtual count, the CPU's count less the
 * VM's offset. A write moves the offset of every vCPU of the VM, as KVM 6.1
 * does (one CNTVOFF per VM); each vCPU takes it into Slat before its next
 * run (a64_take_cntvoff). Without ABI 1.12 Slat cannot offset the count: a
 * write is -EINVAL.
 */
static long a64_timer_cnt(struct slat_kvm_vcpu *v, u64 __user *uaddr, bool set)
{
	struct slat_vm *vm = v->vc->vm;
	u64 val;

	isb();
	if (!set)
		return put_user(read_sysreg(cntvct_el0) - READ_ONCE(vm->kvm_cntvoff), uaddr);
	if (get_user(val, uaddr))
		return -EFAULT;
	if (!slat_kvm_a64_state_ok())
		return -EINVAL;
	WRITE_ONCE(vm->kvm_cntvoff, read_sysreg(cntvct_el0) - val);
	return 0;
}

/* Before a run: the VM's counter offset into Slat, if it moved (ABI 1.12). */
static int a64_take_cntvoff(struct slat_kvm_vcpu *v)
{
	u64 off = READ_ONCE(v->vc->vm->kvm_cntvoff);
	struct hc_regs_arm64 *regs;
	int rc;

	if (off == v->cntvoff || !slat_kvm_a64_state_ok())
		return 0;
	regs = kzalloc(sizeof(*regs), GFP_KERNEL);
	if (!regs)
		return -ENOMEM;
	rc = slat_vcpu_regs_k(v->vc, regs, false);
	if (!rc) {
		regs->cntvoff = off;
		regs->flags |= HC_REGS_ARM64_GIC | HC_REGS_ARM64_KEEP_PENDING;
		rc = slat_vcpu_regs_k(v->vc, regs, true);
	}
	if (!rc)
		v->cntvoff = off;
	kfree(regs);
	return rc;
}

/* The firmware pseudo-register with the PSCI version (KVM's 1.0 here; 0.1 without the feature). */
#define A64_PSCI_VERSION PSCI_VERSION(1, 0)

/*
 * A register that reads one value and refuses another (-EINVAL): its value
 * in *val. The firmware registers say what the module answers the guest's
 * SMCCC calls: no Spectre workaround call (level NOT_AVAIL, 0) and none of
 * the services the bitmaps name (TRNG, stolen time, KVM's vendor calls).
 */
static bool a64_fixed_reg(struct slat_kvm_vcpu *v, u64 id, u64 *val)
{
	unsigned int i;

	if (a64_id_reg(id, val))
		return true;
	*val = 0;
	if (a64_dbg_raz(id))
		return true;
	if (id == KVM_REG_ARM_PSCI_VERSION) {
		*val = v->psci ? A64_PSCI_VERSION : PSCI_VERSION(0, 1);
		return true;
	}
	for (i = 0; i < ARRAY_SIZE(a64_fw); i++)
		if (id == a64_fw[i])
			return true;
	if (id == a64_invariant[0])
		*val = read_sysreg(clidr_el1);
	else if (id == a64_invariant[1])
		*val = read_sysreg(aidr_el1);
	else if (id == a64_invariant[2])
		*val = read_sysreg(ctr_el0);
	else
		return false;
	return true;
}

/* KVM's rule for WORKAROUND_2 at level NOT_AVAIL: UNKNOWN (1) is taken as NOT_AVAIL too. */
static bool a64_fixed_accepts(u64 id, u64 want, u64 val)
{
	if (id == KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2)
		return val == KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2_NOT_AVAIL ||
		       val == KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2_UNKNOWN;
	return val == want;
}

/*
 * The CCSIDR_EL1 of each cache CLIDR_EL1 names (KVM's DEMUX ids): index bit 0
 * instruction, bits 3:1 the level; as the CPU has them (the guest reads them).
 */
#define A64_NR_CSSELR 14
#define A64_CCSIDR_ID(i)                                                                           \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U32 | KVM_REG_ARM_DEMUX | KVM_REG_ARM_DEMUX_ID_CCSIDR | (i))

static bool a64_cache_exists(unsigned int sel)
{
	unsigned int type = (read_sysreg(clidr_el1) >> (sel / 2 * 3)) & 7;

	if (sel >= A64_NR_CSSELR)
		return false;
	switch (type) {
	case 1: /* instruction only */
		return sel & 1;
	case 2: /* data only */
	case 4: /* unified */
		return !(sel & 1);
	case 3: /* separate */
		return true;
	default: /* none, or reserved */
		return false;
	}
}

static u32 a64_ccsidr(unsigned int sel)
{
	unsigned long flags;
	u64 old;
	u32 val;

	local_irq_save(flags); /* CSSELR is this CPU's until it is put back */
	old = read_sysreg(csselr_el1);
	write_sysreg(sel, csselr_el1);
	isb();
	val = read_sysreg(ccsidr_el1);
	write_sysreg(old, csselr_el1);
	isb();
	local_irq_restore(flags);
	return val;
}

/* KVM_REG_ARM_DEMUX: a cache's CCSIDR, 32 bits; another value -EINVAL. */
static long a64_demux(u64 id, u32 __user *uaddr, bool set)
{
	u64 sel = id & ~(u64)(KVM_REG_ARCH_MASK | KVM_REG_SIZE_MASK | KVM_REG_ARM_COPROC_MASK);
	u32 val;

	if ((id & KVM_REG_SIZE_MASK) != KVM_REG_SIZE_U32 || sel >= A64_NR_CSSELR ||
	    !a64_cache_exists(sel))
		return -ENOENT;
	if (!set)
		return put_user(a64_ccsidr(sel), uaddr);
	if (get_user(val, uaddr))
		return -EFAULT;
	return val == a64_ccsidr(sel) ? 0 : -EINVAL;
}

/*
 * Every id KVM_GET_REG_LIST gives (KVM 6.1's list for a vCPU with the same
 * features) into buf, or only counted with buf NULL: the count and the list
 * come from the same walk.
 */
static unsigned int a64_reg_ids(const struct slat_kvm_vcpu *v, u64 *buf)
{
	unsigned int i, k = 0;

#define ADD(id)                                                                                    \
	do {                                                                                       \
		if (buf)                                                                           \
			buf[k] = (id);                                                             \
		k++;                                                                               \
	} while (0)
	for (i = 0; i < 31; i++)
		ADD(CORE_ID(regs.regs[i]));
	for (i = 0; i < ARRAY_SIZE(a64_core); i++)
		ADD(a64_core[i].id);
	for (i = 0; i < A64_NR_SPSR32; i++)
		ADD(CORE_ID(spsr[KVM_SPSR_ABT + i]));
	for (i = 0; a64_fp_ok() && i < 32; i++)
		ADD(VREG_ID(i));
	if (a64_fp_ok()) {
		ADD(FPSR_ID);
		ADD(FPCR_ID);
	}
	for (i = 0; i < ARRAY_SIZE(a64_fw); i++)
		ADD(a64_fw[i]);
	ADD(KVM_REG_ARM_TIMER_CNT);
	for (i = 0; i < ARRAY_SIZE(a64_sys); i++)
		ADD(a64_sys[i].id);
	for (i = 0; a64_el1x_ok() && i < ARRAY_SIZE(a64_el1x); i++)
		ADD(a64_el1x[i].id);
	for (i = 0; i < ARRAY_SIZE(a64_kept); i++)
		ADD(a64_kept[i].id);
	for (i = 0; i < ARRAY_SIZE(a64_invariant); i++)
		ADD(a64_invariant[i]);
	for (i = 0; i < A64_NR_ID; i++)
		ADD(a64_id_list(i));
	for (i = 0; i < A64_NR_DBG; i++)
		ADD(a64_dbg_list(i));
	for (i = 0; i < A64_NR_CSSELR; i++)
		if (a64_cache_exists(i))
			ADD(A64_CCSIDR_ID(i));
#undef ADD
	return k;
}

/* Where `id` lives in Slat's page; -ENOENT for a register Slat does not keep. */
static int a64_reg_off(u64 id)
{
	unsigned int i;

	for (i = 0; i < 31; i++)
		if (id == CORE_ID(regs.regs[i]))
			return HCR(x[i]);
	for (i = 0; i < ARRAY_SIZE(a64_core); i++)
		if (id == a64_core[i].id)
			return a64_core[i].off;
	for (i = 0; i < ARRAY_SIZE(a64_sys); i++)
		if (id == a64_sys[i].id)
			return a64_sys[i].off;
	for (i = 0; a64_el1x_ok() && i < ARRAY_SIZE(a64_el1x); i++)
		if (id == a64_el1x[i].id)
			return a64_el1x[i].off;
	if (!a64_fp_ok())
		return -ENOENT;
	for (i = 0; i < 32; i++)
		if (id == VREG_ID(i))
			return HCR(v[i]);
	if (id == FPSR_ID)
		return HCR(fpsr);
	if (id == FPCR_ID)
		return HCR(fpcr);
	return -ENOENT;
}

/* An AArch32 banked SPSR (KVM's spsr[1..4]): its index in v->spsr32, or -1. */
static int a64_spsr32(u64 id)
{
	unsigned int i;

	for (i = 0; i < A64_NR_SPSR32; i++)
		if (id == CORE_ID(spsr[KVM_SPSR_ABT + i]))
			return i;
	return -1;
}

/*
 * Registers the module answers without Slat: the fixed ones (a64_fixed_reg),
 * the virtual counter, the AArch32 SPSRs and a64_kept. 1 done (rc in *rc),
 * 0 not one.
 */
static int a64_module_reg(struct slat_kvm_vcpu *v, u64 id, u64 __user *uaddr, bool set, long *rc)
{
	u64 val, want, *kept = NULL;
	int i = a64_spsr32(id);

	/* A guest without AArch32 EL1 has no use for the SPSRs; they are kept
	 * as set, as KVM keeps them for an AArch64 vCPU. */
	if (i >= 0)
		kept = &v->spsr32[i];
	else if ((i = a64_kept_index(id)) >= 0)
		kept = &v->kept[i];
	if (kept) {
		*rc = set ? get_user(*kept, uaddr) : put_user(*kept, uaddr);
		return 1;
	}
	if (id == KVM_REG_ARM_TIMER_CNT) {
		*rc = a64_timer_cnt(v, uaddr, set);
		return 1;
	}
	if (!a64_fixed_reg(v, id, &want))
		return 0;
	if (!set)
		*rc = put_user(want, uaddr);
	else if (get_user(val, uaddr))
		*rc = -EFAULT;
	else /* a read-only register: another value is KVM's -EINVAL */
		*rc = a64_fixed_accepts(id, want, val) ? 0 : -EINVAL;
	return 1;
}

/* A core register Slat keeps, named with another size than its own. */
static bool a64_core_other_size(u64 id)
{
	static const u64 sizes[] = {KVM_REG_SIZE_U32, KVM_REG_SIZE_U64, KVM_REG_SIZE_U128};
	u64 base = id & ~KVM_REG_SIZE_MASK;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		if ((base | sizes[i]) != id &&
		    (a64_reg_off(base | sizes[i]) >= 0 || a64_spsr32(base | sizes[i]) >= 0))
			return true;
	return false;
}

static u64 a64_reg_size(u64 id)
{
	return 1ull << ((id & KVM_REG_SIZE_MASK) >> KVM_REG_SIZE_SHIFT);
}

/* The size of the register at `off` in Slat's page: V0..V31 16, FPSR and FPCR 4, else 8. */
static u64 a64_page_reg_size(int off)
{
	if (off >= HCR(v[0]) && off < HCR(fpsr))
		return 16;
	return off == HCR(fpsr) || off == HCR(fpcr) ? 4 : 8;
}

static long a64_one_reg(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct kvm_one_reg r;
	struct hc_regs_arm64 *regs;
	void __user *uaddr;
	u64 size, val[2] = {0, 0};
	int off, rc;
	long mrc = 0;

	if (copy_from_user(&r, up, sizeof(r)))
		return -EFAULT;
	rc = slat_kvm_psci_apply_reset(v); /* registers read after a CPU_ON see it */
	if (rc)
		return rc;
	uaddr = (void __user *)(unsigned long)r.addr;
	if ((r.id & KVM_REG_ARM_COPROC_MASK) == KVM_REG_ARM_DEMUX)
		return a64_demux(r.id, uaddr, set);
	size = a64_reg_size(r.id);
	off = a64_reg_off(r.id);
	if (off < 0 && (r.id & KVM_REG_ARM_COPROC_MASK) == KVM_REG_ARM_CORE &&
	    a64_core_other_size(r.id))
		return -EINVAL; /* KVM: a core register asked with the wrong size */
	if (off < 0) {
		if (size != sizeof(u64))
			return -ENOENT;
		return a64_module_reg(v, r.id, uaddr, set, &mrc) ? mrc : -ENOENT;
	}
	/* KVM: a core register of another size is -EINVAL. */
	if (size != a64_page_reg_size(off))
		return (r.id & KVM_REG_ARM_COPROC_MASK) == KVM_REG_ARM_CORE ? -EINVAL : -ENOENT;
	regs = kzalloc(sizeof(*regs), GFP_KERNEL);
	if (!regs)
		return -ENOMEM;
	rc = slat_vcpu_regs_k(v->vc, regs, false);
	if (!rc && !set) {
		memcpy(val, (u8 *)regs + off, size);
		rc = copy_to_user(uaddr, val, size) ? -EFAULT : 0;
	}
	if (!rc && set && copy_from_user(val, uaddr, size))
		rc = -EFAULT;
	if (!rc && set && r.id == A64_MPIDR_ID && val[0] != regs->mpidr_el1)
		rc = -EINVAL; /* Slat places the vCPU; it reads as Slat set it */
	if (!rc && set) {
		if (size == 4)
			*(u64 *)((u8 *)regs + off) = (u32)val[0]; /* FPSR, FPCR */
		else
			memcpy((u8 *)regs + off, val, size);
		/* KVM completes the last MMIO exit at the next KVM_RUN whatever
		 * the VMM set in between (QEMU puts back what it read). */
		regs->flags |= HC_REGS_ARM64_KEEP_PENDING;
		/* Slat refuses an illegal pstate (EL2, AArch32...): -EINVAL. */
		rc = slat_vcpu_regs_k(v->vc, regs, true);
	}
	kfree(regs);
	return rc;
}

static long a64_reg_list(struct slat_kvm_vcpu *v, void __user *up)
{
	struct kvm_reg_list __user *ul = up;
	u64 n, nregs = a64_reg_ids(v, NULL), *ids;
	long rc;

	if (get_user(n, &ul->n))
		return -EFAULT;
	if (put_user(nregs, &ul->n))
		return -EFAULT;
	if (n < nregs)
		return -E2BIG;
	ids = kcalloc(nregs, sizeof(*ids), GFP_KERNEL);
	if (!ids)
		return -ENOMEM;
	a64_reg_ids(v, ids);
	rc = copy_to_user(ul->reg, ids, nregs * sizeof(*ids)) ? -EFAULT : 0;
	kfree(ids);
	return rc;
}

/* ---- vCPUs ---- */

int slat_kvm_arch_vcpu_create(struct slat_kvm_vcpu *v)
{
	int rc;

	/* Slat's reset state (EL1h, DAIF masked, pc 0, MMU off): VCPU_INIT's. */
	v->reset = kzalloc(sizeof(*v->reset), GFP_KERNEL);
	if (!v->reset)
		return -ENOMEM;
	rc = slat_vcpu_regs_k(v->vc, v->reset, false);
	if (rc)
		return rc;
	v->mpidr = v->reset->mpidr_el1;
	/* VCPU_INIT and CPU_ON restore the registers, not the GIC CPU
	 * interface or the VM's counter offset (KVM keeps both). */
	v->reset->flags &= ~HC_REGS_ARM64_GIC;
	rc = slat_vgic_vcpu_create(v);
	if (rc)
		return rc;
	rc = slat_kvm_psci_register(v);
	if (rc)
		return rc;
	return slat_vgic_vcpu_added(v); /* a GICv2's limit, checked once it is findable */
}

/* Also after a failed create: unregistering an id not registered is a no-op. */
void slat_kvm_arch_vcpu_free(struct slat_kvm_vcpu *v)
{
	if (xa_load(&v->vc->vm->kvcpus, v->id) == v)
		slat_kvm_psci_unregister(v);
	slat_vgic_vcpu_free(v); /* after: no other vCPU finds it any more */
	kfree(v->reset);
}

#define A64_FEATURES (BIT(KVM_ARM_VCPU_POWER_OFF) | BIT(KVM_ARM_VCPU_PSCI_0_2))

/*
 * KVM_ARM_VCPU_INIT: the generic target; of the optional features only
 * POWER_OFF (start off, until a CPU_ON) and PSCI_0_2 (slat_kvm_psci.c). PMU,
 * SVE, pointer auth and 32-bit EL1 are not offered (their caps answer 0).
 */
static long a64_vcpu_init(struct slat_kvm_vcpu *v, void __user *up)
{
	struct kvm_vcpu_init init;
	unsigned int i;
	int rc;

	if (copy_from_user(&init, up, sizeof(init)))
		return -EFAULT;
	if (init.target != KVM_ARM_TARGET_GENERIC_V8)
		return -EINVAL;
	if (init.features[0] & ~A64_FEATURES)
		return -EINVAL;
	for (i = 1; i < ARRAY_SIZE(init.features); i++)
		if (init.features[i])
			return -EINVAL;
	rc = slat_vcpu_regs_k(v->vc, v->reset, true);
	if (rc)
		return rc;
	memset(v->spsr32, 0, sizeof(v->spsr32));
	BUILD_BUG_ON(ARRAY_SIZE(a64_kept) != ARRAY_SIZE(v->kept));
	for (i = 0; i < ARRAY_SIZE(a64_kept); i++)
		v->kept[i] = a64_kept[i].reset;
	slat_kvm_psci_init(v, init.features[0] & BIT(KVM_ARM_VCPU_PSCI_0_2),
			   init.features[0] & BIT(KVM_ARM_VCPU_POWER_OFF));
	v->inited = true;
	return 0;
}

/*
 * KVM_{SET,GET,HAS}_DEVICE_ATTR on a vCPU, in KVM's order of checks. The
 * timer group names the virtual timer's PPI, which Slat's virtual CPU
 * interface fixes at HC_VGIC_VTIMER_INTID: GET reads it, SET accepts that
 * PPI (another valid one -EINVAL: a documented difference). Slat gives a VM
 * no EL1 physical timer (CNTP_* trap), so the PTIMER attribute does not exist
 * here (-ENXIO), as an attribute KVM does not know. No PMU is offered
 * (a64_pmu_attr: KVM's answers without the vCPU feature), no stolen-time
 * structure (KVM where sched_info is off: -ENXIO throughout).
 */
static long a64_timer_attr(struct slat_kvm_vcpu *v, const struct kvm_device_attr *a,
			   unsigned int cmd)
{
	int __user *uaddr = (int __user *)(unsigned long)a->addr;
	struct slat_irqchip *c = READ_ONCE(v->vc->vm->irqchip);
	int irq;

	if (cmd == KVM_HAS_DEVICE_ATTR)
		return a->attr == KVM_ARM_VCPU_TIMER_IRQ_VTIMER ? 0 : -ENXIO;
	if (cmd == KVM_GET_DEVICE_ATTR) {
		if (a->attr != KVM_ARM_VCPU_TIMER_IRQ_VTIMER)
			return -ENXIO;
		return put_user((int)HC_VGIC_VTIMER_INTID, uaddr);
	}
	if (!c)
		return -EINVAL; /* KVM: no in-kernel irqchip */
	if (get_user(irq, uaddr))
		return -EFAULT;
	if (irq < 16 || irq >= (int)VGIC_NR_PRIVATE)
		return -EINVAL; /* not a PPI */
	if (READ_ONCE(c->mapped))
		return -EBUSY; /* a vCPU has run */
	if (a->attr != KVM_ARM_VCPU_TIMER_IRQ_VTIMER)
		return -ENXIO;
	return irq == HC_VGIC_VTIMER_INTID ? 0 : -EINVAL;
}

/* KVM's answers for a vCPU made without KVM_ARM_VCPU_PMU_V3 (never offered). */
static long a64_pmu_attr(struct slat_kvm_vcpu *v, const struct kvm_device_attr *a, unsigned int cmd)
{
	if (cmd == KVM_SET_DEVICE_ATTR)
		return -ENODEV;
	if (cmd == KVM_HAS_DEVICE_ATTR || a->attr != KVM_ARM_VCPU_PMU_V3_IRQ)
		return -ENXIO;
	return READ_ONCE(v->vc->vm->irqchip) ? -ENODEV : -EINVAL;
}

static long a64_vcpu_attr(struct slat_kvm_vcpu *v, void __user *up, unsigned int cmd)
{
	struct kvm_device_attr a;

	if (copy_from_user(&a, up, sizeof(a)))
		return -EFAULT;
	switch (a.group) {
	case KVM_ARM_VCPU_TIMER_CTRL:
		return a64_timer_attr(v, &a, cmd);
	case KVM_ARM_VCPU_PMU_V3_CTRL:
		return a64_pmu_attr(v, &a, cmd);
	case KVM_ARM_VCPU_PVTIME_CTRL:
	default:
		return -ENXIO;
	}
}

/* Only the two states KVM's arm64 side keeps besides SUSPENDED (not offered). */
static long a64_mp_state(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct kvm_mp_state mp;

	if (!set) {
		mp.mp_state =
		    slat_kvm_psci_is_off(v) ? KVM_MP_STATE_STOPPED : KVM_MP_STATE_RUNNABLE;
		return copy_to_user(up, &mp, sizeof(mp)) ? -EFAULT : 0;
	}
	if (copy_from_user(&mp, up, sizeof(mp)))
		return -EFAULT;
	if (mp.mp_state != KVM_MP_STATE_RUNNABLE && mp.mp_state != KVM_MP_STATE_STOPPED)
		return -EINVAL;
	slat_kvm_psci_set_off(v, mp.mp_state == KVM_MP_STATE_STOPPED);
	return 0;
}

long slat_kvm_arch_vcpu_ioctl(struct slat_kvm_vcpu *v, unsigned int cmd, void __user *up)
{
	switch (cmd) {
	case KVM_ARM_VCPU_INIT:
		return a64_vcpu_init(v, up);
	case KVM_GET_ONE_REG:
	case KVM_SET_ONE_REG:
		if (!v->inited)
			return -ENOEXEC;
		return a64_one_reg(v, up, cmd == KVM_SET_ONE_REG);
	case KVM_GET_REG_LIST:
		if (!v->inited)
			return -ENOEXEC;
		return a64_reg_list(v, up);
	case KVM_GET_MP_STATE:
	case KVM_SET_MP_STATE:
		return a64_mp_state(v, up, cmd == KVM_SET_MP_STATE);
	case KVM_SET_DEVICE_ATTR:
	case KVM_GET_DEVICE_ATTR:
	case KVM_HAS_DEVICE_ATTR:
		return a64_vcpu_attr(v, up, cmd);
	default:
		return -ENOTTY;
	}
}

/*
 * An off vCPU waits for CPU_ON (or a signal); one that CPU_ON reset while it
 * was outside KVM_RUN takes that reset now.
 */
int slat_kvm_arch_vcpu_ready(struct slat_kvm_vcpu *v)
{
	int rc;

	if (slat_kvm_psci_is_off(v))
		rc = slat_kvm_psci_wait_on(v);
	else
		rc = slat_kvm_psci_apply_reset(v);
	if (!rc)
		rc = a64_take_cntvoff(v);
	return rc ? rc : slat_vgic_ready(v);
}

/*
 * KVM answers a guest's HVC in the kernel (SMCCC, PSCI), never as an exit:
 * slat_kvm_psci.c for a vCPU with the PSCI feature; without it every
 * function is NOT_SUPPORTED except the two that stop the VM. WFI: KVM blocks until an interrupt;
 * with the in-kernel GIC until one is pending or the vCPU's timer expires (slat_kvm_vgic.c);
 * without it after one tick (WFI may complete at any time) unless a signal ends the RUN.
 */
int slat_kvm_arch_exit(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	u32 fn;
	int rc = slat_vgic_exit(v, hr);

	if (rc != SLAT_KVM_GENERIC)
		return rc;

	switch (hr->reason) {
	case HC_EXIT_HYPERCALL:
		if (v->psci)
			return slat_kvm_psci_call(v, hr, kr);
		memset(hr->u.hcall.ret, 0, sizeof(hr->u.hcall.ret));
		hr->u.hcall.ret[0] = (u64)(s64)SMCCC_RET_NOT_SUPPORTED;
		fn = (u32)hr->u.hcall.nr;
		if (fn != A64_PSCI_SYSTEM_OFF && fn != A64_PSCI_SYSTEM_RESET)
			return SLAT_KVM_REENTER;
		kr->exit_reason = KVM_EXIT_SYSTEM_EVENT;
		kr->system_event.type = fn == A64_PSCI_SYSTEM_RESET ? KVM_SYSTEM_EVENT_RESET
								    : KVM_SYSTEM_EVENT_SHUTDOWN;
		kr->system_event.ndata = 0;
		return SLAT_KVM_TO_VMM;
	case HC_EXIT_SHUTDOWN: /* PSCI SYSTEM_OFF / RESET by SMC: hw_reason = id */
		kr->exit_reason = KVM_EXIT_SYSTEM_EVENT;
		kr->system_event.type = (u32)hr->u.fail.hw_reason == A64_PSCI_SYSTEM_RESET
					    ? KVM_SYSTEM_EVENT_RESET
					    : KVM_SYSTEM_EVENT_SHUTDOWN;
		kr->system_event.ndata = 0;
		return SLAT_KVM_TO_VMM;
	case HC_EXIT_HALT:
		/* A pending signal ends the next VCPU_RUN loop with -EINTR. */
		if (!signal_pending(current))
			schedule_timeout_interruptible(1);
		return SLAT_KVM_REENTER;
	default:
		return SLAT_KVM_GENERIC;
	}
}
