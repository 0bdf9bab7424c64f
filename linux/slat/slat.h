/* SPDX-License-Identifier: GPL-2.0 */
/*
 * slat.ko internals: the hypercall layer (slat_hcall_<arch>.c), the deposit
 * pool (slat_pool.c), VMs (slat_vm.c), the memory slots of both APIs
 * (slat_slot.c), vCPUs (slat_vcpu.c) and the /dev/slat device (slat_main.c).
 */
#ifndef SLAT_KO_H
#define SLAT_KO_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pfn.h>
#include <linux/highmem.h>

#include "core/hcall_abi.h"
#include "slat_uapi.h"

/* The physical address Slat is given for a page of the primary. */
static inline u64 slat_pa(struct page *pg)
{
	return PFN_PHYS(page_to_pfn(pg));
}

/* ---- per-arch (slat_hcall_x86.c / slat_hcall_arm64.c) ---- */
/* 0 when Slat answers the discovery query; -ENODEV after one dmesg line. */
int slat_arch_detect(void);
/* One hypercall: status (x0 / RAX) returned, r[0..2] filled. */
long slat_arch_hcall(u64 fn, const u64 a[6], u64 r[3]);
/* Around VCPU_RUN: Slat does not keep the primary's FP/SIMD state. */
void slat_arch_fpu_begin(void);
void slat_arch_fpu_end(void);
/* sizeof(struct hc_regs_x86) or sizeof(struct hc_regs_arm64) */
extern const size_t slat_arch_regs_size;

/* ---- calls (slat_main.c) ---- */
/* HC_E_* -> -errno (docs/primary-module.md). */
int slat_errno(long status);
/* A call retried after a deposit while it answers HC_E_NOMEM. HC status. */
long slat_call(u32 fn, u64 a0, u64 a1, u64 a2, u64 a3, u64 a4, u64 a5, u64 r[3]);
/* HV_STATS (vm 0) or VM_STATS of vm, `size` bytes copied to user memory. */
long slat_stats_ioctl(u32 vm, void __user *up, size_t size);
/* VM_STATS of `vm`: 0 or -errno (KVM_GET_STATS_FD). */
int slat_vm_stats(u32 vm, struct hc_vm_stats *out);

/* ---- deposit pool (slat_pool.c) ---- */
int slat_pool_deposit_chunk(void);			    /* 0 or -errno */
void slat_pool_withdraw_all(void);			    /* every page Slat can give back */
void slat_pool_take_back(const u64 *pfns, unsigned long n); /* withdrawn frames: free */
void slat_pool_stats(struct slat_module_stats *s);
void slat_pool_exit(void);

extern atomic64_t slat_pinned_pages;
extern atomic64_t slat_vms_alive;
extern atomic64_t slat_last_destroy_ns;
extern atomic64_t slat_nomem_retries;
extern u64 slat_hv_version;

/* ---- VMs and slots (slat_vm.c, slat_slot.c) ---- */
struct slat_vm {
	struct kref ref;
	u32 id;		     /* Slat's VM id */
	u64 gpa_limit;	     /* /dev/kvm: slots must end at or below (0: Slat's own check) */
	struct mutex lock;   /* slots and vCPU creation */
	struct xarray slots; /* slot index -> struct slat_mslot */
	struct xarray vcpus; /* index -> 1 once created */
	/* /dev/kvm on arm64: vcpu id -> struct slat_kvm_vcpu, for PSCI (its lock
	 * guards their power state: slat_kvm_psci.c) */
	struct xarray kvcpus;
	bool kvm_system_suspend; /* KVM_CAP_ARM_SYSTEM_SUSPEND enabled */
	/* /dev/kvm on arm64 (ABI 1.12): the VM's virtual counter offset, set by
	 * KVM_REG_ARM_TIMER_CNT on any vCPU (KVM's per-VM CNTVOFF) */
	u64 kvm_cntvoff;
	/* /dev/kvm on x86: KVM_CREATE_IRQCHIP's I/O APIC (slat_kvm_irq.h), freed
	 * with the VM; vCPUs made after it get a local APIC */
	struct slat_irqchip *irqchip;
	/* /dev/kvm on x86: KVM_CREATE_PIT2's 8254 (slat_kvm_pit.c), freed with the VM */
	struct slat_pit *pit;
	/* /dev/kvm on x86: KVM_CAP_MSR_PLATFORM_INFO turned off (KVM lets guests
	 * read MSR_PLATFORM_INFO by default; off, the read takes #GP) */
	bool kvm_no_platform_info;
	/* /dev/kvm on x86: the last IA32_TSC write of the VMM on any vCPU, the
	 * offset it gave and when (ns), for KVM's matching of the vCPUs' TSCs
	 * (x86_tsc_host_write); under lock */
	bool kvm_tsc_written;
	u64 kvm_tsc_offset, kvm_tsc_write, kvm_tsc_write_ns;
};

