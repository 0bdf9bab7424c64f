// SPDX-License-Identifier: GPL-2.0
/*
 * vCPU fds: the run page (struct hc_run, mmap offset 0, shared with Slat),
 * RUN, SET_REGS and GET_REGS. Each vCPU fd holds a reference on its VM.
 */
#include <linux/anon_inodes.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/module.h>

#include "slat.h"

static void stat_add(u64 *counter, u64 n)
{
	WRITE_ONCE(*counter, *counter + n); /* one writer: the vCPU's lock holder */
}

/* The hypercall, counted: calls, time in it, and its result by exit reason. */
static long slat_vcpu_run_call(struct slat_vcpu *vc, const u64 a[6], u64 r[3])
{
	u64 t0 = ktime_get_ns();
	long st;

	slat_arch_fpu_begin();
	st = slat_arch_hcall(HC_FN(HC_VCPU_RUN), a, r);
	slat_arch_fpu_end();
	stat_add(&vc->stats.runs, 1);
	stat_add(&vc->stats.run_ns, ktime_get_ns() - t0);
	if (st == HC_OK)
		stat_add(&vc->stats.exits[r[0] < ARRAY_SIZE(vc->stats.exits) ? r[0] : 0], 1);
	return st;
}

/*
 * One VCPU_RUN: 0 with an exit for the caller in the run page, 1 when Slat
 * was preempted (a host interrupt; rescheduled here), or -errno. A caller
 * that offers Slat something at each entry (slat.ko's KVM: a LAPIC vector)
 * must look again after 1: the interrupt may have been the kick that
 * made a vector pending.
 */
long slat_vcpu_run_once(struct slat_vcpu *vc)
{
	struct hc_run *run = page_address(vc->run);
	u64 a[6] = {vc->vm->id, vc->index, slat_pa(vc->run)}, r[3];
	long st;

	for (;;) {
		if (signal_pending(current))
			return -EINTR;
		st = slat_vcpu_run_call(vc, a, r);
		if (st == HC_E_NOMEM) {
			atomic64_inc(&slat_nomem_retries);
			if (slat_pool_deposit_chunk())
				return -ENOMEM;
			continue;
		}
		if (st != HC_OK)
			return slat_errno(st);
		if (r[0] == HC_EXIT_PREEMPTED) {
			cond_resched();
			return 1;
		}
		run->reason = (u32)r[0]; /* Slat wrote it too; keep them equal */
		return 0;
	}
}

/* VCPU_RUN until an exit for the VMM; PREEMPTED: reschedule and go again. */
long slat_vcpu_run(struct slat_vcpu *vc)
{
	long rc;

	while ((rc = slat_vcpu_run_once(vc)) == 1)
		;
	return rc;
}

/* Slat reads (SET) or writes (GET) the register page; `regs` is ours. */
int slat_vcpu_regs_k(struct slat_vcpu *vc, void *regs, bool set)
{
	struct page *pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 r[3];
	long st;

	if (!pg)
		return -ENOMEM;
	if (set)
		memcpy(page_address(pg), regs, slat_arch_regs_size);
	st = slat_call(set ? HC_VCPU_SET_REGS : HC_VCPU_GET_REGS, vc->vm->id, vc->index,
		       slat_pa(pg), 0, 0, 0, r);
	if (st == HC_OK && !set)
		memcpy(regs, page_address(pg), slat_arch_regs_size);
	__free_page(pg);
	return slat_errno(st);
}

static long slat_vcpu_regs(struct slat_vcpu *vc, void __user *up, bool set)
{
	void *k = kzalloc(slat_arch_regs_size, GFP_KERNEL);
	int rc = 0;

	if (!k)
		return -ENOMEM;
	if (set && copy_from_user(k, up, slat_arch_regs_size))
		rc = -EFAULT;
	if (!rc)
		rc = slat_vcpu_regs_k(vc, k, set);
	if (!rc && !set && copy_to_user(up, k, slat_arch_regs_size))
		rc = -EFAULT;
	kfree(k);
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

/* The vCPU stays in Slat until VM_DESTROY; only the module's record goes. */
void slat_vcpu_free(struct slat_vcpu *vc)
{
	struct slat_vm *vm = vc->vm;

	/* Slat keeps no pointer to the run page between RUN calls. */
	__free_page(vc->run);
	kfree(vc);
	slat_vm_put(vm);
}

static int slat_vcpu_close(struct inode *inode, struct file *f)
{
	slat_vcpu_free(f->private_data);
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

struct slat_vcpu *slat_vcpu_new(struct slat_vm *vm, unsigned long index)
{
	struct slat_vcpu *vc;
	u64 r[3];
	long st;

	if (index >= HC_MAX_VCPUS)
		return ERR_PTR(-EINVAL);
	vc = kzalloc(sizeof(*vc), GFP_KERNEL);
	if (!vc)
		return ERR_PTR(-ENOMEM);
	vc->run = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!vc->run) {
		kfree(vc);
		return ERR_PTR(-ENOMEM);
	}
	mutex_lock(&vm->lock);
	st = slat_call(HC_VCPU_CREATE, vm->id, index, 0, 0, 0, 0, r);
	mutex_unlock(&vm->lock);
	if (st != HC_OK) {
		__free_page(vc->run);
		kfree(vc);
		return ERR_PTR(slat_errno(st));
	}
	vc->vm = vm;
	vc->index = index;
	mutex_init(&vc->lock);
	kref_get(&vm->ref);
	return vc;
}

int slat_vcpu_create_fd(struct slat_vm *vm, unsigned long index)
{
	struct slat_vcpu *vc = slat_vcpu_new(vm, index);
	int fd;

	if (IS_ERR(vc))
		return PTR_ERR(vc);
	fd = anon_inode_getfd("slat-vcpu", &slat_vcpu_fops, vc, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		slat_vcpu_free(vc);
	return fd;
}
