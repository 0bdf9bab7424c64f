// SPDX-License-Identifier: Apache-2.0
// arm64 entry state of the payload (linux/guest/arm64.S): EL1h with D, A, I,
// F masked, MMU and caches off, pc 0, x0 = vCPU index; ucall = 32-bit store
// to GJ_UCALL (an MMIO exit).
#include "slatlib.h"

#include <errno.h>
#include <sys/ioctl.h>

#define PSTATE_EL1H_MASKED 0x3c5
#define SCTLR_EL1_RES1	   0x30d00800 /* MMU, caches and alignment checks off */

int sl_arch_setup(struct sl_vcpu *vc)
{
	struct hc_regs_arm64 r;

	if (ioctl(vc->fd, SLAT_GET_REGS, &r) < 0)
		return -errno;
	for (int i = 0; i < 31; i++)
		r.x[i] = 0;
	r.x[0] = vc->idx;
	r.pc = GJ_CODE;
	r.pstate = PSTATE_EL1H_MASKED;
	r.sctlr_el1 = SCTLR_EL1_RES1;
	if (ioctl(vc->fd, SLAT_SET_REGS, &r) < 0)
		return -errno;
	return 0;
}

bool sl_arch_ucall(const struct hc_run *run, uint32_t *val)
{
	if (run->reason != HC_EXIT_MMIO || run->u.mmio.gpa != GJ_UCALL || !run->u.mmio.is_write)
		return false;
	*val = (uint32_t)run->u.mmio.data;
	return true;
}
