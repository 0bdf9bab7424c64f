// SPDX-License-Identifier: Apache-2.0
//
// The check helpers of slat-kvm-check (arm64 and x86): one
// "SLAT-GUEST: kvmcheck: ..." line per check, counted for the verdict
// (kvmcheck.c).
#ifndef SLAT_KVMCHECK_H
#define SLAT_KVMCHECK_H

#include <errno.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

extern unsigned failed, checks, left_out;
// Reference mode (--reference): the program runs on Linux's own KVM, and the
// checks of Slat's own choices (its CPUID and MSR set, refusals KVM does not
// make) are left out: `if (on_slat()) check(...)`.
extern bool reference;

static inline bool on_slat(void)
{
	if (reference)
		left_out++;
	return !reference;
}

// One "SLAT-GUEST: kvmcheck: ..." line.
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// An ioctl that must fail with `err` (0: must succeed; returns its result).
long expect(const char *what, long ret, int err);
void check(const char *what, bool ok, unsigned long long got, unsigned long long want);
// KVM_SET_USER_MEMORY_REGION.
int region(int vm, uint32_t slot, uint32_t flags, uint64_t gpa, uint64_t size, void *mem);
// KVM_GET_STATS_FD: one figure by name (false: absent), or several (NULL-ended
// names; an absent one reads as ~0).
bool stat_value(int stats_fd, const char *name, uint64_t *val);
void stat_values(int fd, const char *const *names, uint64_t *vals);
// KVM_CAP_DIRTY_LOG_RING and its _ACQ_REL form 0 (/dev/kvm and the VM), the
// ring's KVM_ENABLE_CAP -EINVAL: no dirty ring, the bitmap only.
void check_no_dirty_ring(int kvm, int vm);
// The exit is an 8-byte MMIO write to gpa (its data in *val either way).
bool mmio_write_exit(const struct kvm_run *run, uint64_t gpa, uint64_t *val);
// The verdict line; the exit status.
int verdict(void);

#endif
