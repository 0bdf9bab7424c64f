/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/kvm over Slat (docs/kvm-api.md): the KVM API's system, VM and vCPU
 * file descriptors as a layer over the module's Slat objects (slat_vm,
 * slat_vcpu, the lazy slots of slat_slot.c). slat_kvm.c is the
 * architecture-neutral part; slat_kvm_<arch>.c implements the contract below.
 */
#ifndef SLAT_KVM_H
#define SLAT_KVM_H

#include <linux/kvm.h>
#include <linux/signal.h>
#include <linux/wait.h>

#include "slat.h"

/* struct kvm_run and, from this offset, port I/O data: one page in all. */
#define SLAT_KVM_RUN_SIZE   PAGE_SIZE
#define SLAT_KVM_PIO_OFFSET (PAGE_SIZE - 64)

/* Slat answers read-only slots (ABI 1.2) */
bool slat_kvm_readonly_ok(void);
bool slat_kvm_dirty_ok(void); /* ABI 1.9: KVM_MEM_LOG_DIRTY_PAGES */

struct slat_kvm_vm {
	struct slat_vm *vm;   /* one reference, dropped when the VM fd closes */
	struct mm_struct *mm; /* the creator's: KVM answers other processes -EIO */
	bool manual_protect;  /* KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 enabled */
	s64 clock_offset;     /* x86 KVM_GET/SET_CLOCK: the VM's clock - boot time */
};

struct slat_kvm_vcpu {
	struct slat_vcpu *vc;	     /* holds a VM reference */
	struct page *run;	     /* struct kvm_run, mmapped by the VMM */
	u32 id;			     /* KVM's vcpu_id */
	struct mm_struct *mm;	     /* the VM\'s process: other processes get -EIO */
	u32 pending;		     /* the hc_exit whose answer the next RUN passes on */
	bool inited;		     /* arm64: KVM_ARM_VCPU_INIT done (x86: always) */
	struct hc_regs_arm64 *reset; /* arm64: the state VCPU_INIT restores */
	/* arm64 PSCI (slat_kvm_psci.c); `off` and reset_* under vm->kvcpus' lock */
	bool psci;		      /* made with KVM_ARM_VCPU_PSCI_0_2 */
	bool off;		      /* KVM_MP_STATE_STOPPED: RUN waits for CPU_ON */
	bool reset_pending, reset_be; /* CPU_ON's reset, applied by this vCPU */
	u64 reset_pc, reset_x0;
	u64 mpidr; /* as Slat placed the vCPU */
	u64 cntvoff;   /* arm64: the offset Slat has for it (the VM's is taken before a run) */
	u64 spsr32[4]; /* arm64: KVM's AArch32 SPSRs (abt, und, irq, fiq), kept as set */
	u64 kept[6];   /* arm64: registers the guest never sees, kept as set (a64_kept) */
	wait_queue_head_t psci_wq;
	void *arch; /* x86: struct slat_kvm_x86 (slat_kvm_x86.c) */
	struct {    /* KVM_RUN's figures (slat_kvm_stats.c), written under vc->lock */
		u64 in_kernel;	  /* exits this module answered (and ran again) */
		u64 to_vmm;	  /* KVM_RUN returned to the VMM with an exit */
		u64 signal_exits; /* KVM_RUN returned -EINTR */
	} stats;
	/* KVM_SET_SIGNAL_MASK: the thread's signal mask while in KVM_RUN */
	bool sigset_active;
	sigset_t sigset;
};

/* KVM_GET_STATS_FD (slat_kvm_stats.c): a read-only fd holding `owner`. */
int slat_kvm_vm_stats_fd(struct file *owner, struct slat_kvm_vm *kvm);
int slat_kvm_vcpu_stats_fd(struct file *owner, struct slat_kvm_vcpu *v);

/* ---- the architecture's part (slat_kvm_arm64.c, slat_kvm_x86.c) ---- */
/* Whether Slat's ABI has what /dev/kvm needs here (else one dmesg line). */
bool slat_kvm_arch_offered(void);
/* KVM_CHECK_EXTENSION for the architecture's capabilities: >= 0, or -1 unknown. */
long slat_kvm_arch_cap(long cap);
/* KVM_CAP_MAX_VCPUS (and the vCPU ids) given the module's `limit`. */
unsigned int slat_kvm_arch_max_vcpus(unsigned int limit);
/* KVM_CREATE_VM's type: the VM's IPA size on arm64; -EINVAL for a bad type. */
int slat_kvm_arch_vm_type(unsigned long type, unsigned int *ipa_bits);
long slat_kvm_arch_vm_ioctl(struct slat_kvm_vm *kvm, unsigned int cmd, void __user *up);
/* /dev/kvm's own ioctls of the architecture (x86: KVM_GET_SUPPORTED_CPUID, ...). */
long slat_kvm_arch_dev_ioctl(unsigned int cmd, void __user *up);
int slat_kvm_arch_vcpu_create(struct slat_kvm_vcpu *v);
void slat_kvm_arch_vcpu_free(struct slat_kvm_vcpu *v);
/* Called with the vCPU's lock held; -ENOTTY for an ioctl it does not know. */
long slat_kvm_arch_vcpu_ioctl(struct slat_kvm_vcpu *v, unsigned int cmd, void __user *up);
/* Before each entry of KVM_RUN: 0, or -EINTR (a signal while the vCPU waits). */
int slat_kvm_arch_vcpu_ready(struct slat_kvm_vcpu *v);
/* KVM_RUN returns to the VMM (every path). */
void slat_kvm_arch_vcpu_done(struct slat_kvm_vcpu *v);
/* x86's kvm_run sync_regs: taken at KVM_RUN's start (-errno ends it), given
 * back on every way out (arm64: nothing to do, as in KVM). */
int slat_kvm_arch_run_begin(struct slat_kvm_vcpu *v);
void slat_kvm_arch_run_end(struct slat_kvm_vcpu *v);
/* What slat_kvm_arch_exit() made of an exit. */
enum slat_kvm_exit_action {
	SLAT_KVM_GENERIC = 0, /* not the architecture's: the generic translation */
	SLAT_KVM_REENTER = 1, /* answered in the module, as KVM's kernel side would */
	SLAT_KVM_TO_VMM = 2,  /* `kr` filled: KVM_RUN returns to the VMM */
};
/* An exit the module answers itself (arm64: SMCCC/PSCI calls, WFI), or -errno. */
int slat_kvm_arch_exit(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr);

/* ---- arm64 PSCI (slat_kvm_psci.c) ---- */
int slat_kvm_psci_register(struct slat_kvm_vcpu *v);
void slat_kvm_psci_unregister(struct slat_kvm_vcpu *v);
void slat_kvm_psci_init(struct slat_kvm_vcpu *v, bool psci, bool off);
void slat_kvm_psci_set_off(struct slat_kvm_vcpu *v, bool off);
bool slat_kvm_psci_is_off(struct slat_kvm_vcpu *v);
int slat_kvm_psci_apply_reset(struct slat_kvm_vcpu *v);
int slat_kvm_psci_wait_on(struct slat_kvm_vcpu *v);
int slat_kvm_psci_call(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr);

/* arm64: Slat keeps the vGIC CPU interface and the counter offset (ABI 1.12). */
bool slat_kvm_a64_state_ok(void);

#endif
