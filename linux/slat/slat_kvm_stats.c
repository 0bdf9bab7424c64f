// SPDX-License-Identifier: GPL-2.0
/*
 * KVM_GET_STATS_FD on VM and vCPU fds (KVM_CAP_BINARY_STATS_FD): KVM's
 * binary statistics format (Documentation/virt/kvm/api.rst, "The file
 * descriptor"), filled with what Slat and this module count. The file is a
 * header, an id string, one descriptor per figure and the figures; all but
 * the figures are fixed when the fd is made, the figures are read anew at
 * every read (VM_STATS for a VM; a vCPU's counters without its lock).
 *
 * The names are Slat's own where the figure is not KVM's (a KVM name is used
 * only for the same figure: signal_exits), so a reader never mistakes one
 * system's figure for the other's.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "slat_kvm.h"

/* The names' field, as KVM's (its NAME_SIZE is not in the uapi:
 * readers take it from the header's name_size). */
#define NAME_SIZE 48

#define CUMUL KVM_STATS_TYPE_CUMULATIVE
#define NOW   KVM_STATS_TYPE_INSTANT
#define PEAK  KVM_STATS_TYPE_PEAK

struct stat_def {
	const char *name;
	u32 flags;
	s16 exponent;
};

/* A vCPU: VCPU_RUN's results by enum hc_exit (the index), then this module's. */
static const struct stat_def vcpu_defs[] = {
    {"slat_exit_other", CUMUL},
    {"slat_exit_mmio", CUMUL},
    {"slat_exit_io", CUMUL},
    {"slat_exit_hypercall", CUMUL},
    {"slat_exit_halt", CUMUL},
    {"slat_exit_shutdown", CUMUL},
    {"slat_exit_preempted", CUMUL},
    {"slat_exit_fail_entry", CUMUL},
    {"slat_exit_internal", CUMUL},
    {"slat_exit_memfault", CUMUL},
    {"slat_exit_irq_window", CUMUL},
    {"slat_exit_msr", CUMUL},
    {"slat_exit_sysreg", CUMUL},
    {"slat_vcpu_runs", CUMUL},
    {"slat_vcpu_run_time", CUMUL | KVM_STATS_UNIT_SECONDS, -9},
    {"slat_exits_in_kernel", CUMUL},
    {"slat_exits_to_vmm", CUMUL},
    {"signal_exits", CUMUL},
};
#define VCPU_EXIT_DEFS 13 /* HC_EXIT_SYSREG + 1 */
static_assert(HC_EXIT_SYSREG + 1 == VCPU_EXIT_DEFS, "one figure per Slat exit reason");

static void vcpu_fill(void *obj, u64 *d)
{
	const struct slat_kvm_vcpu *v = obj;
	const struct slat_vcpu_stats *s = &v->vc->stats;
	u64 *after = d + VCPU_EXIT_DEFS;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(s->exits); i++) /* reasons newer than the table: other */
		d[i < VCPU_EXIT_DEFS ? i : 0] += READ_ONCE(s->exits[i]);
	after[0] = READ_ONCE(s->runs);
	after[1] = READ_ONCE(s->run_ns);
	after[2] = READ_ONCE(v->stats.in_kernel);
	after[3] = READ_ONCE(v->stats.to_vmm);
	after[4] = READ_ONCE(v->stats.signal_exits);
}
static_assert(ARRAY_SIZE(vcpu_defs) == VCPU_EXIT_DEFS + 5, "vcpu_fill's layout");

/* A VM: the SLAT engine's figures (struct hc_vm_stats, in its order). */
static const struct stat_def vm_defs[] = {
    {"slat_faults", CUMUL},
    {"slat_faults_mmio", CUMUL},
    {"slat_faults_retry", CUMUL},
    {"slat_leaves_mapped_4k", CUMUL},
    {"slat_leaves_mapped_2m", CUMUL},
    {"slat_leaves_mapped_1g", CUMUL},
    {"slat_leaves_mapped_512g", CUMUL},
    {"slat_leaves_zapped", CUMUL},
    {"slat_tables_zapped", CUMUL},
    {"slat_tables_live", NOW},
    {"slat_tables_max", PEAK},
    {"slat_inval_context", CUMUL},
    {"slat_inval_range", CUMUL},
    {"slat_inval_range_pages", CUMUL},
    {"slat_cmo_calls", CUMUL},
    {"slat_slot_updates", CUMUL},
    {"slat_zap_all", CUMUL},
    {"slat_slots", NOW},
    {"slat_slot_pages", NOW},
    {"slat_meta_pages", NOW},
    {"slat_vcpus", NOW},
    {"slat_roots_alloc", CUMUL},
    {"slat_roots_freed", CUMUL},
    /* Every exit the guest took into Slat, by core/vm.h's enum exit_reason. */
    {"slat_exits_firmware_call", CUMUL},
    {"slat_exits_hypercall", CUMUL},
    {"slat_exits_slat_fault", CUMUL},
    {"slat_exits_sysreg", CUMUL},
    {"slat_exits_io", CUMUL},
    {"slat_exits_cpuid", CUMUL},
    {"slat_exits_wait", CUMUL},
    {"slat_exits_interrupt", CUMUL},
    {"slat_exits_other", CUMUL},
    {"slat_exits_mmio", CUMUL},
};
#define VM_EXIT_DEFS 10
static_assert(sizeof(struct hc_vm_stats) / 8 - 16 + VM_EXIT_DEFS == ARRAY_SIZE(vm_defs),
	      "one figure per hc_vm_stats word before exits[], then the exit reasons");

