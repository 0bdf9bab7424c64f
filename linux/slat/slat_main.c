// SPDX-License-Identifier: GPL-2.0
/*
 * slat.ko: the primary's /dev/slat over Slat's hypercalls (core/hcall_abi.h,
 * docs/primary-module.md). GPL-2.0 because it links the Linux kernel.
 *
 * Loads only under Slat with ABI major 1; otherwise refuses with one dmesg
 * line. The system fd makes VMs (slat_vm.c), reads Slat's pool statistics and,
 * with allow_raw_calls=1 only, makes raw hypercalls for the fuzzer.
 * /dev/slat_log reads Slat's own log (LOG_READ).
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/highmem.h>

#include "slat.h"

static bool allow_raw_calls;
module_param(allow_raw_calls, bool, 0444);
MODULE_PARM_DESC(allow_raw_calls, "allow SLAT_RAW_CALL (hypercall fuzzing; off by default)");

u64 slat_hv_version;
atomic64_t slat_nomem_retries;

/* Deposits one call may trigger before it gives up with -ENOMEM (64 MiB). */
#define SLAT_NOMEM_DEPOSITS 1024

int slat_errno(long status)
{
	switch (status) {
	case HC_OK:
		return 0;
	case HC_E_UNKNOWN:
		return -ENOSYS;
	case HC_E_NOT_OWNED:
		return -EPERM;
	case HC_E_SLAT:
		return -EACCES;
	case HC_E_OTHER_VM:
		return -EXDEV;
	case HC_E_ALREADY_SHARED:
		return -EALREADY;
	case HC_E_RANGE:
		return -ERANGE;
	case HC_E_ALIGN:
	case HC_E_INVAL:
		return -EINVAL;
	case HC_E_TOO_MANY:
		return -E2BIG;
	case HC_E_NOMEM:
		return -ENOMEM;
	case HC_E_BAD_VM:
		return -ESRCH;
	case HC_E_BAD_SLOT:
		return -ENOENT;
	case HC_E_BAD_VCPU:
		return -ENXIO;
	case HC_E_BUSY:
		return -EBUSY;
	case HC_E_EXISTS:
		return -EEXIST;
	default:
		return -EIO;
	}
}

long slat_call(u32 fn, u64 a0, u64 a1, u64 a2, u64 a3, u64 a4, u64 a5, u64 r[3])
{
	const u64 a[6] = {a0, a1, a2, a3, a4, a5};
	unsigned int tries;
	long st;

	for (tries = 0;; tries++) {
		st = slat_arch_hcall(HC_FN(fn), a, r);
		if (st != HC_E_NOMEM || tries == SLAT_NOMEM_DEPOSITS)
			return st;
		atomic64_inc(&slat_nomem_retries);
		if (slat_pool_deposit_chunk())
			return st;
	}
}

/* A page for Slat to read or write, freed by the caller. */
static long slat_page_call(u32 fn, u64 a0, struct page **pg)
{
	u64 r[3];

	*pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!*pg)
		return HC_E_NOMEM;
	return slat_call(fn, a0 ? a0 : slat_pa(*pg), a0 ? slat_pa(*pg) : 0, 0, 0, 0, 0, r);
}

/* HV_STATS (vm == 0) or VM_STATS of `vm`, copied to user memory. */
long slat_stats_ioctl(u32 vm, void __user *up, size_t size)
{
	struct page *pg;
	long st = slat_page_call(vm ? HC_VM_STATS : HC_HV_STATS, vm, &pg);
	int rc = slat_errno(st);

	if (!rc && copy_to_user(up, page_address(pg), size))
		rc = -EFAULT;
	if (pg)
		__free_page(pg);
	return rc;
}

/* VM_STATS of `vm` into `out`: 0 or -errno. */
int slat_vm_stats(u32 vm, struct hc_vm_stats *out)
{
	struct page *pg;
	int rc = slat_errno(slat_page_call(HC_VM_STATS, vm, &pg));

	if (!rc)
		memcpy(out, page_address(pg), sizeof(*out));
	if (pg)
		__free_page(pg);
	return rc;
}

static long slat_raw_call(void __user *up)
{
	struct slat_raw_call c;

	if (!allow_raw_calls)
		return -EPERM;
	unsigned int tries;

	if (copy_from_user(&c, up, sizeof(c)))
		return -EFAULT;
	if (c.flags & ~SLAT_RAW_DEPOSIT)
		return -EINVAL;
	for (tries = 0;; tries++) {
		slat_arch_fpu_begin();
		c.status = slat_arch_hcall(c.fn, c.a, c.r);
		slat_arch_fpu_end();
		if (c.status != HC_E_NOMEM || !(c.flags & SLAT_RAW_DEPOSIT) ||
		    tries == SLAT_NOMEM_DEPOSITS || slat_pool_deposit_chunk())
			break;
		atomic64_inc(&slat_nomem_retries);
	}
	/*
	 * A raw WITHDRAW gives back pool pages the module deposited: take them
	 * back into its accounting so that they are freed, not leaked. Any form
	 * Slat accepted counts (SVE hint; arm64 ignores x0's upper half).
	 */
	if (((u32)c.fn & ~HC_FN_SVE_HINT) == HC_FN(HC_WITHDRAW) && c.status == HC_OK && c.r[0] &&
	    c.r[0] <= HC_LIST_MAX && pfn_valid(c.a[0] >> PAGE_SHIFT)) {
		u64 *list = kmap_local_page(pfn_to_page(c.a[0] >> PAGE_SHIFT));

		slat_pool_take_back(list, c.r[0]);
		kunmap_local(list);
	}
	return copy_to_user(up, &c, sizeof(c)) ? -EFAULT : 0;
}

