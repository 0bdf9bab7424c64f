// SPDX-License-Identifier: GPL-2.0
/*
 * PSCI for /dev/kvm on arm64 (docs/kvm-api.md, "PSCI"): what KVM answers in
 * the kernel for a vCPU made with KVM_ARM_VCPU_PSCI_0_2, written from the
 * PSCI specification (DEN0022) and KVM's api.rst: PSCI 1.0 with CPU_ON,
 * CPU_OFF, AFFINITY_INFO, CPU_SUSPEND (as WFI), MIGRATE_INFO_TYPE,
 * PSCI_FEATURES, SYSTEM_OFF/RESET and, once KVM_CAP_ARM_SYSTEM_SUSPEND is
 * enabled, SYSTEM_SUSPEND; SMCCC 1.1's VERSION and ARCH_FEATURES.
 *
 * Power state lives in the module, as in KVM: a vCPU that is off
 * (KVM_MP_STATE_STOPPED, CPU_OFF, VCPU_INIT with KVM_ARM_VCPU_POWER_OFF)
 * waits in KVM_RUN until another vCPU's CPU_ON. CPU_ON never touches the
 * target's Slat state from the caller's thread (the target's thread may hold
 * the target's lock): it records the entry point and context id, and the
 * target applies that reset itself before its next RUN or register access.
 * Every field shared between vCPUs is under the VM's kvcpus lock.
 */
#include <linux/arm-smccc.h>
#include <linux/psci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <uapi/linux/psci.h>

#include "slat_kvm.h"

#define PSCI_HWID_MASK 0xff00ffffffull /* MPIDR Aff3, Aff2, Aff1, Aff0 */
#define SCTLR_EE       (1ull << 25)

/* ---- the VM's vCPUs by id, for CPU_ON and AFFINITY_INFO ---- */

int slat_kvm_psci_register(struct slat_kvm_vcpu *v)
{
	init_waitqueue_head(&v->psci_wq);
	return xa_insert(&v->vc->vm->kvcpus, v->id, v, GFP_KERNEL);
}

void slat_kvm_psci_unregister(struct slat_kvm_vcpu *v)
{
	xa_erase(&v->vc->vm->kvcpus, v->id);
}

/* KVM_SET_MP_STATE: a pending CPU_ON reset stays pending, as in KVM. */
void slat_kvm_psci_set_off(struct slat_kvm_vcpu *v, bool off)
{
	struct xarray *xa = &v->vc->vm->kvcpus;

	xa_lock(xa);
	WRITE_ONCE(v->off, off);
	xa_unlock(xa);
	if (!off)
		wake_up_interruptible(&v->psci_wq);
}

/* KVM_ARM_VCPU_INIT: its state replaces any CPU_ON reset not yet applied. */
void slat_kvm_psci_init(struct slat_kvm_vcpu *v, bool psci, bool off)
{
	struct xarray *xa = &v->vc->vm->kvcpus;

	xa_lock(xa);
	v->psci = psci;
	v->reset_pending = false;
	xa_unlock(xa);
	slat_kvm_psci_set_off(v, off);
}

bool slat_kvm_psci_is_off(struct slat_kvm_vcpu *v)
{
	return READ_ONCE(v->off);
}

/*
 * The target of CPU_ON applies its reset: the VCPU_INIT state with the
 * entry point in PC, the context id in X0 and the caller's endianness.
 */
int slat_kvm_psci_apply_reset(struct slat_kvm_vcpu *v)
{
	struct xarray *xa = &v->vc->vm->kvcpus;
	struct hc_regs_arm64 *regs;
	bool pending;
	u64 pc, x0;
	bool be;
	int rc;

	xa_lock(xa);
	pending = v->reset_pending;
	pc = v->reset_pc;
	x0 = v->reset_x0;
	be = v->reset_be;
	v->reset_pending = false;
	xa_unlock(xa);
	if (!pending)
		return 0;
	regs = kmemdup(v->reset, sizeof(*regs), GFP_KERNEL);
	if (!regs)
		return -ENOMEM;
	regs->pc = pc;
	regs->x[0] = x0;
	if (be)
		regs->sctlr_el1 |= SCTLR_EE;
	rc = slat_vcpu_regs_k(v->vc, regs, true);
	kfree(regs);
	return rc;
}

/* KVM_RUN's wait while the vCPU is off: 0 once on, -EINTR on a signal. */
int slat_kvm_psci_wait_on(struct slat_kvm_vcpu *v)
{
	if (wait_event_interruptible(v->psci_wq, !READ_ONCE(v->off)))
		return -EINTR;
	return slat_kvm_psci_apply_reset(v);
}

