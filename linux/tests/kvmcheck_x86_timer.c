// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): the local APIC's TSC-deadline timer in the irqchip
// guest (kvmcheck_x86_irqchip.c): offered through KVM_CAP_TSC_DEADLINE_TIMER,
// armed and read back by the guest, taken at a HLT, fired at once for a
// deadline in the past, and taken by a guest that spins without exits.
#include "kvmcheck_x86.h"

// Where each timer interrupt must find the guest.
static uint32_t rip_deadline, rip_deadline_past, rip_spin;

#define DEADLINE_TICKS 20000000 // TSC ticks from WRMSR to the interrupt

// The TSC-deadline timer: LVT timer in mode 2 (read back on port 0x5d); a
// TMICT write is ignored (TMICT read on 0x5f); a far IA32_TSC_DEADLINE read
// back (its difference from the value written on 0x5c); IA32_TSC_DEADLINE =
// TSC + DEADLINE_TICKS; STI; HLT until it fires; the MSR reads 0 after (0x5e).
size_t put_deadline(uint8_t *c, uint32_t code_at)
{
	// The read-back arms a deadline 2^40 ticks away (minutes of guest time),
	// so that no delay between WRMSR and RDMSR (a preempted vCPU on a busy
	// host) can let it fire first and clear the MSR; then the real one is armed.
	static const uint8_t read_back[] = {
	    0x0f, 0x31,				      // rdtsc
	    0x48, 0xc1, 0xe2, 0x20,		      // shl rdx, 32
	    0x48, 0x09, 0xd0,			      // or rax, rdx
	    0x48, 0xb9, 0,    0,    0, 0, 0, 1, 0, 0, // mov rcx, 1 << 40
	    0x48, 0x01, 0xc8,			      // add rax, rcx
	    0x48, 0x89, 0xc6,			      // mov rsi, rax
	    0x48, 0x89, 0xc2,			      // mov rdx, rax
	    0x48, 0xc1, 0xea, 0x20,		      // shr rdx, 32
	    0xb9, 0xe0, 0x06, 0,    0,		      // mov ecx, 0x6e0
	    0x0f, 0x30,				      // wrmsr
	    0x0f, 0x32,				      // rdmsr
	    0x48, 0xc1, 0xe2, 0x20,		      // shl rdx, 32
	    0x48, 0x09, 0xd0,			      // or rax, rdx
	    0x48, 0x29, 0xf0,			      // sub rax, rsi
	    0xe7, 0x5c,				      // out 0x5c, eax
	};
	static const uint8_t arm[] = {
	    0x0f, 0x31,			  // rdtsc
	    0x48, 0xc1, 0xe2, 0x20,	  // shl rdx, 32
	    0x48, 0x09, 0xd0,		  // or rax, rdx
	    0x48, 0x05, 0,    0,    0, 0, // add rax, DEADLINE_TICKS
	    0x48, 0x89, 0xc2,		  // mov rdx, rax
	    0x48, 0xc1, 0xea, 0x20,	  // shr rdx, 32
	    0xb9, 0xe0, 0x06, 0,    0,	  // mov ecx, 0x6e0
	    0x0f, 0x30,			  // wrmsr
	};
	static const uint8_t read_lvtt[] = {0xb9, 0x20, 0x03, 0xe0, 0xfe, 0x8b, 0x01, 0xe7, 0x5d};
	static const uint8_t read_tmict[] = {0xb9, 0x80, 0x03, 0xe0, 0xfe, 0x8b, 0x01, 0xe7, 0x5f};
	static const uint8_t after[] = {
	    0xfa,		    // cli
	    0xb9, 0xe0, 0x06, 0, 0, // mov ecx, 0x6e0
	    0x0f, 0x32,		    // rdmsr
	    0x09, 0xd0,		    // or eax, edx
	    0xe7, 0x5e,		    // out 0x5e, eax
	};
	static const uint8_t sti_hlt[] = {0xfb, 0xf4};
	size_t n = 0;
	uint32_t ticks = DEADLINE_TICKS;

	// IF clear while the deadline is armed (the MSI's IRET set it): the timer
	// must be taken at the HLT after STI however long the exits below take.
	n += put(c + n, (const uint8_t[]){0xfa}, 1);		 // cli
	n += put_store(c + n, 0xfee00320, 2u << 17 | TIMER_VEC); // LVT timer: TSC-deadline
	n += put(c + n, read_lvtt, sizeof(read_lvtt));
	n += put_store(c + n, 0xfee00380, 1000); // TMICT: ignored in this mode
	n += put(c + n, read_tmict, sizeof(read_tmict));
	n += put(c + n, read_back, sizeof(read_back));
	put(c + n, arm, sizeof(arm));
	memcpy(c + n + 11, &ticks, 4); // the add's immediate
	n += sizeof(arm);
	n += put(c + n, sti_hlt, 2);
	rip_deadline = code_at + n;
	n += put(c + n, after, sizeof(after));
	return n;
}

