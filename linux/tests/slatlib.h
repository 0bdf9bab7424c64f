/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test programs' helpers over /dev/slat (linux/slat/slat_uapi.h) and the
 * payload's job protocol (linux/guest/job.h). Every line a program prints
 * for the boot tests starts with "SLAT-GUEST: ".
 */
#ifndef SLATLIB_H
#define SLATLIB_H

#include <stdint.h>
#include <stdbool.h>

#include "core/hcall_abi.h"
#include "slat_uapi.h"
#include "job.h"

#define SL_DEV	 "/dev/slat"
#define SL_GUEST "/slat/guest.bin"

struct sl_vcpu {
	int fd;
	unsigned idx;
	struct hc_run *run;
	volatile uint32_t *mb; /* this vCPU's mailbox in the control slot */
	uint32_t seq;
};

struct sl_job {
	uint32_t op, gpa, pbase, len, stride, seed, tag;
};

struct sl_result {
	uint32_t errors, first, words;
	unsigned mmio_exits; /* MMIO exits other than the ucall */
	uint64_t mmio_gpa;   /* the first of them */
	bool ok;	     /* the job ran to its ucall */
	char why[128];	     /* !ok: why */
};

void sl_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

int sl_open(void);	   /* /dev/slat, or exit 2 after saying why */
int sl_vm_create(int sys); /* VM fd, or -errno */
int sl_vm_create_flags(int sys, uint32_t flags); /* HC_VM_FLAG_ZAP_ALL: benchmarks */
int sl_slot(int vm, uint32_t slot, uint64_t gpa, uint64_t size, void *mem); /* 0 / -errno */
void *sl_alloc(uint64_t size);	/* zeroed anonymous memory, or exit */
uint8_t *sl_ctrl_setup(int vm); /* control slot 0 at gpa 0 with the payload */
int sl_vcpu_create(int vm, unsigned idx, uint8_t *ctrl, struct sl_vcpu *vc); /* 0 / -errno */
void sl_vcpu_close(struct sl_vcpu *vc);
int sl_run_job(struct sl_vcpu *vc, const struct sl_job *j, struct sl_result *res);
int sl_hv_stats(int sys, struct hc_hv_stats *s);
int sl_vm_stats(int vm, struct hc_vm_stats *s);
int sl_mod_stats(int sys, struct slat_module_stats *s);
uint32_t sl_pattern(uint32_t pbase, uint32_t off, uint32_t seed, uint32_t tag);

/* Per architecture (slatlib_x86.c / slatlib_arm64.c). */
int sl_arch_setup(struct sl_vcpu *vc); /* entry state through GET/SET_REGS */
bool sl_arch_ucall(const struct hc_run *run, uint32_t *val);

#endif
