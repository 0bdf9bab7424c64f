// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): the guest's MSRs Slat does not keep, answered by the
// module (ABI 1.13's MSR exits), in the first guest after its events part:
// MSR_PLATFORM_INFO as the VMM set it (KVM_CAP_MSR_PLATFORM_INFO on, KVM's
// default), the guest's write of it, an MSR nobody emulates and, once the
// capability is turned off, the read: each a #GP(0) at the instruction,
// which the guest's handler reports and steps over. KVM answers the same.
#include "kvmcheck_x86.h"

#define MSR_CODE	  0x13000u // the guest's code for this part
#define MSR_STUB	  0x13800u // its #GP handler: reports, skips the 2-byte RDMSR / WRMSR
#define MSR_PLATFORM_INFO 0xce
#define MSR_NOBODY	  0x474f4f00u	// "GOO": no MSR (userspace_msr_exit_test's)
#define PI_RESET	  0x80000000ull // KVM's initial value: CPUID faulting offered
#define PI_VALUE	  0x0000000c8000ff00ull
#define AT_WRMSR	  (MSR_CODE + 16) // the code's faulting instructions
#define AT_NOBODY	  (MSR_CODE + 23)
#define AT_OFF		  (MSR_CODE + 32)

void put_msr_code(uint8_t *mem)
{
	static const uint8_t code[] = {
	    0xb9, 0xce, 0x00, 0x00, 0x00, // mov ecx, MSR_PLATFORM_INFO
	    0x0f, 0x32,			  // rdmsr
	    0xe7, 0x24,			  // out 0x24, eax
	    0x89, 0xd0,			  // mov eax, edx
	    0xe7, 0x25,			  // out 0x25, eax
	    0x31, 0xc0,			  // xor eax, eax
	    0x90,			  // nop
	    0x0f, 0x30,			  // AT_WRMSR: wrmsr (the guest may not)
	    0xb9, 0x00, 0x4f, 0x4f, 0x47, // mov ecx, MSR_NOBODY
	    0x0f, 0x32,			  // AT_NOBODY: rdmsr
	    0xe7, 0x26,			  // out 0x26, eax
	    0xb9, 0xce, 0x00, 0x00, 0x00, // mov ecx, MSR_PLATFORM_INFO
	    0x0f, 0x32,			  // AT_OFF: rdmsr (the capability now off)
	    0xe7, 0x27,			  // out 0x27, eax
	    0xf4,			  // hlt
	};
	static const uint8_t gp[] = {
	    0x48, 0x8b, 0x04, 0x24,	  // mov rax, [rsp]
	    0xe7, 0x1d,			  // out 0x1d, eax: the error code
	    0x48, 0x8b, 0x44, 0x24, 0x08, // mov rax, [rsp + 8]
	    0xe7, 0x1e,			  // out 0x1e, eax: the RIP it interrupted
	    0x48, 0x83, 0xc4, 0x08,	  // add rsp, 8
	    0x48, 0x83, 0x04, 0x24, 0x02, // add qword [rsp], 2: past the RDMSR / WRMSR
	    0x48, 0xcf,			  // iretq
	};
	memcpy(mem + MSR_CODE, code, sizeof(code));
	memcpy(mem + MSR_STUB, gp, sizeof(gp));
}

static long platform_info(int vcpu, bool set, uint64_t *data)
{
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} b = {.m.nmsrs = 1, .e = {{.index = MSR_PLATFORM_INFO, .data = set ? *data : 0}}};
	long n = ioctl(vcpu, set ? KVM_SET_MSRS : KVM_GET_MSRS, &b);

	if (!set)
		*data = b.e[0].data;
	return n;
}

// The guest's #GP handler reports error code 0 at `at`.
static bool expect_gp(int vcpu, struct kvm_run *run, uint32_t at, const char *what)
{
	char line[160];

	snprintf(line, sizeof(line), "%s: #GP", what);
	uint32_t v = expect_out(vcpu, run, 0x1d, line);
	snprintf(line, sizeof(line), "%s: #GP error code 0", what);
	check(line, v == 0, v, 0);
	v = expect_out(vcpu, run, 0x1e, "OUT 0x1e");
	snprintf(line, sizeof(line), "%s: #GP at the instruction", what);
	check(line, v == at, v, at);
	return v == at;
}

static long platform_info_cap(int vm, bool on)
{
	struct kvm_enable_cap cap = {.cap = KVM_CAP_MSR_PLATFORM_INFO, .args = {on}};

	return ioctl(vm, KVM_ENABLE_CAP, &cap);
}

void check_msr_exits(int kvm, int vm, int vcpu, struct kvm_run *run, uint8_t *mem)
{
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_MSR_PLATFORM_INFO);
	struct kvm_regs r = {.rip = MSR_CODE, .rsp = STACK_TOP, .rflags = 2};
	uint64_t pi = 0;

	check("KVM_CAP_MSR_PLATFORM_INFO", n == 1, n, 1);
	if (n != 1)
		return;
	n = platform_info(vcpu, false, &pi);
	check("KVM_GET_MSRS MSR_PLATFORM_INFO: KVM's initial value", n == 1 && pi == PI_RESET, pi,
	      PI_RESET);
	pi = PI_VALUE;
	expect("KVM_SET_MSRS MSR_PLATFORM_INFO", platform_info(vcpu, true, &pi) - 1, 0);
	idt_gate(mem, 13, MSR_STUB);
	expect("KVM_SET_REGS at the MSR part", ioctl(vcpu, KVM_SET_REGS, &r), 0);
	uint32_t v = expect_out(vcpu, run, 0x24, "the guest's RDMSR MSR_PLATFORM_INFO");
	check("the guest reads MSR_PLATFORM_INFO as set (low)", v == (uint32_t)PI_VALUE, v,
	      (uint32_t)PI_VALUE);
	v = expect_out(vcpu, run, 0x25, "OUT 0x25");
	check("the guest reads MSR_PLATFORM_INFO as set (high)", v == PI_VALUE >> 32, v,
	      PI_VALUE >> 32);
	if (!expect_gp(vcpu, run, AT_WRMSR, "the guest's WRMSR MSR_PLATFORM_INFO") ||
	    !expect_gp(vcpu, run, AT_NOBODY, "the guest's RDMSR of an MSR nobody emulates") ||
	    !out_exit(vcpu, run, 0x26, "OUT 0x26 after the handler"))
		return;
	expect("KVM_ENABLE_CAP MSR_PLATFORM_INFO off", platform_info_cap(vm, false), 0);
	if (!expect_gp(vcpu, run, AT_OFF, "RDMSR MSR_PLATFORM_INFO with the capability off") ||
	    !out_exit(vcpu, run, 0x27, "OUT 0x27 after the handler"))
		return;
	run_to(vcpu, run, KVM_EXIT_HLT, "HLT at the end of the MSR part");
	n = platform_info(vcpu, false, &pi);
	check("KVM_GET_MSRS MSR_PLATFORM_INFO with the capability off", n == 1 && pi == PI_VALUE,
	      pi, PI_VALUE);
	expect("KVM_ENABLE_CAP MSR_PLATFORM_INFO on", platform_info_cap(vm, true), 0);
}