// The TSC-deadline timer into a guest that spins without an exit (STI, then
// "test esi, esi; jz" until SPIN_VEC's handler sets ESI; the handler reports
// its return RIP on port 0x59). First a deadline in the past, written with IF
// clear: it fires at once and is taken in the loop after the STI (not into a
// HLT: under QEMU an exit inside the STI shadow loses the shadow, and an
// interrupt taken before a HLT would leave the guest halted). Then one in the
// future: only the kick the timer sends the running vCPU can get it in.
size_t put_deadline_spin(uint8_t *c, uint32_t code_at)
{
	static const uint8_t past[] = {
	    0x31, 0xf6,		    // xor esi, esi
	    0x31, 0xd2,		    // xor edx, edx
	    0xb8, 1,	0,    0, 0, // mov eax, 1: long past
	    0xb9, 0xe0, 0x06, 0, 0, // mov ecx, 0x6e0
	    0x0f, 0x30,		    // wrmsr
	    0xfb,		    // sti
	};
	static const uint8_t arm[] = {
	    0x31, 0xf6,			  // xor esi, esi
	    0x0f, 0x31,			  // rdtsc
	    0x48, 0xc1, 0xe2, 0x20,	  // shl rdx, 32
	    0x48, 0x09, 0xd0,		  // or rax, rdx
	    0x48, 0x05, 0,    0,    0, 0, // add rax, DEADLINE_TICKS
	    0x48, 0x89, 0xc2,		  // mov rdx, rax
	    0x48, 0xc1, 0xea, 0x20,	  // shr rdx, 32
	    0xb9, 0xe0, 0x06, 0,    0,	  // mov ecx, 0x6e0
	    0x0f, 0x30,			  // wrmsr
	    0xfb,			  // sti
	};
	static const uint8_t spin[] = {0x85, 0xf6, 0x74, 0xfc, 0xfa}; // test esi, esi; jz; cli
	uint32_t ticks = DEADLINE_TICKS;
	size_t n = 0;

	n += put_store(c + n, 0xfee00320, 2u << 17 | SPIN_VEC); // LVT timer: TSC-deadline
	n += put(c + n, past, sizeof(past));
	rip_deadline_past = code_at + n;
	n += put(c + n, spin, sizeof(spin));
	put(c + n, arm, sizeof(arm));
	memcpy(c + n + 13, &ticks, 4); // the add's immediate
	n += sizeof(arm);
	rip_spin = code_at + n;
	n += put(c + n, spin, sizeof(spin));
	return n;
}

void put_spin_handler(uint8_t *mem)
{
	static const uint8_t h0[] = {
	    0x50,			  // push rax
	    0x48, 0x8b, 0x44, 0x24, 0x08, // mov rax, [rsp + 8]: the return RIP
	    0xe7, 0x59,			  // out 0x59, eax
	    0xbe, 1,	0,    0,    0,	  // mov esi, 1
	};
	static const uint8_t h1[] = {0x58, 0x48, 0xcf}; // pop rax; iretq
	uint64_t at = STUBS2 + 0x20 * (SPIN_VEC - 0x40);
	size_t k = put(mem + at, h0, sizeof(h0));

	k += put_store(mem + at + k, 0xfee000b0, 0); // EOI
	k += put(mem + at + k, h1, sizeof(h1));
	_Static_assert(sizeof(h0) + 11 + sizeof(h1) <= 0x20, "the stub fits its 0x20 bytes");
	idt_gate(mem, SPIN_VEC, at);
}

void run_deadline_part(int vcpu, struct kvm_run *run)
{
	uint32_t v = expect_out(vcpu, run, 0x5d, "TSC-deadline: LVT timer read back");
	check("LVT timer in TSC-deadline mode", v == (2u << 17 | TIMER_VEC), v,
	      2u << 17 | TIMER_VEC);
	v = expect_out(vcpu, run, 0x5f, "TSC-deadline: TMICT read back");
	check("TMICT write ignored in TSC-deadline mode", v == 0, v, 0);
	v = expect_out(vcpu, run, 0x5c, "TSC-deadline: IA32_TSC_DEADLINE read back");
	check("IA32_TSC_DEADLINE reads the armed deadline", v == 0, v, 0);
	v = expect_out(vcpu, run, 0x51, "TSC-deadline: timer handler's OUT 0x51");
	check("TSC-deadline timer taken at the HLT after STI", v == rip_deadline, v, rip_deadline);
	v = expect_out(vcpu, run, 0x5e, "TSC-deadline: IA32_TSC_DEADLINE after it fired");
	check("IA32_TSC_DEADLINE reads 0 once fired", v == 0, v, 0);
	v = expect_out(vcpu, run, 0x59, "TSC-deadline in the past: handler's OUT 0x59");
	check("a deadline in the past fires at once (taken after the STI)",
	      v == rip_deadline_past || v == rip_deadline_past + 2, v, rip_deadline_past);
	v = expect_out(vcpu, run, 0x59, "TSC-deadline into a spinning guest: handler's OUT 0x59");
	check("TSC-deadline timer taken in a loop without exits",
	      v == rip_spin || v == rip_spin + 2, v, rip_spin);
}

// The TSC-deadline timer is the VMM's to offer when KVM_CAP_TSC_DEADLINE_TIMER
// says so (KVM 6.1 leaves it out of KVM_GET_SUPPORTED_CPUID); the guest's TSC
// frequency is KVM_GET_TSC_KHZ's.
void set_deadline_cpuid(int kvm, int vcpu, struct kvm_cpuid2 *sup)
{
	struct kvm_cpuid_entry2 *l1 = leaf(sup, 1, 0);
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER);

	check("KVM_CAP_TSC_DEADLINE_TIMER", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_GET_TSC_KHZ);
	check("KVM_CAP_GET_TSC_KHZ", n == 1, n, 1);
	n = ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
	check("KVM_GET_TSC_KHZ: a frequency", n > 1000, n, 1000);
	if (!l1)
		return;
	l1->ecx |= 1u << 24;
	expect("irqchip vCPU: KVM_SET_CPUID2 with the TSC-deadline timer",
	       ioctl(vcpu, KVM_SET_CPUID2, sup), 0);
	l1->ecx &= ~(1u << 24);
}
