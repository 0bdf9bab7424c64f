// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm over Slat (docs/kvm-api.md): the subset of the KVM API
 * (Documentation/virt/kvm/api.rst, Linux 6.1) that KVM's selftests framework
 * and small VMMs use, answered with Slat's secondary VMs. A KVM VM is a
 * slat_vm, a KVM vCPU a slat_vcpu plus the struct kvm_run page the VMM
 * mmaps; KVM_SET_USER_MEMORY_REGION is the module's lazy slots (slat_slot.c:
 * the VMM's pages pinned as the guest touches them and shared with the VM,
 * the VMM keeps access).
 * Capabilities Slat does not implement answer 0, ioctls it does not know
 * -ENOTTY (system fd) or -EINVAL / -ENOTTY as KVM does, so a program skips
 * what Slat lacks.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "slat_kvm.h"

#define SLAT_KVM_API_VERSION 12 /* KVM_GET_API_VERSION: the only one there is */

static unsigned int kvm_max_vcpus = 256;
module_param(kvm_max_vcpus, uint, 0444);
MODULE_PARM_DESC(kvm_max_vcpus, "/dev/kvm: KVM_CAP_MAX_VCPUS and MAX_VCPU_ID (1..1024)");

static bool kvm_dev = true;
module_param(kvm_dev, bool, 0444);
MODULE_PARM_DESC(kvm_dev, "offer the KVM API on /dev/kvm (default on)");

/* The module's limit, or the architecture's lower one (arm64: 8 with only a
 * GICv2 to offer, as KVM on a GICv2 host). */
static unsigned int max_vcpus(void)
{
	return slat_kvm_arch_max_vcpus(kvm_max_vcpus);
}

static long slat_kvm_check_extension(long cap)
{
	switch (cap) {
	case KVM_CAP_USER_MEMORY:
	case KVM_CAP_IMMEDIATE_EXIT:
	case KVM_CAP_CHECK_EXTENSION_VM:
	case KVM_CAP_SYNC_MMU: /* regions follow the VMM's mapping (slat_slot.c) */
	/* A deleted region's slot and range are free again at once, and
	 * adjacent regions (or one region replacing several) are just slots
	 * (slat_slot.c): what QEMU requires of these two. */
	case KVM_CAP_DESTROY_MEMORY_REGION_WORKS:
	case KVM_CAP_JOIN_MEMORY_REGIONS_WORKS:
	case KVM_CAP_BINARY_STATS_FD: /* Slat's figures (slat_kvm_stats.c) */
		return 1;
	case KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2:
		/* Enable bit only: no KVM_DIRTY_LOG_INITIALLY_SET (KVM 6.1 has it). */
		return slat_kvm_dirty_ok() ? KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE : 0;
	case KVM_CAP_READONLY_MEM: /* guest writes to such a region exit as MMIO */
		return slat_kvm_readonly_ok();
	case KVM_CAP_NR_MEMSLOTS:
		return HC_MAX_SLOTS;
	case KVM_CAP_MAX_VCPUS:
	case KVM_CAP_MAX_VCPU_ID:
		return max_vcpus();
	case KVM_CAP_NR_VCPUS:
		return min_t(long, num_online_cpus(), max_vcpus());
	default:
		return max(slat_kvm_arch_cap(cap), 0L);
	}
}

/* ---- memory regions ---- */

bool slat_kvm_readonly_ok(void)
{
	return (slat_hv_version & 0xffff) >= 2; /* ABI 1.2: read-only slots */
}

bool slat_kvm_dirty_ok(void)
{
	return (slat_hv_version & 0xffff) >= 9; /* ABI 1.9: dirty logging */
}

/* The largest region: a lazy slot; a Slat older than ABI 1.10 takes 1 GiB. */
static u64 slat_kvm_slot_max_pages(void)
{
	return (slat_hv_version & 0xffff) >= 10 ? HC_SLOT_LAZY_MAX_PAGES : HC_SLOT_PINNED_MAX_PAGES;
}

