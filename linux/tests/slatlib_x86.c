// SPDX-License-Identifier: Apache-2.0
// x86 entry state of the payload (linux/guest/x86.S): 32-bit protected mode,
// flat 4 GiB segments, no paging, EIP 0, ESI = vCPU index; ucall = OUT.
#include "slatlib.h"

#include <errno.h>
#include <sys/ioctl.h>

#define SEG_CODE 0xc9b /* type 11 (code, read, accessed), S, P, D/B, G */
#define SEG_DATA 0xc93 /* type 3 (data, write, accessed), S, P, D/B, G */

int sl_arch_setup(struct sl_vcpu *vc)
{
	struct hc_regs_x86 r;
	const struct hc_x86_seg code = {0, 0xffffffff, 0x08, SEG_CODE};
	const struct hc_x86_seg data = {0, 0xffffffff, 0x10, SEG_DATA};

	if (ioctl(vc->fd, SLAT_GET_REGS, &r) < 0)
		return -errno;
	for (int i = 0; i < 16; i++)
		r.gpr[i] = 0;
	r.gpr[6] = vc->idx; /* RSI */
	r.rip = GJ_CODE;
	r.rflags = 0x2;
	r.cr0 = 0x11; /* PE, ET */
	r.cr3 = r.cr4 = r.efer = 0;
	r.cs = code;
	r.ds = r.es = r.fs = r.gs = r.ss = data;
	r.tr = (struct hc_x86_seg){0, 0x67, 0x18, 0x8b};  /* busy 32-bit TSS, P */
	r.ldtr = (struct hc_x86_seg){0, 0xffff, 0, 0x82}; /* LDT, P */
	r.gdt_base = r.idt_base = 0;
	r.gdt_limit = r.idt_limit = 0xffff;
	if (ioctl(vc->fd, SLAT_SET_REGS, &r) < 0)
		return -errno;
	return 0;
}

bool sl_arch_ucall(const struct hc_run *run, uint32_t *val)
{
	if (run->reason != HC_EXIT_IO || run->u.io.port != GJ_PORT || !run->u.io.is_out)
		return false;
	*val = (uint32_t)run->u.io.data;
	return true;
}
