// SPDX-License-Identifier: GPL-2.0
/*
 * VM fds. A VM lives while its fd or any of its vCPU fds is open (one kref
 * each); the last close (which is what a dying process does) destroys it in
 * Slat, unpins its slots' pages and withdraws every page Slat gives back.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/module.h>

#include "slat.h"
#ifdef CONFIG_X86
#include "slat_kvm_irq.h"
#endif

static unsigned int max_vcpus = 64;
module_param(max_vcpus, uint, 0444);
MODULE_PARM_DESC(max_vcpus, "vCPU limit of each VM (1..1024)");

#define SLAT_PAGE_BYTES 4096ull /* struct slat_slot's unit */

atomic64_t slat_vms_alive;
atomic64_t slat_last_destroy_ns;

static void slat_vm_release(struct kref *ref)
{
	struct slat_vm *vm = container_of(ref, struct slat_vm, ref);
	unsigned int tries;
	u64 r[3];
	long st;

#ifdef CONFIG_X86
	slat_pit_free(vm->pit); /* its timer raises IRQ0 through vm->irqchip */
#endif
	slat_slots_stop(vm);
	/* No vCPU fd is open, so none runs; BUSY would be a Slat-side lag. */
	for (tries = 0; tries < 100; tries++) {
		u64 t0 = ktime_get_ns();

		st = slat_call(HC_VM_DESTROY, vm->id, 0, 0, 0, 0, 0, r);
		atomic64_set(&slat_last_destroy_ns, ktime_get_ns() - t0);
		if (st != HC_E_BUSY)
			break;
		msleep(10);
	}
	if (st != HC_OK) {
		/* Slat may still map the slots' frames: keep them pinned. */
		pr_err("slat: VM_DESTROY of VM %u failed (%ld); its pages stay pinned\n", vm->id,
		       st);
	} else {
		slat_slots_release(vm);
	}
	xa_destroy(&vm->slots);
	xa_destroy(&vm->vcpus);
	xa_destroy(&vm->kvcpus);
#ifdef CONFIG_X86
	if (vm->irqchip) /* no vCPU is left to use it (each held a reference) */
		slat_route_free(vm->irqchip);
#endif
	kfree(vm->irqchip);
	kfree(vm);
	slat_pool_withdraw_all();
	atomic64_dec(&slat_vms_alive);
}

void slat_vm_put(struct slat_vm *vm)
{
	kref_put(&vm->ref, slat_vm_release);
}

/* SLAT_SET_SLOT: the module's checks (docs/primary-module.md), then an eager slot. */
static int slat_vm_set_slot(struct slat_vm *vm, const struct slat_slot *s)
{
	const u64 mask = SLAT_PAGE_BYTES - 1;

	if (s->flags || s->slot >= HC_MAX_SLOTS)
		return -EINVAL;
	if ((s->guest_phys_addr | s->memory_size | s->userspace_addr) & mask)
		return -EINVAL;
	if (s->memory_size > HC_SLOT_PINNED_MAX_PAGES * SLAT_PAGE_BYTES) /* an eager ADD */
		return -E2BIG;
	if (s->guest_phys_addr + s->memory_size < s->guest_phys_addr ||
	    s->userspace_addr + s->memory_size < s->userspace_addr)
		return -ERANGE;
	return slat_slot_update(vm, s->slot, s->guest_phys_addr, s->memory_size, s->userspace_addr,
				0);
}

static long slat_vm_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct slat_vm *vm = f->private_data;
	void __user *up = (void __user *)arg;
	struct slat_slot s;

	switch (cmd) {
	case SLAT_SET_SLOT:
		if (copy_from_user(&s, up, sizeof(s)))
			return -EFAULT;
		return slat_vm_set_slot(vm, &s);
	case SLAT_CREATE_VCPU:
		return slat_vcpu_create_fd(vm, arg);
	case SLAT_VM_STATS:
		return slat_stats_ioctl(vm->id, up, sizeof(struct hc_vm_stats));
	case SLAT_VM_ID:
		return vm->id;
	default:
		return -ENOTTY;
	}
}

static int slat_vm_close(struct inode *inode, struct file *f)
{
	slat_vm_put(f->private_data);
	return 0;
}

static const struct file_operations slat_vm_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_vm_ioctl,
    .compat_ioctl = compat_ptr_ioctl,
    .release = slat_vm_close,
    .llseek = noop_llseek,
};

struct slat_vm *slat_vm_new(u32 flags, u32 vcpu_limit)
{
	struct slat_vm *vm;
	u64 r[3];
	long st;

	if (vcpu_limit < 1 || vcpu_limit > HC_MAX_VCPUS)
		return ERR_PTR(-EINVAL);
	vm = kzalloc(sizeof(*vm), GFP_KERNEL);
	if (!vm)
		return ERR_PTR(-ENOMEM);
	st = slat_call(HC_VM_CREATE, flags, vcpu_limit, 0, 0, 0, 0, r);
	if (st != HC_OK) {
		kfree(vm);
		return ERR_PTR(slat_errno(st));
	}
	vm->id = (u32)r[0];
	kref_init(&vm->ref);
	mutex_init(&vm->lock);
	xa_init(&vm->slots);
	xa_init(&vm->vcpus);
	xa_init(&vm->kvcpus);
	atomic64_inc(&slat_vms_alive);
	return vm;
}

int slat_vm_create_fd(u32 flags)
{
	struct slat_vm *vm = slat_vm_new(flags, max_vcpus);
	int fd;

	if (IS_ERR(vm))
		return PTR_ERR(vm);
	fd = anon_inode_getfd("slat-vm", &slat_vm_fops, vm, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		slat_vm_put(vm);
	return fd;
}
