// SPDX-License-Identifier: Apache-2.0
// Helpers of the /dev/slat test programs (slatlib.h).
#include "slatlib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define SL_MAX_RUNS 100000 /* RUN calls one job may take */

void sl_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("SLAT-GUEST: %s\n", buf);
	fflush(stdout);
}

void sl_die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("SLAT-GUEST: %s\n", buf);
	fflush(stdout);
	exit(2);
}

int sl_open(void)
{
	int fd = open(SL_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		sl_die("cannot open %s: %s", SL_DEV, strerror(errno));
	return fd;
}

static int sl_ioctl(int fd, unsigned long cmd, unsigned long arg)
{
	int rc = ioctl(fd, cmd, arg);

	return rc < 0 ? -errno : rc;
}

int sl_vm_create(int sys)
{
	return sl_ioctl(sys, SLAT_CREATE_VM, 0);
}

int sl_vm_create_flags(int sys, uint32_t flags)
{
	return sl_ioctl(sys, SLAT_CREATE_VM, flags);
}

int sl_slot(int vm, uint32_t slot, uint64_t gpa, uint64_t size, void *mem)
{
	struct slat_slot s = {.slot = slot,
			      .guest_phys_addr = gpa,
			      .memory_size = size,
			      .userspace_addr = (uint64_t)(uintptr_t)mem};

	return sl_ioctl(vm, SLAT_SET_SLOT, (unsigned long)&s);
}

void *sl_alloc(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		sl_die("mmap of %llu bytes: %s", (unsigned long long)size, strerror(errno));
	return p;
}

uint8_t *sl_ctrl_setup(int vm)
{
	uint8_t *ctrl = sl_alloc(GJ_CTRL_SIZE);
	FILE *f = fopen(SL_GUEST, "rb");
	size_t n;
	int rc;

	if (!f)
		sl_die("cannot open %s: %s", SL_GUEST, strerror(errno));
	n = fread(ctrl + GJ_CODE, 1, GJ_MAILBOX - GJ_CODE, f);
	fclose(f);
	if (n == 0)
		sl_die("%s is empty", SL_GUEST);
	rc = sl_slot(vm, 0, 0, GJ_CTRL_SIZE, ctrl);
	if (rc)
		sl_die("control slot: SET_SLOT %s", strerror(-rc));
	return ctrl;
}

int sl_vcpu_create(int vm, unsigned idx, uint8_t *ctrl, struct sl_vcpu *vc)
{
	int fd = sl_ioctl(vm, SLAT_CREATE_VCPU, idx), rc;
	void *run;

	if (fd < 0)
		return fd;
	run = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (run == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*vc = (struct sl_vcpu){.fd = fd, .idx = idx, .run = run};
	vc->mb = (volatile uint32_t *)(ctrl + GJ_MAILBOX + idx * 64);
	vc->seq = vc->mb[GJ_SEQ / 4];
	rc = sl_arch_setup(vc);
	if (rc)
		sl_vcpu_close(vc);
	return rc;
}

void sl_vcpu_close(struct sl_vcpu *vc)
{
	if (vc->fd < 0)
		return;
	munmap(vc->run, 4096);
	close(vc->fd);
	vc->fd = -1;
}

uint32_t sl_pattern(uint32_t pbase, uint32_t off, uint32_t seed, uint32_t tag)
{
	return (pbase + off) ^ seed ^ (tag << 24);
}

static void sl_post(struct sl_vcpu *vc, const struct sl_job *j)
{
	volatile uint32_t *mb = vc->mb;

	mb[GJ_OPF / 4] = j->op;
	mb[GJ_GPA / 4] = j->gpa;
	mb[GJ_PBASE / 4] = j->pbase;
	mb[GJ_LEN / 4] = j->len;
	mb[GJ_STRIDE / 4] = j->stride;
	mb[GJ_SEED / 4] = j->seed;
	mb[GJ_TAG / 4] = j->tag;
	__sync_synchronize();
	vc->seq++;
	if (vc->seq == GJ_IDLE)
		vc->seq = 1;
	mb[GJ_SEQ / 4] = vc->seq;
	__sync_synchronize();
}

/* One exit; 1: the job's ucall came, 0: run again, -1: failed (res->why). */
static int sl_exit(struct sl_vcpu *vc, struct sl_result *res)
{
	struct hc_run *run = vc->run;
	uint32_t val;

	if (sl_arch_ucall(run, &val)) {
		if (val == vc->seq)
			return 1;
		snprintf(res->why, sizeof(res->why), "ucall %#x, expected seq %#x%s", val, vc->seq,
			 val == GJ_IDLE ? " (the vCPU saw no job)" : "");
		return -1;
	}
	if (run->reason == HC_EXIT_MMIO) {
		if (!res->mmio_exits++)
			res->mmio_gpa = run->u.mmio.gpa;
		if (!run->u.mmio.is_write)
			run->u.mmio.data = 0;
		return 0;
	}
	snprintf(res->why, sizeof(res->why), "exit reason %u (hw %#llx, info %#llx %#llx)",
		 run->reason, (unsigned long long)run->u.fail.hw_reason,
		 (unsigned long long)run->u.fail.info[0], (unsigned long long)run->u.fail.info[1]);
	return -1;
}

int sl_run_job(struct sl_vcpu *vc, const struct sl_job *j, struct sl_result *res)
{
	int runs, rc;

	memset(res, 0, sizeof(*res));
	sl_post(vc, j);
	for (runs = 0; runs < SL_MAX_RUNS; runs++) {
		if (ioctl(vc->fd, SLAT_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(res->why, sizeof(res->why), "RUN: %s", strerror(errno));
			return -1;
		}
		rc = sl_exit(vc, res);
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;
		__sync_synchronize();
		res->errors = vc->mb[GJ_ERRORS / 4];
		res->first = vc->mb[GJ_FIRST / 4];
		res->words = vc->mb[GJ_WORDS / 4];
		res->ok = true;
		return 0;
	}
	snprintf(res->why, sizeof(res->why), "no ucall after %d RUN calls", SL_MAX_RUNS);
	return -1;
}

int sl_hv_stats(int sys, struct hc_hv_stats *s)
{
	return sl_ioctl(sys, SLAT_HV_STATS, (unsigned long)s);
}

int sl_vm_stats(int vm, struct hc_vm_stats *s)
{
	return sl_ioctl(vm, SLAT_VM_STATS, (unsigned long)s);
}

int sl_mod_stats(int sys, struct slat_module_stats *s)
{
	return sl_ioctl(sys, SLAT_MODULE_STATS, (unsigned long)s);
}
