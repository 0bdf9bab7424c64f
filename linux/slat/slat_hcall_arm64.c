// SPDX-License-Identifier: GPL-2.0
/*
 * arm64: Slat answers the SMCCC vendor-hypervisor UID query (through the
 * kernel's SMCCC conduit) with HC_UID_W0..W3; hypercalls are HVC #0 with
 * x0 = function, x1..x6 = a0..a5; x0 = status, x1..x3 = r0..r2.
 */
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/arm-smccc.h>
#include <asm/neon.h>

#include "slat.h"

const size_t slat_arch_regs_size = sizeof(struct hc_regs_arm64);

int slat_arch_detect(void)
{
	struct arm_smccc_res res = {0};

	if (arm_smccc_1_1_get_conduit() == SMCCC_CONDUIT_NONE) {
		pr_err("slat: no SMCCC 1.1 conduit (no hypervisor answers): not loading\n");
		return -ENODEV;
	}
	arm_smccc_1_1_invoke(HC_SMCCC_UID_FN, &res);
	if ((u32)res.a0 != HC_UID_W0 || (u32)res.a1 != HC_UID_W1 || (u32)res.a2 != HC_UID_W2 ||
	    (u32)res.a3 != HC_UID_W3) {
		pr_err(
		    "slat: vendor hypervisor UID %08x-%08x-%08x-%08x is not Slat's: not loading\n",
		    (u32)res.a0, (u32)res.a1, (u32)res.a2, (u32)res.a3);
		return -ENODEV;
	}
	return 0;
}

long slat_arch_hcall(u64 fn, const u64 a[6], u64 r[3])
{
	register u64 x0 asm("x0") = fn;
	register u64 x1 asm("x1") = a[0];
	register u64 x2 asm("x2") = a[1];
	register u64 x3 asm("x3") = a[2];
	register u64 x4 asm("x4") = a[3];
	register u64 x5 asm("x5") = a[4];
	register u64 x6 asm("x6") = a[5];

	asm volatile("hvc #0"
		     : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5), "+r"(x6)
		     :
		     : "memory");
	r[0] = x1;
	r[1] = x2;
	r[2] = x3;
	return (long)x0;
}

void slat_arch_fpu_begin(void)
{
	kernel_neon_begin();
}

void slat_arch_fpu_end(void)
{
	kernel_neon_end();
}