/* ---- the calls ---- */

static bool psci_is_smc32(u32 fn)
{
	return !(fn & ARM_SMCCC_SMC_64);
}

static long psci_cpu_on(struct slat_kvm_vcpu *src, u64 target, u64 pc, u64 ctx, bool be)
{
	struct xarray *xa = &src->vc->vm->kvcpus;
	struct slat_kvm_vcpu *t;
	unsigned long i;
	long ret = PSCI_RET_INVALID_PARAMS;

	if (target & ~PSCI_HWID_MASK)
		return PSCI_RET_INVALID_PARAMS;
	xa_lock(xa);
	xa_for_each (xa, i, t) {
		if ((t->mpidr & PSCI_HWID_MASK) != target)
			continue;
		if (!t->off) {
			ret = PSCI_RET_ALREADY_ON;
			break;
		}
		t->reset_pc = pc;
		t->reset_x0 = ctx;
		t->reset_be = be;
		t->reset_pending = true;
		WRITE_ONCE(t->off, false);
		wake_up_interruptible(&t->psci_wq);
		ret = PSCI_RET_SUCCESS;
		break;
	}
	xa_unlock(xa);
	return ret;
}

static long psci_affinity_info(struct slat_kvm_vcpu *src, u64 target, u64 level)
{
	struct xarray *xa = &src->vc->vm->kvcpus;
	struct slat_kvm_vcpu *t;
	unsigned long i;
	u64 mask;
	long ret = PSCI_0_2_AFFINITY_LEVEL_OFF;

	if (level > 3)
		return PSCI_RET_INVALID_PARAMS;
	/* Level n ignores the affinity fields below Aff n. */
	mask = PSCI_HWID_MASK & ~(level == 3 ? 0xffffffull : (1ull << (8 * level)) - 1);
	target &= mask;
	xa_lock(xa);
	xa_for_each (xa, i, t)
		if ((t->mpidr & mask) == target && !t->off) {
			ret = PSCI_0_2_AFFINITY_LEVEL_ON;
			break;
		}
	xa_unlock(xa);
	return ret;
}

/* SYSTEM_SUSPEND is DENIED while another vCPU is on (PSCI 1.0, 5.20). */
static bool psci_others_off(struct slat_kvm_vcpu *src)
{
	struct xarray *xa = &src->vc->vm->kvcpus;
	struct slat_kvm_vcpu *t;
	unsigned long i;
	bool all = true;

	xa_lock(xa);
	xa_for_each (xa, i, t)
		if (t != src && !t->off)
			all = false;
	xa_unlock(xa);
	return all;
}

static long psci_features(struct slat_kvm_vcpu *v, u32 fn)
{
	switch (fn) {
	case PSCI_0_2_FN_PSCI_VERSION:
	case PSCI_0_2_FN_CPU_SUSPEND:
	case PSCI_0_2_FN64_CPU_SUSPEND:
	case PSCI_0_2_FN_CPU_OFF:
	case PSCI_0_2_FN_CPU_ON:
	case PSCI_0_2_FN64_CPU_ON:
	case PSCI_0_2_FN_AFFINITY_INFO:
	case PSCI_0_2_FN64_AFFINITY_INFO:
	case PSCI_0_2_FN_MIGRATE_INFO_TYPE:
	case PSCI_0_2_FN_SYSTEM_OFF:
	case PSCI_0_2_FN_SYSTEM_RESET:
	case PSCI_1_0_FN_PSCI_FEATURES:
	case ARM_SMCCC_VERSION_FUNC_ID:
		return 0; /* CPU_SUSPEND: original power-state format, flags 0 */
	case PSCI_1_0_FN_SYSTEM_SUSPEND:
	case PSCI_1_0_FN64_SYSTEM_SUSPEND:
		return v->vc->vm->kvm_system_suspend ? 0 : PSCI_RET_NOT_SUPPORTED;
	default:
		return PSCI_RET_NOT_SUPPORTED;
	}
}

static bool psci_caller_be(struct slat_kvm_vcpu *v)
{
	struct hc_regs_arm64 *regs = kzalloc(sizeof(*regs), GFP_KERNEL);
	bool be = false;

	if (regs && !slat_vcpu_regs_k(v->vc, regs, false))
		be = regs->sctlr_el1 & SCTLR_EE;
	kfree(regs);
	return be;
}

/*
 * A system event for the VMM. As in KVM, every vCPU of the VM is off
 * afterwards (KVM_ARM_VCPU_INIT or KVM_SET_MP_STATE powers one on again) and
 * the caller's x0-x3 are left as the call had them (Slat writes ret[] back
 * at the next RUN unless the VMM sets registers first).
 */
