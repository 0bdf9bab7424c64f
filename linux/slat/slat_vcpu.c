// SPDX-License-Identifier: GPL-2.0
/*
 * vCPU fds: the run page (struct hc_run, mmap offset 0, shared with Slat),
 * RUN, SET_REGS and GET_REGS. Each vCPU fd holds a reference on its VM.
 */
#include <linux/anon_inodes.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/module.h>

#include "slat.h"

struct slat_vcpu {
	struct slat_vm *vm;
	u32 index;
	struct page *run;  /* struct hc_run */
	struct mutex lock; /* one RUN / REGS call at a time */
};

/* VCPU_RUN until an exit for the VMM; PREEMPTED: reschedule and go again. */
static long slat_vcpu_run(struct slat_vcpu *vc)
{
	struct hc_run *run = page_address(vc->run);
	u64 a[6] = {vc->vm->id, vc->index, slat_pa(vc->run)}, r[3];
	long st;

	for (;;) {
		if (signal_pending(current))
			return -EINTR;
		slat_arch_fpu_begin();
		st = slat_arch_hcall(HC_FN(HC_VCPU_RUN), a, r);
		slat_arch_fpu_end();
		if (st == HC_E_NOMEM) {
			atomic64_inc(&slat_nomem_retries);
			if (slat_pool_deposit_chunk())
				return -ENOMEM;
			continue;
		}
		if (st != HC_OK)
			return slat_errno(st);
		if (r[0] != HC_EXIT_PREEMPTED) {
			run->reason = (u32)r[0]; /* Slat wrote it too; keep them equal */
			return 0;
		}
		cond_resched();
	}
}

static long slat_vcpu_regs(struct slat_vcpu *vc, void __user *up, bool set)
{
	struct page *pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 r[3];
	long st;
	int rc = 0;

	if (!pg)
		return -ENOMEM;
	if (set && copy_from_user(page_address(pg), up, slat_arch_regs_size)) {
		rc = -EFAULT;
		goto out;
	}
	st = slat_call(set ? HC_VCPU_SET_REGS : HC_VCPU_GET_REGS, vc->vm->id, vc->index,
		       slat_pa(pg), 0, 0, 0, r);
	rc = slat_errno(st);
	if (!rc && !set && copy_to_user(up, page_address(pg), slat_arch_regs_size))
		rc = -EFAULT;
out:
	__free_page(pg);
	return rc;
}

static long slat_vcpu_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct slat_vcpu *vc = f->private_data;
	long rc;

	if (cmd != SLAT_RUN && cmd != SLAT_SET_REGS && cmd != SLAT_GET_REGS)
		return -ENOTTY;
	if (mutex_lock_killable(&vc->lock))
		return -EINTR;
	if (cmd == SLAT_RUN)
		rc = slat_vcpu_run(vc);
	else
		rc = slat_vcpu_regs(vc, (void __user *)arg, cmd == SLAT_SET_REGS);
	mutex_unlock(&vc->lock);
	return rc;
}

static int slat_vcpu_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct slat_vcpu *vc = f->private_data;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	vma->vm_flags |= VM_DONTEXPAND;
	return vm_insert_page(vma, vma->vm_start, vc->run);
}

static int slat_vcpu_close(struct inode *inode, struct file *f)
{
	struct slat_vcpu *vc = f->private_data;

	/* Slat keeps no pointer to the run page between RUN calls. */
	__free_page(vc->run);
	slat_vm_put(vc->vm);
	kfree(vc);
	return 0;
}

static const struct file_operations slat_vcpu_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_vcpu_ioctl,
    .compat_ioctl = compat_ptr_ioctl,
    .mmap = slat_vcpu_mmap,
    .release = slat_vcpu_close,
    .llseek = noop_llseek,
};

int slat_vcpu_create_fd(struct slat_vm *vm, unsigned long index)
{
	struct slat_vcpu *vc;
	u64 r[3];
	long st;
	int fd;

	if (index >= HC_MAX_VCPUS)
		return -EINVAL;
	vc = kzalloc(sizeof(*vc), GFP_KERNEL);
	if (!vc)
		return -ENOMEM;
	vc->run = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!vc->run) {
		kfree(vc);
		return -ENOMEM;
	}
	mutex_lock(&vm->lock);
	st = slat_call(HC_VCPU_CREATE, vm->id, index, 0, 0, 0, 0, r);
	mutex_unlock(&vm->lock);
	if (st != HC_OK) {
		__free_page(vc->run);
		kfree(vc);
		return slat_errno(st);
	}
	vc->vm = vm;
	vc->index = index;
	mutex_init(&vc->lock);
	kref_get(&vm->ref);
	fd = anon_inode_getfd("slat-vcpu", &slat_vcpu_fops, vc, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		/* The vCPU stays in Slat until VM_DESTROY; only our record goes. */
		__free_page(vc->run);
		kfree(vc);
		slat_vm_put(vm);
	}
	return fd;
}