/* KVM's checks on kvm_userspace_memory_region (virt/kvm/kvm_main.c). */
static int slat_kvm_region_check(struct slat_kvm_vm *kvm,
				 const struct kvm_userspace_memory_region *m)
{
	u32 ok = (slat_kvm_readonly_ok() ? KVM_MEM_READONLY : 0) |
		 (slat_kvm_dirty_ok() ? KVM_MEM_LOG_DIRTY_PAGES : 0);

	if (m->flags & ~ok)
		return -EINVAL;
	/* Bits 31:16 are the address space: only x86's SMM has a second one. */
	if (m->slot >> 16 || m->slot >= HC_MAX_SLOTS)
		return -EINVAL;
	if ((m->memory_size | m->guest_phys_addr | m->userspace_addr) & (PAGE_SIZE - 1))
		return -EINVAL;
	if (m->guest_phys_addr + m->memory_size < m->guest_phys_addr)
		return -EINVAL;
	if (m->memory_size &&
	    !access_ok((void __user *)(unsigned long)m->userspace_addr, m->memory_size))
		return -EINVAL;
	/* Slat's lazy-slot limit (64 GiB, ABI 1.10; 1 GiB before); KVM has none. */
	if (m->memory_size > (u64)slat_kvm_slot_max_pages() << PAGE_SHIFT)
		return -E2BIG;
	/* arm64: a slot beyond the VM type's IPA size is -EFAULT, as in KVM. */
	if (kvm->vm->gpa_limit && m->guest_phys_addr + m->memory_size > kvm->vm->gpa_limit)
		return -EFAULT;
	return 0;
}

/* A lazy slot (slat_slot.c): pages get frames when the guest touches them. */
static int slat_kvm_set_region(struct slat_kvm_vm *kvm, const struct kvm_userspace_memory_region *m)
{
	unsigned int flags = SLAT_SLOT_LAZY;
	int rc = slat_kvm_region_check(kvm, m);

	if (rc)
		return rc;
	if (m->flags & KVM_MEM_READONLY)
		flags |= SLAT_SLOT_READONLY; /* cannot change on a live region either */
	if (m->flags & KVM_MEM_LOG_DIRTY_PAGES)
		flags |= SLAT_SLOT_DIRTY; /* can: Slat starts or stops logging */
	return slat_slot_update(kvm->vm, m->slot, m->guest_phys_addr, m->memory_size,
				m->userspace_addr, flags);
}

/* Pages of the logging region `slot`, or 0 (none, or it does not log: -ENOENT). */
static u64 slat_kvm_logging_pages(struct slat_kvm_vm *kvm, u32 slot)
{
	struct slat_mslot *ms;
	u64 pages;

	mutex_lock(&kvm->vm->lock);
	ms = xa_load(&kvm->vm->slots, slot);
	pages = ms && (ms->flags & SLAT_SLOT_DIRTY) ? ms->npages : 0;
	mutex_unlock(&kvm->vm->lock);
	return pages;
}

/*
 * KVM_GET_DIRTY_LOG: the slot's whole bitmap; without manual protection the
 * pages reported are also cleared and write-protected (KVM's classic mode).
 */
static int slat_kvm_get_dirty_log(struct slat_kvm_vm *kvm, void __user *up)
{
	struct kvm_dirty_log log;
	u64 pages;

	if (copy_from_user(&log, up, sizeof(log)))
		return -EFAULT;
	if (log.slot >> 16 || log.slot >= HC_MAX_SLOTS)
		return -EINVAL;
	pages = slat_kvm_logging_pages(kvm, log.slot);
	if (!pages)
		return -ENOENT;
	return slat_slot_dirty(kvm->vm, log.slot,
			       kvm->manual_protect ? HC_SLOT_DIRTY_GET : HC_SLOT_DIRTY_TAKE, 0,
			       pages, log.dirty_bitmap);
}

/* KVM_CLEAR_DIRTY_LOG: KVM's range rules (kvm_clear_dirty_log_protect). */
static int slat_kvm_clear_dirty_log(struct slat_kvm_vm *kvm, void __user *up)
{
	struct kvm_clear_dirty_log log;
	u64 pages;

	if (copy_from_user(&log, up, sizeof(log)))
		return -EFAULT;
	if (log.slot >> 16 || log.slot >= HC_MAX_SLOTS || (log.first_page & 63))
		return -EINVAL;
	pages = slat_kvm_logging_pages(kvm, log.slot);
	if (!pages)
		return -ENOENT;
	if (log.first_page > pages || log.num_pages > pages - log.first_page ||
	    (log.num_pages < pages - log.first_page && (log.num_pages & 63)))
		return -EINVAL;
	if (!log.num_pages)
		return 0;
	return slat_slot_dirty(kvm->vm, log.slot, HC_SLOT_DIRTY_CLEAR, log.first_page,
			       log.num_pages, log.dirty_bitmap);
}