static long slat_dev_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *up = (void __user *)arg;
	struct slat_module_stats ms;

	switch (cmd) {
	case SLAT_CREATE_VM:
		/* ZAP_ALL: the pre-slot-scoped invalidation, for benchmarks only. */
		return arg & ~(unsigned long)HC_VM_FLAG_ZAP_ALL ? -EINVAL
								: slat_vm_create_fd((u32)arg);
	case SLAT_HV_STATS:
		return slat_stats_ioctl(0, up, sizeof(struct hc_hv_stats));
	case SLAT_RAW_CALL:
		return slat_raw_call(up);
	case SLAT_MODULE_STATS:
		slat_pool_stats(&ms);
		return copy_to_user(up, &ms, sizeof(ms)) ? -EFAULT : 0;
	default:
		return -ENOTTY;
	}
}

static const struct file_operations slat_dev_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = slat_dev_ioctl,
    .compat_ioctl = compat_ptr_ioctl,
    .llseek = noop_llseek,
};

static struct miscdevice slat_misc = {
    .minor = MISC_DYNAMIC_MINOR,
    .name = "slat",
    .fops = &slat_dev_fops,
    .mode = 0600,
};

/*
 * /dev/slat_log: Slat's log as a file (LOG_READ, ABI 1.14). The file
 * position is the log's position (bytes Slat logged since boot); a reader
 * that fell behind Slat's ring skips to the oldest byte it still holds.
 */
static ssize_t slat_log_read(struct file *f, char __user *buf, size_t count, loff_t *ppos)
{
	struct page *pg;
	ssize_t done = 0;
	u64 r[3];

	if (*ppos < 0)
		return -EINVAL;
	pg = alloc_page(GFP_KERNEL);
	if (!pg)
		return -ENOMEM;
	while ((size_t)done < count) {
		long st = slat_call(HC_LOG_READ, slat_pa(pg), *ppos, 0, 0, 0, 0, r);
		size_t n = min_t(size_t, count - done, r[0]);

		if (st != HC_OK) {
			if (!done)
				done = slat_errno(st);
			break;
		}
		if (!n || r[0] > HC_LOG_READ_MAX)
			break;
		if (copy_to_user(buf + done, page_address(pg), n)) {
			if (!done)
				done = -EFAULT;
			break;
		}
		*ppos = r[1] + n;
		done += n;
	}
	__free_page(pg);
	return done;
}

static const struct file_operations slat_log_fops = {
    .owner = THIS_MODULE,
    .read = slat_log_read,
    .llseek = default_llseek,
};

static struct miscdevice slat_log_misc = {
    .minor = MISC_DYNAMIC_MINOR,
    .name = "slat_log",
    .fops = &slat_log_fops,
    .mode = 0400,
};

/* Slat before 1.14 has no LOG_READ: no /dev/slat_log then. */
static bool slat_has_log(void)
{
	return (slat_hv_version & 0xffff) >= 14;
}

static int __init slat_init(void)
{
	static const u64 none[6];
	u64 r[3];
	long st;
	int rc;

	rc = slat_arch_detect();
	if (rc)
		return rc;
	st = slat_arch_hcall(HC_FN(HC_VERSION_FN), none, r);
	if (st != HC_OK || r[0] >> 16 != HC_ABI_MAJOR) {
		pr_err("slat: Slat answers VERSION with status %ld, version %#llx; this module "
		       "needs ABI %u.x: not loading\n",
		       st, st == HC_OK ? r[0] : 0, HC_ABI_MAJOR);
		return -ENODEV;
	}
	slat_hv_version = r[0];
	rc = misc_register(&slat_misc);
	if (rc)
		return rc;
	rc = slat_has_log() ? misc_register(&slat_log_misc) : 0;
	if (rc) {
		misc_deregister(&slat_misc);
		return rc;
	}
	rc = slat_kvm_init();
	if (rc) {
		if (slat_has_log())
			misc_deregister(&slat_log_misc);
		misc_deregister(&slat_misc);
		return rc;
	}
	pr_info("slat: Slat ABI %llu.%llu, /dev/slat ready%s\n", r[0] >> 16, r[0] & 0xffff,
		allow_raw_calls ? " (raw calls allowed)" : "");
	return 0;
}

static void __exit slat_exit(void)
{
	slat_kvm_exit();
	if (slat_has_log())
		misc_deregister(&slat_log_misc);
	misc_deregister(&slat_misc);
	/* Every VM fd is closed (module references): withdraw the rest. */
	slat_pool_withdraw_all();
	slat_pool_exit();
}

module_init(slat_init);
module_exit(slat_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("/dev/slat: secondary VMs through the Slat hypervisor");
