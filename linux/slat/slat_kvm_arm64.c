// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm on arm64 (docs/kvm-api.md): VM types with an IPA size,
 * KVM_ARM_PREFERRED_TARGET / KVM_ARM_VCPU_INIT, the ONE_REG interface over
 * Slat's register page (struct hc_regs_arm64), and the guest's SMCCC calls
 * and WFI, which KVM answers in the kernel and so does this module.
 */
#include <linux/arm-smccc.h>
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

#define CORE_ID(f) (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | KVM_REG_ARM_CORE_REG(f))
#define HCR(f)	   offsetof(struct hc_regs_arm64, f)

struct a64_reg {
	u64 id;
	u32 off; /* in struct hc_regs_arm64 */
};

/* The core registers Slat keeps (FP/SIMD registers are not in its page). */
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

/*
 * ID registers: a secondary reads the CPU's own (Slat does not trap them),
 * which are what the primary reads too. They read as such and cannot change.
 */
static bool a64_id_reg(u64 id, u64 *val)
{
	switch (id) {
	case ARM64_SYS_REG(3, 0, 0, 0, 0):
		*val = read_cpuid_id();
		return true;
	case ARM64_SYS_REG(3, 0, 0, 4, 0):
		*val = read_sysreg_s(SYS_ID_AA64PFR0_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 4, 1):
		*val = read_sysreg_s(SYS_ID_AA64PFR1_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 5, 0):
		*val = read_sysreg_s(SYS_ID_AA64DFR0_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 6, 0):
		*val = read_sysreg_s(SYS_ID_AA64ISAR0_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 6, 1):
		*val = read_sysreg_s(SYS_ID_AA64ISAR1_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 7, 0):
		*val = read_sysreg_s(SYS_ID_AA64MMFR0_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 7, 1):
		*val = read_sysreg_s(SYS_ID_AA64MMFR1_EL1);
		return true;
	case ARM64_SYS_REG(3, 0, 0, 7, 2):
		*val = read_sysreg_s(SYS_ID_AA64MMFR2_EL1);
		return true;
	default:
		return false;
	}
}

static const u64 a64_id_list[] = {
    ARM64_SYS_REG(3, 0, 0, 0, 0), ARM64_SYS_REG(3, 0, 0, 4, 0), ARM64_SYS_REG(3, 0, 0, 4, 1),
    ARM64_SYS_REG(3, 0, 0, 5, 0), ARM64_SYS_REG(3, 0, 0, 6, 0), ARM64_SYS_REG(3, 0, 0, 6, 1),
    ARM64_SYS_REG(3, 0, 0, 7, 0), ARM64_SYS_REG(3, 0, 0, 7, 1), ARM64_SYS_REG(3, 0, 0, 7, 2),
};

#define A64_NREGS (31 + ARRAY_SIZE(a64_core) + ARRAY_SIZE(a64_sys) + ARRAY_SIZE(a64_id_list))

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
	return -ENOENT;
}

static long a64_one_reg(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct kvm_one_reg r;
	struct hc_regs_arm64 *regs;
	u64 val, __user *uaddr;
	int off, rc;

	if (copy_from_user(&r, up, sizeof(r)))
		return -EFAULT;
	rc = slat_kvm_psci_apply_reset(v); /* registers read after a CPU_ON see it */
	if (rc)
		return rc;
	uaddr = (u64 __user *)(unsigned long)r.addr;
	if ((r.id & KVM_REG_SIZE_MASK) != KVM_REG_SIZE_U64)
		return -ENOENT;
	if (a64_id_reg(r.id, &val)) {
		if (!set)
			return put_user(val, uaddr);
		if (get_user(r.addr, uaddr))
			return -EFAULT;
		return r.addr == val ? 0 : -EINVAL;
	}
	off = a64_reg_off(r.id);
	if (off < 0)
		return off;
	regs = kzalloc(sizeof(*regs), GFP_KERNEL);
	if (!regs)
		return -ENOMEM;
	rc = slat_vcpu_regs_k(v->vc, regs, false);
	if (!rc && !set)
		rc = put_user(*(u64 *)((u8 *)regs + off), uaddr);
	if (!rc && set && get_user(val, uaddr))
		rc = -EFAULT;
	if (!rc && set && r.id == A64_MPIDR_ID && val != regs->mpidr_el1)
		rc = -EINVAL; /* Slat places the vCPU; it reads as Slat set it */
	if (!rc && set) {
		*(u64 *)((u8 *)regs + off) = val;
		/* Slat refuses an illegal pstate (EL2, AArch32...): -EINVAL. */
		rc = slat_vcpu_regs_k(v->vc, regs, true);
	}
	kfree(regs);
	return rc;
}

static long a64_reg_list(void __user *up)
{
	struct kvm_reg_list __user *ul = up;
	u64 n, i, k = 0;

	if (get_user(n, &ul->n))
		return -EFAULT;
	if (put_user((u64)A64_NREGS, &ul->n))
		return -EFAULT;
	if (n < A64_NREGS)
		return -E2BIG;
	for (i = 0; i < 31; i++)
		if (put_user((u64)CORE_ID(regs.regs[i]), &ul->reg[k++]))
			return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(a64_core); i++)
		if (put_user(a64_core[i].id, &ul->reg[k++]))
			return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(a64_sys); i++)
		if (put_user(a64_sys[i].id, &ul->reg[k++]))
			return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(a64_id_list); i++)
		if (put_user(a64_id_list[i], &ul->reg[k++]))
			return -EFAULT;
	return 0;
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
	slat_kvm_psci_init(v, init.features[0] & BIT(KVM_ARM_VCPU_PSCI_0_2),
			   init.features[0] & BIT(KVM_ARM_VCPU_POWER_OFF));
	v->inited = true;
	return 0;
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
		return a64_reg_list(up);
	case KVM_GET_MP_STATE:
	case KVM_SET_MP_STATE:
		return a64_mp_state(v, up, cmd == KVM_SET_MP_STATE);
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