/* KVM_ENABLE_CAP on the VM: dirty-log protection here, the rest per arch. */
static long slat_kvm_enable_cap(struct slat_kvm_vm *kvm, void __user *up)
{
	struct kvm_enable_cap cap;

	if (copy_from_user(&cap, up, sizeof(cap)))
		return -EFAULT;
	if (cap.cap != KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2)
		return slat_kvm_arch_vm_ioctl(kvm, KVM_ENABLE_CAP, up);
	if (!slat_kvm_dirty_ok() || cap.flags ||
	    (cap.args[0] & ~(u64)KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE))
		return -EINVAL;
	kvm->manual_protect = cap.args[0] & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
	return 0;
}

/* ---- vCPU fds ---- */

/* The VMM's answer to the last exit goes into Slat's run page. */
static void slat_kvm_pass_answer(struct slat_kvm_vcpu *v, struct hc_run *hr,
				 const struct kvm_run *kr)
{
	u64 data = 0;

	if (v->pending == HC_EXIT_MMIO && !hr->u.mmio.is_write) {
		memcpy(&data, kr->mmio.data, min_t(u32, hr->u.mmio.len, sizeof(data)));
		hr->u.mmio.data = data;
	} else if (v->pending == HC_EXIT_IO && !hr->u.io.is_out) {
		memcpy(&data, (const u8 *)kr + SLAT_KVM_PIO_OFFSET,
		       min_t(u32, hr->u.io.size, sizeof(data)));
		hr->u.io.data = data;
	}
}

static void slat_kvm_internal(struct kvm_run *kr, const struct hc_run *hr)
{
	kr->exit_reason = KVM_EXIT_INTERNAL_ERROR;
	kr->internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	kr->internal.ndata = 3;
	kr->internal.data[0] = hr->u.fail.hw_reason;
	kr->internal.data[1] = hr->u.fail.info[0];
	kr->internal.data[2] = hr->u.fail.info[1];
}

/* Slat's exit as KVM reports it: 1 the module answered it, run again; 0 to the VMM. */
static int slat_kvm_translate(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	int rc = slat_kvm_arch_exit(v, hr, kr);

	if (rc < 0)
		return rc;
	if (rc == SLAT_KVM_REENTER)
		return 1;
	if (rc == SLAT_KVM_TO_VMM)
		return 0;
	if (hr->reason == HC_EXIT_MEMFAULT) {
		rc = slat_slot_fault(v->vc->vm, hr->u.memfault.slot, hr->u.memfault.index);
		return rc ? rc : 1;
	}
	v->pending = hr->reason;
	switch (hr->reason) {
	case HC_EXIT_MMIO:
		kr->exit_reason = KVM_EXIT_MMIO;
		kr->mmio.phys_addr = hr->u.mmio.gpa;
		kr->mmio.len = hr->u.mmio.len;
		kr->mmio.is_write = hr->u.mmio.is_write;
		memset(kr->mmio.data, 0, sizeof(kr->mmio.data));
		if (hr->u.mmio.is_write)
			memcpy(kr->mmio.data, &hr->u.mmio.data,
			       min_t(u32, hr->u.mmio.len, sizeof(kr->mmio.data)));
		return 0;
	case HC_EXIT_IO:
		if (hr->u.io.count != 1 || hr->u.io.size > sizeof(hr->u.io.data))
			break; /* string I/O: Slat gives no exit for it (docs) */
		kr->exit_reason = KVM_EXIT_IO;
		kr->io.direction = hr->u.io.is_out ? KVM_EXIT_IO_OUT : KVM_EXIT_IO_IN;
		kr->io.size = hr->u.io.size;
		kr->io.port = hr->u.io.port;
		kr->io.count = 1;
		kr->io.data_offset = SLAT_KVM_PIO_OFFSET;
		if (hr->u.io.is_out)
			memcpy((u8 *)kr + SLAT_KVM_PIO_OFFSET, &hr->u.io.data, hr->u.io.size);
		return 0;
	case HC_EXIT_HALT:
		kr->exit_reason = KVM_EXIT_HLT;
		return 0;
	case HC_EXIT_SHUTDOWN:
		kr->exit_reason = KVM_EXIT_SHUTDOWN;
		return 0;
	case HC_EXIT_FAIL_ENTRY:
		kr->exit_reason = KVM_EXIT_FAIL_ENTRY;
		kr->fail_entry.hardware_entry_failure_reason = hr->u.fail.hw_reason;
		kr->fail_entry.cpu = raw_smp_processor_id();
		return 0;
	default:
		break;
	}
	/* INTERNAL, or an exit this layer has no KVM form for. QEMU prints no
	 * data with it (no KVM_CAP_INTERNAL_ERROR_DATA): the kernel log keeps
	 * Slat's reason (arm64: ESR_EL2, IPA, FAR) for the bug report. */
	pr_warn_ratelimited("slat: vCPU %u: exit %u without a KVM form: 0x%llx 0x%llx 0x%llx\n",
			    v->id, hr->reason, hr->u.fail.hw_reason, hr->u.fail.info[0],
			    hr->u.fail.info[1]);
	slat_kvm_internal(kr, hr);
	return 0;
}

