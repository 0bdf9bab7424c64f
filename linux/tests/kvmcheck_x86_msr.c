// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): the guest's MSRs Slat does not keep, answered by the
// module (ABI 1.13's MSR exits), in the first guest after its events part:
// MSR_PLATFORM_INFO as the VMM set it (KVM_CAP_MSR_PLATFORM_INFO on, KVM's
// default), the guest's write of it, an MSR nobody emulates and, once the
// capability is turned off, the read: each a #GP(0) at the instruction,
// which the guest's handler reports and steps over. KVM answers the same.
// Then the guest's TSC (ABI 1.15's offset): the VMM sets IA32_TSC, the
// guest's RDTSC and RDMSR read from it, and its WRMSR of IA32_TSC moves the
// offset and IA32_TSC_ADJUST with it (KVM's kvm_set_msr_common).
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
#define TSC_CODE	  0x13400u // the TSC part's code
#define MSR_TSC		  0x10u
#define MSR_TSC_ADJUST	  0x3bu
#define TSC_SET		  (0x50ull << 32) // the VMM's IA32_TSC
#define TSC_GUEST	  (0x90ull << 32) // the guest's WRMSR IA32_TSC
#define TSC_SLACK	  (1ull << 36)	  // ticks that may pass between two reads (20 s at 3 GHz)

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
	static const uint8_t tsc[] = {
	    0x0f, 0x31,			  // rdtsc
	    0x89, 0xd0,			  // mov eax, edx
	    0xe7, 0x28,			  // out 0x28, eax: its high half
	    0xb9, 0x10, 0x00, 0x00, 0x00, // mov ecx, IA32_TSC
	    0x0f, 0x32,			  // rdmsr
	    0x89, 0xd0,			  // mov eax, edx
	    0xe7, 0x29,			  // out 0x29, eax: its high half
	    0x31, 0xc0,			  // xor eax, eax
	    0xba, 0x90, 0x00, 0x00, 0x00, // mov edx, TSC_GUEST >> 32
	    0x0f, 0x30,			  // wrmsr
	    0xf4,			  // hlt
	};
	memcpy(mem + MSR_CODE, code, sizeof(code));
	memcpy(mem + MSR_STUB, gp, sizeof(gp));
	memcpy(mem + TSC_CODE, tsc, sizeof(tsc));
}

// KVM_GET/SET_MSRS of one MSR: the number done (1), or -1.
static long one_msr(int vcpu, uint32_t index, bool set, uint64_t *data)
{
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} b = {.m.nmsrs = 1, .e = {{.index = index, .data = set ? *data : 0}}};
	long n = ioctl(vcpu, set ? KVM_SET_MSRS : KVM_GET_MSRS, &b);

	if (!set)
		*data = b.e[0].data;
	return n;
}

static long platform_info(int vcpu, bool set, uint64_t *data)
{
	return one_msr(vcpu, MSR_PLATFORM_INFO, set, data);
}

// `v` is at or after `from` by less than TSC_SLACK.
static bool tsc_near(uint64_t v, uint64_t from)
{
	return v - from < TSC_SLACK;
}

// The guest's TSC as the VMM sets it and as the guest writes it.
static void check_tsc(int vcpu, struct kvm_run *run)
{
	struct kvm_regs r = {.rip = TSC_CODE, .rsp = STACK_TOP, .rflags = 2};
	uint64_t t = TSC_SET, adj = 0;

	expect("KVM_SET_MSRS IA32_TSC", one_msr(vcpu, MSR_TSC, true, &t) - 1, 0);
	t = 0;
	one_msr(vcpu, MSR_TSC, false, &t);
	check("KVM_GET_MSRS IA32_TSC: the value set", tsc_near(t, TSC_SET), t, TSC_SET);
	expect("KVM_SET_REGS at the TSC part", ioctl(vcpu, KVM_SET_REGS, &r), 0);
	uint32_t hi = expect_out(vcpu, run, 0x28, "the guest's RDTSC");
	check("the guest's RDTSC counts from the VMM's IA32_TSC",
	      tsc_near((uint64_t)hi << 32, TSC_SET & ~0xffffffffull), hi, TSC_SET >> 32);
	hi = expect_out(vcpu, run, 0x29, "the guest's RDMSR IA32_TSC");
	check("the guest's RDMSR IA32_TSC counts from it too",
	      tsc_near((uint64_t)hi << 32, TSC_SET & ~0xffffffffull), hi, TSC_SET >> 32);
	if (!run_to(vcpu, run, KVM_EXIT_HLT, "HLT after the guest's WRMSR IA32_TSC"))
		return;
	one_msr(vcpu, MSR_TSC, false, &t);
	check("IA32_TSC after the guest's WRMSR: the guest's value", tsc_near(t, TSC_GUEST), t,
	      TSC_GUEST);
	one_msr(vcpu, MSR_TSC_ADJUST, false, &adj);
	check("IA32_TSC_ADJUST moved by the guest's change",
	      tsc_near(TSC_GUEST - TSC_SET, adj) && adj <= TSC_GUEST - TSC_SET, adj,
	      TSC_GUEST - TSC_SET);
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
	check_tsc(vcpu, run);
}