/* struct slat_mslot's flags */
#define SLAT_SLOT_LAZY	   1u /* /dev/kvm: frames follow the VMM's mapping (else eager) */
#define SLAT_SLOT_READONLY 2u /* KVM_MEM_READONLY: guest writes exit as MMIO */
#define SLAT_SLOT_DIRTY	   4u /* KVM_MEM_LOG_DIRTY_PAGES (ABI 1.9): Slat logs writes */

/* One slot of either API (slat_slot.c): eager, or lazy with a notifier. */
struct slat_mslot {
	struct slat_vm *vm;
	u32 slot;
	unsigned int flags; /* SLAT_SLOT_* */
	u64 gpa, size, uaddr;
	unsigned long npages;
	struct mutex lock;		 /* pages[] and present; taken after vm->lock */
	struct page **pages;		 /* pinned and given to Slat, or NULL */
	unsigned long present;		 /* non-NULL entries */
	struct mmu_interval_notifier mn; /* lazy: the VMM's [uaddr, uaddr + size) */
	bool mn_live;			 /* mn is inserted */
	unsigned long *copies;		 /* read-only: pages[i] is the module's copy */
	bool copy_logged;
};

int slat_vm_create_fd(u32 flags);
/* A VM in Slat and its record (one reference), or an ERR_PTR. */
struct slat_vm *slat_vm_new(u32 flags, u32 vcpu_limit);
void slat_vm_put(struct slat_vm *vm);
/* Add, delete (size 0) or move a slot; arguments checked by the API. -errno. */
int slat_slot_update(struct slat_vm *vm, u32 slot, u64 gpa, u64 size, u64 uaddr,
		     unsigned int flags);
/*
 * Dirty log of a logging slot (ABI 1.9): SLOT_SET `op` (HC_SLOT_DIRTY_GET, _TAKE
 * or _CLEAR) over pages [first, first + n), with KVM's bitmap layout in user
 * memory at `ubits` (bit i: page first + i); CLEAR reads it, the others write
 * it. -ENOENT when the slot does not exist or does not log, as KVM.
 */
int slat_slot_dirty(struct slat_vm *vm, u32 slot, u64 op, u64 first, u64 n, void __user *ubits);
/* HC_EXIT_MEMFAULT on a lazy slot: 0 runs the vCPU again, or -errno. */
int slat_slot_fault(struct slat_vm *vm, u32 slot, u32 index);
/* Guest-physical memory through the VMM's mapping of the slots: 0 or -EFAULT. */
int slat_slot_rw(struct slat_vm *vm, u64 gpa, void *buf, size_t len, bool write);
void slat_slots_stop(struct slat_vm *vm);    /* before VM_DESTROY: notifiers off */
void slat_slots_release(struct slat_vm *vm); /* after VM_DESTROY: unpin all */

/* ---- vCPUs (slat_vcpu.c) ---- */
/*
 * What VCPU_RUN did for one vCPU: written by the caller holding the vCPU's
 * lock, read without it (KVM_GET_STATS_FD, slat_kvm_stats.c).
 */
struct slat_vcpu_stats {
	u64 runs;      /* VCPU_RUN hypercalls */
	u64 run_ns;    /* time inside them (the guest's and Slat's) */
	u64 exits[16]; /* VCPU_RUN's results by enum hc_exit (0: a larger one) */
};

struct slat_vcpu {
	struct slat_vm *vm;
	u32 index;
	struct page *run;  /* struct hc_run, shared with Slat */
	struct mutex lock; /* one RUN / REGS call at a time */
	struct slat_vcpu_stats stats;
};

int slat_vcpu_create_fd(struct slat_vm *vm, unsigned long index);
/* A vCPU in Slat and its record (holding a VM reference), or an ERR_PTR. */
struct slat_vcpu *slat_vcpu_new(struct slat_vm *vm, unsigned long index);
void slat_vcpu_free(struct slat_vcpu *vc);
/* VCPU_RUN until an exit for the VMM (hc_run.reason); -EINTR on a signal. */
long slat_vcpu_run(struct slat_vcpu *vc);
long slat_vcpu_run_once(struct slat_vcpu *vc);
/* VCPU_SET_REGS / GET_REGS with a kernel buffer of slat_arch_regs_size. */
int slat_vcpu_regs_k(struct slat_vcpu *vc, void *regs, bool set);

/* ---- /dev/kvm (slat_kvm*.c) ---- */
int slat_kvm_init(void);
void slat_kvm_exit(void);

#endif