static long slat_kvm_run_loop(struct slat_kvm_vcpu *v);

/*
 * KVM_SET_SIGNAL_MASK's mask holds for the thread while it is in KVM_RUN, as
 * in KVM: the mask it had is kept in real_blocked (what KVM uses too) and put
 * back on the way out, so a signal the mask let in while the vCPU ran ends
 * KVM_RUN with -EINTR and stays pending, blocked again, for the VMM (e.g.
 * dirty_log_test's kick, taken with sigwait).
 */
static void slat_kvm_sigmask_enter(struct slat_kvm_vcpu *v)
{
	if (v->sigset_active)
		sigprocmask(SIG_SETMASK, &v->sigset, &current->real_blocked);
}

static void slat_kvm_sigmask_leave(struct slat_kvm_vcpu *v)
{
	if (!v->sigset_active)
		return;
	sigprocmask(SIG_SETMASK, &current->real_blocked, NULL);
	sigemptyset(&current->real_blocked);
}

static long slat_kvm_run(struct slat_kvm_vcpu *v)
{
	long rc;

	slat_kvm_sigmask_enter(v);
	rc = v->inited ? slat_kvm_arch_run_begin(v) : 0;
	rc = rc ?: slat_kvm_run_loop(v);
	slat_kvm_sigmask_leave(v);
	slat_kvm_arch_vcpu_done(v);
	if (v->inited)
		slat_kvm_arch_run_end(v);
	return rc;
}

/* KVM_SET_SIGNAL_MASK: a struct kvm_signal_mask of 8 bytes of mask, or NULL (none). */
static long slat_kvm_set_sigmask(struct slat_kvm_vcpu *v, void __user *up)
{
	struct kvm_signal_mask __user *um = up;
	struct kvm_signal_mask km;
	sigset_t set;

	if (!up) {
		v->sigset_active = false;
		return 0;
	}
	if (copy_from_user(&km, um, sizeof(km)))
		return -EFAULT;
	if (km.len != sizeof(set))
		return -EINVAL;
	if (copy_from_user(&set, um->sigset, sizeof(set)))
		return -EFAULT;
	/* SIGKILL and SIGSTOP cannot be blocked. */
	sigdelsetmask(&set, sigmask(SIGKILL) | sigmask(SIGSTOP));
	v->sigset = set;
	v->sigset_active = true;
	return 0;
}

static long slat_kvm_run_loop(struct slat_kvm_vcpu *v)
{
	struct kvm_run *kr = page_address(v->run);
	struct hc_run *hr = page_address(v->vc->run);
	long rc;

	if (!v->inited)
		return -ENOEXEC; /* arm64: KVM_ARM_VCPU_INIT first, as KVM says */
	/*
	 * KVM completes the last exit here and leaves exit_reason and its
	 * fields as they were (the selftests read them again afterwards). The
	 * answer is in hr already; Slat completes the access at the next
	 * VCPU_RUN, so registers read in between show it not yet completed.
	 */
	slat_kvm_pass_answer(v, hr, kr);
	if (READ_ONCE(kr->immediate_exit))
		return -EINTR;
	for (;;) {
		/* Before every entry, a preempted one too: a kick that made a
		 * LAPIC vector pending preempts the vCPU, and only this offers it. */
		rc = slat_kvm_arch_vcpu_ready(v);
		if (!rc)
			rc = slat_vcpu_run_once(v->vc);
		if (rc == 1)
			continue;
		if (rc == -EINTR) {
			kr->exit_reason = KVM_EXIT_INTR;
			WRITE_ONCE(v->stats.signal_exits, v->stats.signal_exits + 1);
		}
		if (rc)
			return rc;
		v->pending = 0;
		rc = slat_kvm_translate(v, hr, kr);
		if (rc == 0)
			WRITE_ONCE(v->stats.to_vmm, v->stats.to_vmm + 1);
		if (rc <= 0)
			return rc;
		WRITE_ONCE(v->stats.in_kernel, v->stats.in_kernel + 1);
	}
}

