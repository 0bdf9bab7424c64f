// SPDX-License-Identifier: GPL-2.0
/*
 * x86: Slat answers CPUID 0x40000000 with "SlatSlatSlat"; hypercalls are
 * VMMCALL on AMD (and Hygon), VMCALL on Intel. RAX = function, RBX, RCX, RDX,
 * RSI, RDI, R8 = a0..a5; RAX = status, RBX, RCX, RDX = r0..r2.
 */
#include <linux/kernel.h>
#include <linux/printk.h>
#include <asm/processor.h>
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>

#include "slat.h"

const size_t slat_arch_regs_size = sizeof(struct hc_regs_x86);

static bool slat_amd;

int slat_arch_detect(void)
{
	unsigned int eax, sig[3];
	char name[13];

	if (!boot_cpu_has(X86_FEATURE_HYPERVISOR)) {
		pr_err("slat: no hypervisor (CPUID.1:ECX[31] clear): not loading\n");
		return -ENODEV;
	}
	cpuid(0x40000000, &eax, &sig[0], &sig[1], &sig[2]);
	memcpy(name, sig, 12);
	name[12] = 0;
	if (memcmp(name, "SlatSlatSlat", 12)) {
		pr_err("slat: hypervisor '%s' is not Slat: not loading\n", name);
		return -ENODEV;
	}
	slat_amd = boot_cpu_data.x86_vendor == X86_VENDOR_AMD ||
		   boot_cpu_data.x86_vendor == X86_VENDOR_HYGON;
	return 0;
}

long slat_arch_hcall(u64 fn, const u64 a[6], u64 r[3])
{
	register u64 r8 asm("r8") = a[5];
	u64 rax = fn, rbx = a[0], rcx = a[1], rdx = a[2], rsi = a[3], rdi = a[4];

	if (slat_amd)
		asm volatile("vmmcall"
			     : "+a"(rax), "+b"(rbx), "+c"(rcx), "+d"(rdx), "+S"(rsi), "+D"(rdi),
			       "+r"(r8)
			     :
			     : "memory");
	else
		asm volatile("vmcall"
			     : "+a"(rax), "+b"(rbx), "+c"(rcx), "+d"(rdx), "+S"(rsi), "+D"(rdi),
			       "+r"(r8)
			     :
			     : "memory");
	r[0] = rbx;
	r[1] = rcx;
	r[2] = rdx;
	return (long)rax;
}

void slat_arch_fpu_begin(void)
{
	kernel_fpu_begin();
}

void slat_arch_fpu_end(void)
{
	kernel_fpu_end();
}
