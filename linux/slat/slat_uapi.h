/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR Apache-2.0 */
/*
 * /dev/slat: the primary's interface to Slat's secondary VMs (slat.ko,
 * docs/primary-module.md). Shaped like the KVM API so that /dev/kvm can be a
 * thin layer over it: a system fd (/dev/slat) makes VM fds, a VM fd makes
 * vCPU fds. The structures the ioctls carry are Slat's own (core/hcall_abi.h),
 * which user programs include beside this file.
 */
#ifndef SLAT_UAPI_H
#define SLAT_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SLATIO 0xB7

/* SET_SLOT: the fields and semantics of KVM's kvm_userspace_memory_region. */
struct slat_slot {
	__u32 slot;
	__u32 flags; /* must be 0 */
	__u64 guest_phys_addr;
	__u64 memory_size; /* 0: delete */
	__u64 userspace_addr;
};

/* RAW_CALL (module parameter allow_raw_calls=1 only): one hypercall as given. */
struct slat_raw_call {
	__u64 fn;
	__u64 a[6];
	__s64 status; /* x0 / RAX */
	__u64 r[3];   /* x1..x3 / RBX, RCX, RDX */
	__u64 flags;  /* SLAT_RAW_DEPOSIT */
};
/* On HC_E_NOMEM, deposit module pages and retry, as the module's own calls do. */
#define SLAT_RAW_DEPOSIT 1ull

/* The module's own accounting (MODULE_STATS). */
struct slat_module_stats {
	__u64 vms;	     /* VMs alive (fds or vCPU fds open) */
	__u64 pinned_pages;  /* user pages pinned for slots now */
	__u64 deposited_now; /* pages given to Slat and not yet withdrawn */
	__u64 deposits;	     /* DEPOSIT calls made */
	__u64 withdrawn;     /* pages taken back and freed */
	__u64 nomem_retries; /* calls retried after an HC_E_NOMEM */
	__u64 hv_version;    /* VERSION's answer */
};

/* /dev/slat */
#define SLAT_CREATE_VM	  _IO(SLATIO, 0x01)			    /* -> VM fd */
#define SLAT_HV_STATS	  _IOR(SLATIO, 0x02, struct hc_hv_stats)    /* Slat's pool */
#define SLAT_RAW_CALL	  _IOWR(SLATIO, 0x03, struct slat_raw_call) /* fuzzing only */
#define SLAT_MODULE_STATS _IOR(SLATIO, 0x04, struct slat_module_stats)

/* VM fd */
#define SLAT_SET_SLOT	 _IOW(SLATIO, 0x10, struct slat_slot)
#define SLAT_CREATE_VCPU _IO(SLATIO, 0x11) /* arg: vCPU index -> vCPU fd */
#define SLAT_VM_STATS	 _IOR(SLATIO, 0x12, struct hc_vm_stats)
#define SLAT_VM_ID	 _IO(SLATIO, 0x13) /* -> Slat's id of the VM (diagnostics, fuzzer) */

/* vCPU fd; mmap offset 0, one page: struct hc_run */
#define SLAT_RUN      _IO(SLATIO, 0x20) /* 0: hc_run.reason says why; -EINTR: a signal */
#define SLAT_SET_REGS _IO(SLATIO, 0x21) /* arg -> struct hc_regs_x86 / hc_regs_arm64 */
#define SLAT_GET_REGS _IO(SLATIO, 0x22) /* same, written */

#endif