static long slat_kvm_vcpu_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct slat_kvm_vcpu *v = f->private_data;
	long rc;

	if (v->mm != current->mm)
		return -EIO;
	if (mutex_lock_killable(&v->vc->lock))
		return -EINTR;
	if (cmd == KVM_RUN)
		rc = arg ? -EINVAL : slat_kvm_run(v);
	else if (cmd == KVM_GET_STATS_FD)
		rc = slat_kvm_vcpu_stats_fd(f, v);
	else if (cmd == KVM_SET_SIGNAL_MASK)
		rc = slat_kvm_set_sigmask(v, (void __user *)arg);
	else
		rc = slat_kvm_arch_vcpu_ioctl(v, cmd, (void __user *)arg);
	mutex_unlock(&v->vc->lock);
	return rc;
}

static int slat_kvm_vcpu_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct slat_kvm_vcpu *v = f->private_data;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != SLAT_KVM_RUN_SIZE)
		return -EINVAL;
	vma->vm_flags |= VM_DONTEXPAND;
	return vm_insert_page(vma, vma->vm_start, v->run);
}

static void slat_kvm_vcpu_free(struct slat_kvm_vcpu *v)
{
	slat_kvm_arch_vcpu_free(v);
	__free_page(v->run);
	slat_vcpu_free(v->vc);
	kfree(v);
}

static int slat_kvm_vcpu_close(struct inode *inode, struct file *f)
{
	slat_kvm_vcpu_free(f->private_data);
	return 0;
}

static const struct file_operations slat_kvm_vcpu_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_kvm_vcpu_ioctl,
    .mmap = slat_kvm_vcpu_mmap,
    .release = slat_kvm_vcpu_close,
    .llseek = noop_llseek,
};

static int slat_kvm_create_vcpu(struct slat_kvm_vm *kvm, unsigned long id)
{
	struct slat_kvm_vcpu *v;
	int rc;

	if (id >= max_vcpus())
		return -EINVAL;
	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	v->run = alloc_page(GFP_KERNEL | __GFP_ZERO);
	v->vc = slat_vcpu_new(kvm->vm, id);
	if (!v->run || IS_ERR(v->vc)) {
		/* Slat's EXISTS for a second vCPU with this id is KVM's -EEXIST. */
		rc = IS_ERR(v->vc) ? PTR_ERR(v->vc) : -ENOMEM;
		if (!IS_ERR(v->vc))
			slat_vcpu_free(v->vc);
		if (v->run)
			__free_page(v->run);
		kfree(v);
		return rc;
	}
	v->id = id;
	v->mm = kvm->mm; /* the VM fd's reference keeps it while the VM lives */
	rc = slat_kvm_arch_vcpu_create(v);
	if (!rc)
		rc = anon_inode_getfd("kvm-vcpu", &slat_kvm_vcpu_fops, v, O_RDWR | O_CLOEXEC);
	if (rc < 0)
		slat_kvm_vcpu_free(v);
	return rc;
}

/* ---- VM fds ---- */

static long slat_kvm_vm_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct slat_kvm_vm *kvm = f->private_data;
	void __user *up = (void __user *)arg;
	struct kvm_userspace_memory_region m;
	long rc;

	/* A VM belongs to the process that made it (its memory is that process's). */
	if (kvm->mm != current->mm)
		return -EIO;
	switch (cmd) {
	case KVM_SET_USER_MEMORY_REGION:
		if (copy_from_user(&m, up, sizeof(m)))
			return -EFAULT;
		return slat_kvm_set_region(kvm, &m);
	case KVM_CREATE_VCPU:
		return slat_kvm_create_vcpu(kvm, arg);
	case KVM_CHECK_EXTENSION:
		return slat_kvm_check_extension(arg);
	case KVM_GET_DIRTY_LOG:
		return slat_kvm_get_dirty_log(kvm, up);
	case KVM_CLEAR_DIRTY_LOG:
		return slat_kvm_clear_dirty_log(kvm, up);
	case KVM_ENABLE_CAP:
		return slat_kvm_enable_cap(kvm, up);
	case KVM_GET_STATS_FD:
		return slat_kvm_vm_stats_fd(f, kvm);
	default:
		rc = slat_kvm_arch_vm_ioctl(kvm, cmd, up);
		/* KVM's VM fd answers an unknown ioctl with -ENOTTY too. */
		return rc;
	}
}