static void psci_system_event(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr,
			      u32 type)
{
	struct xarray *xa = &v->vc->vm->kvcpus;
	struct slat_kvm_vcpu *t;
	unsigned long i;

	if (type != KVM_SYSTEM_EVENT_SUSPEND) {
		xa_lock(xa);
		xa_for_each (xa, i, t)
			WRITE_ONCE(t->off, true);
		xa_unlock(xa);
	}
	hr->u.hcall.ret[0] = hr->u.hcall.nr;
	for (i = 1; i < 4; i++)
		hr->u.hcall.ret[i] = hr->u.hcall.args[i - 1];
	memset(&kr->system_event, 0, sizeof(kr->system_event));
	kr->exit_reason = KVM_EXIT_SYSTEM_EVENT;
	kr->system_event.type = type;
	kr->system_event.ndata = 1; /* data[0]: flags, none (KVM since 5.18) */
}

/*
 * One SMCCC call of a PSCI vCPU: SLAT_KVM_REENTER with the answer in
 * hr->u.hcall.ret[0], or SLAT_KVM_TO_VMM with a system event in `kr`.
 */
int slat_kvm_psci_call(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	u32 fn = (u32)hr->u.hcall.nr;
	u64 a[3];
	long ret;
	int i;

	for (i = 0; i < 3; i++) /* SMC32 calls: the upper halves are not arguments */
		a[i] = psci_is_smc32(fn) ? (u32)hr->u.hcall.args[i] : hr->u.hcall.args[i];
	switch (fn) {
	case PSCI_0_2_FN_PSCI_VERSION:
		ret = PSCI_VERSION(1, 0);
		break;
	case ARM_SMCCC_VERSION_FUNC_ID:
		ret = ARM_SMCCC_VERSION_1_1;
		break;
	case PSCI_0_2_FN_CPU_SUSPEND:
	case PSCI_0_2_FN64_CPU_SUSPEND:
		/* A standby that may end at any time: as WFI (no wake-up source yet). */
		if (!signal_pending(current))
			schedule_timeout_interruptible(1);
		ret = PSCI_RET_SUCCESS;
		break;
	case PSCI_0_2_FN_CPU_OFF:
		slat_kvm_psci_set_off(v, true); /* RUN waits; CPU_ON resets */
		ret = PSCI_RET_SUCCESS;
		break;
	case PSCI_0_2_FN_CPU_ON:
	case PSCI_0_2_FN64_CPU_ON:
		ret = psci_cpu_on(v, a[0], a[1], a[2], psci_caller_be(v));
		break;
	case PSCI_0_2_FN_AFFINITY_INFO:
	case PSCI_0_2_FN64_AFFINITY_INFO:
		ret = psci_affinity_info(v, a[0], a[1]);
		break;
	case PSCI_0_2_FN_MIGRATE_INFO_TYPE:
		ret = PSCI_0_2_TOS_MP; /* no Trusted OS to migrate */
		break;
	case PSCI_1_0_FN_PSCI_FEATURES:
		ret = psci_features(v, (u32)a[0]);
		break;
	case PSCI_0_2_FN_SYSTEM_OFF:
	case PSCI_0_2_FN_SYSTEM_RESET:
		psci_system_event(v, hr, kr,
				  fn == PSCI_0_2_FN_SYSTEM_RESET ? KVM_SYSTEM_EVENT_RESET
								 : KVM_SYSTEM_EVENT_SHUTDOWN);
		return SLAT_KVM_TO_VMM;
	case PSCI_1_0_FN_SYSTEM_SUSPEND:
	case PSCI_1_0_FN64_SYSTEM_SUSPEND:
		if (!v->vc->vm->kvm_system_suspend) {
			ret = PSCI_RET_NOT_SUPPORTED;
			break;
		}
		if (!psci_others_off(v)) {
			ret = PSCI_RET_DENIED;
			break;
		}
		/* The VMM decides (KVM's api.rst): the call's x0-x2 stay for it to read. */
		psci_system_event(v, hr, kr, KVM_SYSTEM_EVENT_SUSPEND);
		return SLAT_KVM_TO_VMM;
	default:
		ret = SMCCC_RET_NOT_SUPPORTED;
		break;
	}
	memset(hr->u.hcall.ret, 0, sizeof(hr->u.hcall.ret));
	hr->u.hcall.ret[0] = (u64)ret;
	return SLAT_KVM_REENTER;
}