static void vm_fill(void *obj, u64 *d)
{
	const struct slat_kvm_vm *kvm = obj;
	struct hc_vm_stats *s = kmalloc(sizeof(*s), GFP_KERNEL);

	/* A VM that cannot be read (no memory, Slat refused) reads as zeros. */
	if (!s || slat_vm_stats(kvm->vm->id, s)) {
		kfree(s);
		return;
	}
	memcpy(d, s, ARRAY_SIZE(vm_defs) * 8);
	kfree(s);
}

/* ---- the file ---- */
struct stats_file {
	struct file *owner; /* the VM or vCPU fd's file: a reference keeps it alive */
	void (*fill)(void *obj, u64 *data);
	void *obj;
	unsigned int n;
	size_t data_offset;
	u8 meta[]; /* header, id, descriptors: data_offset bytes */
};

#define DESC_SIZE (sizeof(struct kvm_stats_desc) + NAME_SIZE)

static void stats_meta(struct stats_file *sf, const struct stat_def *defs, const char *id)
{
	struct kvm_stats_header *h = (struct kvm_stats_header *)sf->meta;
	unsigned int i;

	h->flags = 0;
	h->name_size = NAME_SIZE;
	h->num_desc = sf->n;
	h->id_offset = sizeof(*h);
	h->desc_offset = h->id_offset + NAME_SIZE;
	h->data_offset = sf->data_offset;
	strscpy(sf->meta + h->id_offset, id, NAME_SIZE);
	for (i = 0; i < sf->n; i++) {
		struct kvm_stats_desc *d = (void *)(sf->meta + h->desc_offset + i * DESC_SIZE);

		d->flags = defs[i].flags; /* unit none, base 10 unless given */
		d->exponent = defs[i].exponent;
		d->size = 1;
		d->offset = i * sizeof(u64);
		d->bucket_size = 0;
		strscpy(d->name, defs[i].name, NAME_SIZE);
	}
}

/* The file's bytes [pos, pos + len): the fixed part, then figures read now. */
static ssize_t stats_read(struct file *f, char __user *buf, size_t len, loff_t *ppos)
{
	struct stats_file *sf = f->private_data;
	size_t size = sf->data_offset + sf->n * sizeof(u64), pos = *ppos, done = 0;
	u64 *data;

	if (*ppos < 0 || pos >= size)
		return 0;
	len = min(len, size - pos);
	if (pos < sf->data_offset) {
		done = min(len, sf->data_offset - pos);
		if (copy_to_user(buf, sf->meta + pos, done))
			return -EFAULT;
	}
	if (done < len) {
		data = kcalloc(sf->n, sizeof(u64), GFP_KERNEL);
		if (!data)
			return -ENOMEM;
		sf->fill(sf->obj, data);
		if (copy_to_user(buf + done, (u8 *)data + (pos + done - sf->data_offset),
				 len - done)) {
			kfree(data);
			return -EFAULT;
		}
		kfree(data);
	}
	*ppos = pos + len;
	return len;
}

static int stats_release(struct inode *inode, struct file *f)
{
	struct stats_file *sf = f->private_data;

	fput(sf->owner);
	kfree(sf);
	return 0;
}

static const struct file_operations stats_fops = {
    .owner = THIS_MODULE,
    .read = stats_read,
    .release = stats_release,
    .llseek = noop_llseek,
};

static int stats_fd(struct file *owner, void *obj, void (*fill)(void *, u64 *),
		    const struct stat_def *defs, unsigned int n, const char *id, const char *name)
{
	size_t data_offset = sizeof(struct kvm_stats_header) + NAME_SIZE + n * DESC_SIZE;
	struct stats_file *sf = kzalloc(sizeof(*sf) + data_offset, GFP_KERNEL);
	struct file *file;
	int fd;

	if (!sf)
		return -ENOMEM;
	sf->owner = owner;
	sf->fill = fill;
	sf->obj = obj;
	sf->n = n;
	sf->data_offset = data_offset;
	stats_meta(sf, defs, id);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		kfree(sf);
		return fd;
	}
	file = anon_inode_getfile(name, &stats_fops, sf, O_RDONLY);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		kfree(sf);
		return PTR_ERR(file);
	}
	file->f_mode |= FMODE_PREAD; /* KVM's stats fds are read with pread */
	get_file(owner);
	fd_install(fd, file);
	return fd;
}

int slat_kvm_vm_stats_fd(struct file *vm_file, struct slat_kvm_vm *kvm)
{
	char id[NAME_SIZE];

	snprintf(id, sizeof(id), "kvm-%d", task_pid_nr(current)); /* as KVM names it */
	return stats_fd(vm_file, kvm, vm_fill, vm_defs, ARRAY_SIZE(vm_defs), id, "kvm-vm-stats");
}

int slat_kvm_vcpu_stats_fd(struct file *vcpu_file, struct slat_kvm_vcpu *v)
{
	char id[NAME_SIZE];

	snprintf(id, sizeof(id), "kvm-%d/vcpu-%u", task_pid_nr(current), v->id);
	return stats_fd(vcpu_file, v, vcpu_fill, vcpu_defs, ARRAY_SIZE(vcpu_defs), id,
			"kvm-vcpu-stats");
}