static int slat_kvm_vm_close(struct inode *inode, struct file *f)
{
	struct slat_kvm_vm *kvm = f->private_data;

	mmdrop(kvm->mm);
	slat_vm_put(kvm->vm);
	kfree(kvm);
	return 0;
}

static const struct file_operations slat_kvm_vm_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_kvm_vm_ioctl,
    .release = slat_kvm_vm_close,
    .llseek = noop_llseek,
};

static int slat_kvm_create_vm(unsigned long type)
{
	struct slat_kvm_vm *kvm;
	unsigned int ipa_bits = 0;
	int rc = slat_kvm_arch_vm_type(type, &ipa_bits);

	if (rc)
		return rc;
	kvm = kzalloc(sizeof(*kvm), GFP_KERNEL);
	if (!kvm)
		return -ENOMEM;
	kvm->vm = slat_vm_new(0, max_vcpus());
	if (IS_ERR(kvm->vm)) {
		rc = PTR_ERR(kvm->vm);
		kfree(kvm);
		return rc;
	}
	kvm->mm = current->mm;
	mmgrab(kvm->mm);
	kvm->clock_offset = -(s64)ktime_get_boottime_ns(); /* KVM's clock starts at 0 */
	kvm->vm->gpa_limit = ipa_bits ? 1ull << ipa_bits : 0;
	rc = anon_inode_getfd("kvm-vm", &slat_kvm_vm_fops, kvm, O_RDWR | O_CLOEXEC);
	if (rc < 0) {
		mmdrop(kvm->mm);
		slat_vm_put(kvm->vm);
		kfree(kvm);
	}
	return rc;
}

/* ---- /dev/kvm ---- */

static long slat_kvm_dev_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case KVM_GET_API_VERSION:
		return arg ? -EINVAL : SLAT_KVM_API_VERSION;
	case KVM_CHECK_EXTENSION:
		return slat_kvm_check_extension(arg);
	case KVM_GET_VCPU_MMAP_SIZE:
		return arg ? -EINVAL : SLAT_KVM_RUN_SIZE;
	case KVM_CREATE_VM:
		return slat_kvm_create_vm(arg);
	default:
		return slat_kvm_arch_dev_ioctl(cmd, (void __user *)arg);
	}
}

static const struct file_operations slat_kvm_dev_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_kvm_dev_ioctl,
    .llseek = noop_llseek,
};

static struct miscdevice slat_kvm_misc = {
    .minor = KVM_MINOR,
    .name = "kvm",
    .fops = &slat_kvm_dev_fops,
    .mode = 0666, /* as udev gives KVM's node to the kvm group; here no groups */
};

static bool slat_kvm_registered;

int slat_kvm_init(void)
{
	int rc;

	BUILD_BUG_ON(sizeof(struct kvm_run) > SLAT_KVM_PIO_OFFSET);
	if (!kvm_dev)
		return 0;
	if (kvm_max_vcpus < 1 || kvm_max_vcpus > HC_MAX_VCPUS) {
		pr_err("slat: kvm_max_vcpus=%u is not in 1..%u\n", kvm_max_vcpus, HC_MAX_VCPUS);
		return -EINVAL;
	}
	if (!slat_kvm_arch_offered()) {
		pr_info("slat: /dev/kvm is not offered: Slat's ABI %llu.%llu lacks what this "
			"architecture needs\n",
			slat_hv_version >> 16, slat_hv_version & 0xffff);
		return 0;
	}
	rc = misc_register(&slat_kvm_misc);
	if (rc) {
		/* Linux's own KVM (a kernel booted at EL2 or with VMX/SVM) has it. */
		pr_err("slat: /dev/kvm is taken (%d): KVM API not offered\n", rc);
		return 0;
	}
	slat_kvm_registered = true;
	pr_info("slat: /dev/kvm ready (KVM API %d, %u vCPUs, %u slots per VM)\n",
		SLAT_KVM_API_VERSION, kvm_max_vcpus, HC_MAX_SLOTS);
	return 0;
}

void slat_kvm_exit(void)
{
	if (slat_kvm_registered)
		misc_deregister(&slat_kvm_misc);
	slat_kvm_registered = false;
}
