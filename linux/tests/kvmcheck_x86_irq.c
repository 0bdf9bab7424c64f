// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): interrupts without an in-kernel irqchip (ABI 1.4) in
// the first guest: a KVM_INTERRUPT while the guest's IF is 0 is delivered
// once it executes STI, and request_interrupt_window ends KVM_RUN with
// KVM_EXIT_IRQ_WINDOW_OPEN when the window opens; then two KVM_NMIs, the
// second held until the first handler's IRETQ (ABI 1.8).
#include "kvmcheck_x86.h"

#define IRQ_STUBS 0x10800u // vector 0x30 at +0, 0x31 at +0x10, NMI at +0x20

// Where the two interrupts and the NMIs must find the guest (their handlers'
// return RIPs).
static uint32_t ret_30, ret_31, ret_nmi;

static uint32_t code_offset(const uint8_t *code, size_t n, uint8_t b0, uint8_t b1)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (code[i] == b0 && code[i + 1] == b1)
			return (uint32_t)i;
	return 0;
}

size_t put_irq_code(uint8_t *mem, uint8_t *c, uint32_t at)
{
	static const uint8_t code[] = {
	    // interrupts (IF is 0 from the start)
	    0xe7, 0x16, // out 0x16, eax: the VMM queues vector 0x30
	    0xfb,	// sti
	    0x90,	// nop (the STI shadow): 0x30 comes after it
	    0xe7, 0x17, // out 0x17, eax
	    0xfa,	// cli
	    0xe7, 0x18, // out 0x18, eax: the VMM asks for the window
	    0xfb,	// sti
	    0x90,	// nop: the window opens before the HLT
	    0xf4,	// hlt: after 0x31's handler returns
	    // NMIs (Slat's ABI 1.8)
	    0xe7, 0x1a, // out 0x1a, eax: the VMM queues two NMIs
	    0x90,	// nop: both come here, the second after the first's IRETQ
	    0xe7, 0x1b, // out 0x1b, eax
	    0xf4,	// hlt
	};
	// Each stub reports where it interrupted the guest (the return RIP) on
	// its own port (0x15 for vector 0x30, 0x19 for 0x31, 0x1c for the NMI,
	// vector 2) and returns.
	static const uint8_t stub[] = {0x48, 0x8b, 0x04, 0x24, 0xe7, 0x15, 0x48, 0xcf};
	static const struct {
		uint8_t vector, port;
	} stubs[] = {{0x30, 0x15}, {0x31, 0x19}, {2, 0x1c}};
	memcpy(c, code, sizeof(code));
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *s = mem + IRQ_STUBS + 0x10 * i;
		memcpy(s, stub, sizeof(stub));
		s[5] = stubs[i].port;
		idt_gate(mem, stubs[i].vector, IRQ_STUBS + 0x10 * i);
	}
	ret_30 = at + code_offset(code, sizeof(code), 0xe7, 0x17);	// after STI; NOP
	ret_31 = at + code_offset(code, sizeof(code), 0x90, 0xf4) + 1;	// the HLT after it
	ret_nmi = at + code_offset(code, sizeof(code), 0x1a, 0x90) + 1; // the NOP
	return sizeof(code);
}

// The handler of `vector` reports the guest RIP it interrupted on `port`.
static void check_delivered(int vcpu, struct kvm_run *run, uint16_t port, uint32_t rip,
			    const char *what)
{
	uint32_t v = out_exit(vcpu, run, port, what) ? io_out(run, port) : 0;

	check(what, v == rip, v, rip);
}

void check_interrupts(int vcpu, struct kvm_run *run)
{
	struct kvm_interrupt irq = {.irq = 0x30};

	if (!out_exit(vcpu, run, 0x16, "exit 8: OUT 0x16 (IF 0)"))
		return;
	check("IF 0, not ready for injection", !run->if_flag && !run->ready_for_interrupt_injection,
	      run->if_flag, 0);
	struct kvm_interrupt bad = {.irq = 256};
	expect("KVM_INTERRUPT vector 256", ioctl(vcpu, KVM_INTERRUPT, &bad), EINVAL);
	// Slat holds a vector queued while IF is 0 until the guest can take it;
	// KVM injects it at the next entry whatever IF says (a VMM must wait for
	// ready_for_interrupt_injection) and replaces a queued one.
	if (on_slat()) {
		expect("KVM_INTERRUPT 0x30 while IF is 0", ioctl(vcpu, KVM_INTERRUPT, &irq), 0);
		irq.irq = 0x31;
		expect("KVM_INTERRUPT again before delivery", ioctl(vcpu, KVM_INTERRUPT, &irq),
		       EEXIST);
		check_delivered(vcpu, run, 0x15, ret_30,
				"vector 0x30 taken after STI; NOP, not before");
	}
	irq.irq = 0x31;
	if (!out_exit(vcpu, run, 0x17, "exit 10: OUT 0x17 after IRETQ"))
		return;
	check("IF 1, ready for injection", run->if_flag && run->ready_for_interrupt_injection,
	      run->if_flag, 1);
	if (!out_exit(vcpu, run, 0x18, "exit 11: OUT 0x18 (IF 0 again)"))
		return;
	run->request_interrupt_window = 1;
	if (!run_to(vcpu, run, KVM_EXIT_IRQ_WINDOW_OPEN, "exit 12: interrupt window open"))
		return;
	check("window open: IF 1, ready", run->if_flag && run->ready_for_interrupt_injection,
	      run->ready_for_interrupt_injection, 1);
	run->request_interrupt_window = 0;
	expect("KVM_INTERRUPT 0x31 in the window", ioctl(vcpu, KVM_INTERRUPT, &irq), 0);
	check_delivered(vcpu, run, 0x19, ret_31, "vector 0x31 taken at once, at the HLT");
	run_to(vcpu, run, KVM_EXIT_HLT, "exit 14: HLT after the handler");
}

// Two KVM_NMIs: the first is taken at once, the second is held while its
// handler runs (NMIs are blocked until the handler's IRETQ) and taken right
// after that IRETQ, at the same NOP: an NMI delivered inside the handler
// would report the handler's RIP instead.
void check_nmis(int vcpu, struct kvm_run *run)
{
	if (!out_exit(vcpu, run, 0x1a, "exit 15: OUT 0x1a"))
		return;
	expect("KVM_NMI", ioctl(vcpu, KVM_NMI, 0), 0);
	expect("KVM_NMI again (two may wait)", ioctl(vcpu, KVM_NMI, 0), 0);
	check_delivered(vcpu, run, 0x1c, ret_nmi, "NMI 1 taken before the NOP");
	check_delivered(vcpu, run, 0x1c, ret_nmi, "NMI 2 held until NMI 1's IRETQ, then taken");
	if (out_exit(vcpu, run, 0x1b, "exit 18: OUT 0x1b after both handlers"))
		run_to(vcpu, run, KVM_EXIT_HLT, "exit 19: HLT, no third NMI");
}
