// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check on x86 (built as slat-kvm-check for x86_64): the KVM API on
// /dev/kvm as slat.ko answers it with Slat's ABI 1.3. The system ioctls
// (KVM_GET_SUPPORTED_CPUID and KVM_GET_MSR_INDEX_LIST with their -E2BIG
// protocol), the refusals (no in-kernel irqchip: KVM_CREATE_IRQCHIP; a CPUID
// table claiming XSAVE; SREGS with a TPR, a bad EFER, reserved RFLAGS bits;
// an MSR Slat does not keep), then a 64-bit guest entered straight from
// KVM_SET_SREGS that reads CPUID from the VMM's table, an MSR the VMM set,
// writes one the VMM then reads, takes an IN answer to an MMIO write and
// halts; then interrupts without an in-kernel irqchip (ABI 1.4): a
// KVM_INTERRUPT while the guest's IF is 0 is delivered once it executes STI,
// and request_interrupt_window ends KVM_RUN with KVM_EXIT_IRQ_WINDOW_OPEN when
// the window opens; two KVM_NMIs, the second held until the first handler's
// IRETQ (ABI 1.8); then the in-kernel irqchip: the LAPIC's state, its timer,
// a self IPI, an I/O APIC pin (and its state through KVM_GET/SET_IRQCHIP), an
// MSI (KVM_SIGNAL_MSI), and INIT + STARTUP starting a second vCPU that waited
// in KVM_RUN. Prints one "SLAT-GUEST: kvmcheck: ..." line per check and a
// verdict.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvmcheck.h"

#define MEM_SZ	  (2ul << 20) // slot 0: guest-physical 0..2 MiB
#define PML4	  0x1000u
#define PDPT	  0x2000u
#define PD0	  0x3000u
#define PD1	  0x4000u
#define GDT	  0x5000u
#define IDT	  0x6000u
#define IRQ_STUBS 0x10800u // vector 0x30 at +0, 0x31 at +0x10
#define CODE	  0x10000u
#define STACK_TOP 0x9000u
#define MMIO_GPA  0x40000000ull // no region: an MMIO exit
#define LSTAR	  0xc0000082u
#define STAR	  0xc0000081u
#define LSTAR_VAL 0xffff800012345000ull
#define STAR_VAL  0x0023001011112222ull
#define IN_VAL	  0xabcd1234u
#define MARK_VAL  0x5a5a1234u // the VMM's value of CPUID 0x40000000 ECX

static struct kvm_cpuid2 *cpuid_alloc(unsigned n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

	c->nent = n;
	return c;
}

static struct kvm_cpuid_entry2 *leaf(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	return NULL;
}

static struct kvm_cpuid2 *check_system(int kvm)
{
	long n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP);
	check("KVM_CAP_IRQCHIP", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_SIGNAL_MSI);
	check("KVM_CAP_SIGNAL_MSI", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_USER_NMI);
	check("KVM_CAP_USER_NMI", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_EXT_CPUID);
	check("KVM_CAP_EXT_CPUID", n == 1, n, 1);
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
	check("KVM_CAP_NR_MEMSLOTS", n == 32764, n, 32764);

	struct kvm_cpuid2 *c = cpuid_alloc(1);
	expect("KVM_GET_SUPPORTED_CPUID, 1 entry", ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c), E2BIG);
	free(c);
	c = cpuid_alloc(256);
	expect("KVM_GET_SUPPORTED_CPUID, 256 entries", ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c), 0);
	check("supported leaves: some, at most 128", c->nent > 8 && c->nent <= 128, c->nent, 128);
	struct kvm_cpuid_entry2 *hv = leaf(c, 0x40000000, 0), *l1 = leaf(c, 1, 0);
	// The hypervisor leaf says whose /dev/kvm this is ('KVMK' in reference mode).
	uint32_t sig = reference ? 0x4b4d564b : 0x74616c53;
	check(reference ? "supported 0x40000000 EBX 'KVMK'" : "supported 0x40000000 EBX 'Slat'",
	      hv && hv->ebx == sig, hv ? hv->ebx : 0, sig);
	if (on_slat()) {
		check("supported leaf 1: hypervisor bit, no XSAVE",
		      l1 && (l1->ecx >> 31 & 1) && !(l1->ecx >> 26 & 1), l1 ? l1->ecx : 0,
		      1u << 31);
		// Features whose MSRs Slat does not keep per vCPU: MTRR, RDTSCP (TSC_AUX).
		struct kvm_cpuid_entry2 *e1 = leaf(c, 0x80000001, 0);
		check("supported: no MTRR (leaf 1 EDX 12)", l1 && !(l1->edx >> 12 & 1),
		      l1 ? l1->edx : 0, 0);
		check("supported: no RDTSCP (leaf 0x80000001 EDX 27)", e1 && !(e1->edx >> 27 & 1),
		      e1 ? e1->edx : 0, 0);
	}

	struct {
		struct kvm_msr_list l;
		uint32_t idx[256];
	} ml = {.l.nmsrs = 1};
	expect("KVM_GET_MSR_INDEX_LIST, room for 1", ioctl(kvm, KVM_GET_MSR_INDEX_LIST, &ml),
	       E2BIG);
	if (on_slat()) // Slat's set of saved MSRs (KVM's is larger)
		check("KVM_GET_MSR_INDEX_LIST count", ml.l.nmsrs == 9, ml.l.nmsrs, 9);
	ml.l.nmsrs = 256;
	expect("KVM_GET_MSR_INDEX_LIST", ioctl(kvm, KVM_GET_MSR_INDEX_LIST, &ml), 0);
	bool has_lstar = false;
	for (unsigned i = 0; i < ml.l.nmsrs && i < 256; i++)
		has_lstar |= ml.idx[i] == LSTAR;
	check("MSR index list has LSTAR", has_lstar, has_lstar, 1);
	return c;
}

// Identity map of the first 2 MiB (one large page) and of MMIO_GPA.
static void write_tables(uint8_t *mem)
{
	uint64_t *pml4 = (uint64_t *)(mem + PML4), *pdpt = (uint64_t *)(mem + PDPT);
	uint64_t *pd0 = (uint64_t *)(mem + PD0), *pd1 = (uint64_t *)(mem + PD1);

	pml4[0] = PDPT | 3;
	pdpt[0] = PD0 | 3;
	pdpt[1] = PD1 | 3;
	pd0[0] = 0x83;		  // 0..2 MiB, present, writable, large
	pd1[0] = MMIO_GPA | 0x83; // 1 GiB..+2 MiB
	uint64_t *gdt = (uint64_t *)(mem + GDT);
	gdt[1] = 0x00af9b000000ffffull; // 64-bit code
	gdt[2] = 0x00cf93000000ffffull; // data
}

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

// The guest, hand-assembled (x86-64).
static void write_code(uint8_t *mem)
{
	static const uint8_t code[] = {
	    0xb8, 0x00, 0x00, 0x00, 0x40,	      // mov eax, 0x40000000
	    0x0f, 0xa2,				      // cpuid
	    0x89, 0xc8,				      // mov eax, ecx
	    0xe7, 0x10,				      // out 0x10, eax
	    0xb8, 0x06, 0x00, 0x00, 0x80,	      // mov eax, 0x80000006 (not in the table)
	    0x31, 0xc9,				      // xor ecx, ecx
	    0x0f, 0xa2,				      // cpuid
	    0x09, 0xd8, 0x09, 0xc8, 0x09, 0xd0,	      // or eax, ebx; or eax, ecx; or eax, edx
	    0xe7, 0x11,				      // out 0x11, eax
	    0xb9, 0x82, 0x00, 0x00, 0xc0,	      // mov ecx, LSTAR
	    0x0f, 0x32,				      // rdmsr
	    0xe7, 0x12,				      // out 0x12, eax
	    0x89, 0xd0,				      // mov eax, edx
	    0xe7, 0x13,				      // out 0x13, eax
	    0xb9, 0x81, 0x00, 0x00, 0xc0,	      // mov ecx, STAR
	    0xb8, 0x22, 0x22, 0x11, 0x11,	      // mov eax, 0x11112222
	    0xba, 0x10, 0x00, 0x23, 0x00,	      // mov edx, 0x00230010
	    0x0f, 0x30,				      // wrmsr
	    0xe5, 0x14,				      // in eax, 0x14
	    0x89, 0x04, 0x25, 0x00, 0x00, 0x00, 0x40, // mov [0x40000000], eax
	    0xf4,				      // hlt
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
	memcpy(mem + CODE, code, sizeof(code));
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *s = mem + IRQ_STUBS + 0x10 * i;
		uint64_t *gate = (uint64_t *)(mem + IDT + 16 * stubs[i].vector);
		uint64_t at = IRQ_STUBS + 0x10 * i;
		memcpy(s, stub, sizeof(stub));
		s[5] = stubs[i].port;
		gate[0] = (at & 0xffff) | 8ull << 16 | 0x8eull << 40 | (at >> 16 & 0xffff) << 48;
		gate[1] = at >> 32;
	}
	ret_30 = CODE + code_offset(code, sizeof(code), 0xe7, 0x17);	 // after STI; NOP
	ret_31 = CODE + code_offset(code, sizeof(code), 0x90, 0xf4) + 1; // the HLT after it
	ret_nmi = CODE + code_offset(code, sizeof(code), 0x1a, 0x90) + 1; // the NOP
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){.base = 0,
				  .limit = 0xffffffff,
				  .selector = sel,
				  .type = type,
				  .present = 1,
				  .s = 1,
				  .l = code,
				  .db = !code,
				  .g = 1};
}

static void long_mode_sregs(struct kvm_sregs *s)
{
	seg(&s->cs, 8, 0xb, true);
	seg(&s->ds, 0x10, 3, false);
	s->es = s->fs = s->gs = s->ss = s->ds;
	s->tr = (struct kvm_segment){.limit = 0x67, .selector = 0x18, .type = 0xb, .present = 1};
	s->ldt = (struct kvm_segment){.unusable = 1};
	s->gdt.base = GDT;
	s->gdt.limit = 0x1f;
	s->idt.base = IDT;
	s->idt.limit = 16 * 0x32 - 1;
	s->cr0 = 0x80000031; // PG, NE, ET, PE
	s->cr3 = PML4;
	s->cr4 = 0x20;	 // PAE
	s->efer = 0x500; // LME, LMA
}

static void check_state(int vcpu, struct kvm_sregs *s)
{
	struct kvm_sregs bad, got;
	struct kvm_regs r = {.rip = CODE, .rflags = 0x2, .rsp = STACK_TOP};

	expect("KVM_GET_SREGS", ioctl(vcpu, KVM_GET_SREGS, s), 0);
	check("reset CS base (real mode, F000:FFF0)", s->cs.base == 0xffff0000, s->cs.base,
	      0xffff0000);
	long_mode_sregs(s);
	bad = *s;
	bad.cr8 = 1;
	if (on_slat()) // KVM takes it (and the pending interrupt below)
		expect("KVM_SET_SREGS with a TPR (no local APIC yet)",
		       ioctl(vcpu, KVM_SET_SREGS, &bad), EINVAL);
	bad = *s;
	bad.cr4 = 0; // long mode without PAE
	expect("KVM_SET_SREGS long mode without PAE", ioctl(vcpu, KVM_SET_SREGS, &bad), EINVAL);
	bad = *s;
	bad.interrupt_bitmap[0] = 1;
	if (on_slat())
		expect("KVM_SET_SREGS with a pending interrupt", ioctl(vcpu, KVM_SET_SREGS, &bad),
		       EINVAL);
	expect("KVM_SET_SREGS long mode", ioctl(vcpu, KVM_SET_SREGS, s), 0);
	expect("KVM_GET_SREGS again", ioctl(vcpu, KVM_GET_SREGS, &got), 0);
	check("SREGS round trip: CR0, CR3, CR4, EFER",
	      got.cr0 == s->cr0 && got.cr3 == s->cr3 && got.cr4 == s->cr4 && got.efer == s->efer,
	      got.efer, s->efer);
	check("SREGS round trip: CS long, selector 8", got.cs.l == 1 && got.cs.selector == 8,
	      got.cs.selector, 8);
	r.rflags = 0x2 | 1u << 3; // reserved
	if (on_slat())		  // KVM sets the fixed bit and takes the rest
		expect("KVM_SET_REGS reserved RFLAGS bit", ioctl(vcpu, KVM_SET_REGS, &r), EINVAL);
	r.rflags = 0x2;
	r.rbx = 0x1122334455667788ull;
	expect("KVM_SET_REGS", ioctl(vcpu, KVM_SET_REGS, &r), 0);
	struct kvm_regs rg;
	expect("KVM_GET_REGS", ioctl(vcpu, KVM_GET_REGS, &rg), 0);
	check("REGS round trip: RIP, RBX", rg.rip == CODE && rg.rbx == r.rbx, rg.rbx, r.rbx);
}

static void check_cpuid(int vcpu, struct kvm_cpuid2 *sup)
{
	struct kvm_cpuid_entry2 *l1 = leaf(sup, 1, 0), *hv = leaf(sup, 0x40000000, 0);
	struct kvm_cpuid_entry2 *l2 = leaf(sup, 0x80000006, 0);

	// Slat's own answer for 0x80000006 (the L2 cache) is not zero, so the
	// guest's zeros below come from the table, not from Slat's policy.
	if (!l1 || !hv || !l2 || !(l2->eax | l2->ebx | l2->ecx | l2->edx)) {
		check("supported table has leaves 1, 0x40000000 and a non-zero 0x80000006", false,
		      0, 1);
		return;
	}
	l1->ecx |= 1u << 26; // XSAVE: Slat does not give it
	if (on_slat())	     // KVM lets a VMM claim what it likes
		expect("KVM_SET_CPUID2 claiming XSAVE", ioctl(vcpu, KVM_SET_CPUID2, sup), EINVAL);
	l1->ecx &= ~(1u << 26);
	hv->ecx = MARK_VAL;	   // not a feature register: the VMM's value
	l2->function = 0x4000000f; // 0x80000006 left out: the guest reads zeros
	expect("KVM_SET_CPUID2", ioctl(vcpu, KVM_SET_CPUID2, sup), 0);
	struct kvm_cpuid2 *back = cpuid_alloc(sup->nent);
	expect("KVM_GET_CPUID2", ioctl(vcpu, KVM_GET_CPUID2, back), 0);
	struct kvm_cpuid_entry2 *b = leaf(back, 0x40000000, 0);
	check("KVM_GET_CPUID2 gives the table back",
	      back->nent == sup->nent && b && b->ecx == MARK_VAL, b ? b->ecx : 0, MARK_VAL);
	free(back);
}

static void check_msrs(int vcpu)
{
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[3];
	} b = {.m.nmsrs = 3,
	       .e = {{.index = LSTAR, .data = LSTAR_VAL},
		     {.index = 0x12345, .data = 1},
		     {.index = STAR, .data = 0}}};

	long n = ioctl(vcpu, KVM_SET_MSRS, &b);
	check("KVM_SET_MSRS stops at an MSR Slat does not keep", n == 1, n, 1);
	b.m.nmsrs = 1;
	b.e[0].data = 0;
	n = ioctl(vcpu, KVM_GET_MSRS, &b);
	check("KVM_GET_MSRS LSTAR", n == 1 && b.e[0].data == LSTAR_VAL, b.e[0].data, LSTAR_VAL);
	b.e[0].data = 0x8000000000000000ull; // not canonical
	n = ioctl(vcpu, KVM_SET_MSRS, &b);
	check("KVM_SET_MSRS non-canonical LSTAR refused", n == 0, n, 0);
	b.m.nmsrs = 257;
	expect("KVM_SET_MSRS 257 entries", ioctl(vcpu, KVM_SET_MSRS, &b), E2BIG);
}

#define RUN_LIMIT_S 30 // a KVM_RUN that has not returned by then is ended by SIGALRM

static void on_alarm(int sig)
{
	(void)sig; // only to end a KVM_RUN that hangs (EINTR)
}

static bool run_to(int vcpu, struct kvm_run *run, uint32_t reason, const char *what)
{
	alarm(RUN_LIMIT_S);
	int rc = ioctl(vcpu, KVM_RUN, 0);
	alarm(0);
	bool ok = rc == 0 && run->exit_reason == reason;

	if (rc < 0 && errno == EINTR)
		say("%s: KVM_RUN still in the guest after %d s, ended by SIGALRM", what,
		    RUN_LIMIT_S);
	check(what, ok, rc ? (unsigned long long)-errno : run->exit_reason, reason);
	if (!ok && run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
		say("internal error: %llx %llx %llx", (unsigned long long)run->internal.data[0],
		    (unsigned long long)run->internal.data[1],
		    (unsigned long long)run->internal.data[2]);
	return ok;
}

static uint32_t io_out(const struct kvm_run *run, uint16_t port)
{
	uint32_t v = 0;

	if (run->io.direction == KVM_EXIT_IO_OUT && run->io.port == port && run->io.size == 4) {
		memcpy(&v, (const uint8_t *)run + run->io.data_offset, 4);
		return v;
	}
	memcpy(&v, (const uint8_t *)run + run->io.data_offset, run->io.size < 4 ? run->io.size : 4);
	say("wanted OUT 0x%x of 4 bytes, got %s 0x%x of %u bytes (0x%x)", port,
	    run->io.direction == KVM_EXIT_IO_OUT ? "OUT" : "IN", run->io.port, run->io.size, v);
	return 0xdeadbeef;
}

static bool out_exit(int vcpu, struct kvm_run *run, uint16_t port, const char *what)
{
	return run_to(vcpu, run, KVM_EXIT_IO, what) && io_out(run, port) != 0xdeadbeef;
}

// The handler of `vector` reports the guest RIP it interrupted on `port`.
static void check_delivered(int vcpu, struct kvm_run *run, uint16_t port, uint32_t rip,
			    const char *what)
{
	uint32_t v = out_exit(vcpu, run, port, what) ? io_out(run, port) : 0;

	check(what, v == rip, v, rip);
}

static void check_interrupts(int vcpu, struct kvm_run *run)
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
static void check_nmis(int vcpu, struct kvm_run *run)
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

static void check_run(int vcpu, struct kvm_run *run)
{
	uint32_t v;

	if (!run_to(vcpu, run, KVM_EXIT_IO, "exit 1: OUT 0x10"))
		return;
	v = io_out(run, 0x10);
	check("guest's CPUID 0x40000000 ECX is the VMM's", v == MARK_VAL, v, MARK_VAL);
	if (!run_to(vcpu, run, KVM_EXIT_IO, "exit 2: OUT 0x11"))
		return;
	v = io_out(run, 0x11);
	check("a leaf the table lacks reads as zeros", v == 0, v, 0);
	if (!run_to(vcpu, run, KVM_EXIT_IO, "exit 3: OUT 0x12"))
		return;
	v = io_out(run, 0x12);
	check("guest's RDMSR LSTAR low half", v == (uint32_t)LSTAR_VAL, v, (uint32_t)LSTAR_VAL);
	if (!run_to(vcpu, run, KVM_EXIT_IO, "exit 4: OUT 0x13"))
		return;
	v = io_out(run, 0x13);
	check("guest's RDMSR LSTAR high half", v == LSTAR_VAL >> 32, v, LSTAR_VAL >> 32);
	if (!run_to(vcpu, run, KVM_EXIT_IO, "exit 5: IN 0x14"))
		return;
	check("IN 0x14, 4 bytes", run->io.direction == KVM_EXIT_IO_IN && run->io.size == 4,
	      run->io.port, 0x14);
	v = IN_VAL;
	memcpy((uint8_t *)run + run->io.data_offset, &v, 4);
	if (!run_to(vcpu, run, KVM_EXIT_MMIO, "exit 6: MMIO write"))
		return;
	memcpy(&v, run->mmio.data, 4);
	check("MMIO write of the IN value at 1 GiB",
	      run->mmio.is_write && run->mmio.phys_addr == MMIO_GPA && v == IN_VAL, v, IN_VAL);
	if (!run_to(vcpu, run, KVM_EXIT_HLT, "exit 7: HLT"))
		return;
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} b = {.m.nmsrs = 1, .e = {{.index = STAR}}};
	long n = ioctl(vcpu, KVM_GET_MSRS, &b);
	check("KVM_GET_MSRS STAR as the guest wrote it", n == 1 && b.e[0].data == STAR_VAL,
	      b.e[0].data, STAR_VAL);
	check_interrupts(vcpu, run);
	check_nmis(vcpu, run);
}

// vCPU `id` of `vm` and its mapped struct kvm_run (the whole mmap size: KVM
// has the PIO data on the second page), or NULL.
static struct kvm_run *new_vcpu(int kvm, int vm, int id, int *vcpu)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	void *run;

	*vcpu = ioctl(vm, KVM_CREATE_VCPU, id);
	if (*vcpu < 0 || sz <= 0)
		return NULL;
	run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, *vcpu, 0);
	return run == MAP_FAILED ? NULL : run;
}

// ---- the in-kernel irqchip: a second VM with local APIC and I/O APIC ----
#define PD3	   0xa000u
#define CODE2	   0x11000u
#define STUBS2	   0x11800u // vectors 0x40-0x44: 0x20 bytes apart
#define TIMER_VEC  0x40
#define IPI_VEC	   0x41
#define PIN_VEC	   0x42
#define MSI_VEC	   0x43
#define SPIN_VEC   0x44 // its handler also ends the spin loop (ESI = 1)
#define IOAPIC_PIN 5
#define AP_VEC	   0x0c // STARTUP vector: real mode at 0xc000
#define AP_EARLY   0x0d // the STARTUP sent before INIT: 0xd000, must not run

// The APIC page and the I/O APIC window, identity-mapped (2 MiB pages).
static void map_apics(uint8_t *mem)
{
	uint64_t *pdpt = (uint64_t *)(mem + PDPT), *pd3 = (uint64_t *)(mem + PD3);

	pdpt[3] = PD3 | 3;
	pd3[(0xfec00000u - 0xc0000000u) >> 21] = 0xfec00000u | 0x9b; // PCD, PWT: uncached
	pd3[(0xfee00000u - 0xc0000000u) >> 21] = 0xfee00000u | 0x9b;
}

// mov ecx, addr; mov dword [rcx], val
static size_t put_store(uint8_t *p, uint32_t addr, uint32_t val)
{
	uint8_t c[] = {0xb9, 0, 0, 0, 0, 0xc7, 0x01, 0, 0, 0, 0};

	memcpy(c + 1, &addr, 4);
	memcpy(c + 7, &val, 4);
	memcpy(p, c, sizeof(c));
	return sizeof(c);
}

static size_t put(uint8_t *p, const uint8_t *b, size_t n)
{
	memcpy(p, b, n);
	return n;
}

// Where each interrupt must find the guest.
static uint32_t rip_timer, rip_ipi, rip_pin, rip_msi, rip_deadline, rip_deadline_past, rip_spin;

#define DEADLINE_TICKS 20000000 // TSC ticks from WRMSR to the interrupt

// The TSC-deadline timer: LVT timer in mode 2 (read back on port 0x5d); a
// TMICT write is ignored (TMICT read on 0x5f); IA32_TSC_DEADLINE = TSC +
// DEADLINE_TICKS, read back (their difference on 0x5c); STI; HLT until it
// fires; the MSR reads 0 after (0x5e).
static size_t put_deadline(uint8_t *c, uint32_t code_at)
{
	static const uint8_t arm[] = {
	    0x0f, 0x31,			  // rdtsc
	    0x48, 0xc1, 0xe2, 0x20,	  // shl rdx, 32
	    0x48, 0x09, 0xd0,		  // or rax, rdx
	    0x48, 0x05, 0,    0,    0, 0, // add rax, DEADLINE_TICKS
	    0x48, 0x89, 0xc6,		  // mov rsi, rax
	    0x48, 0x89, 0xc2,		  // mov rdx, rax
	    0x48, 0xc1, 0xea, 0x20,	  // shr rdx, 32
	    0xb9, 0xe0, 0x06, 0,    0,	  // mov ecx, 0x6e0
	    0x0f, 0x30,			  // wrmsr
	    0x0f, 0x32,			  // rdmsr
	    0x48, 0xc1, 0xe2, 0x20,	  // shl rdx, 32
	    0x48, 0x09, 0xd0,		  // or rax, rdx
	    0x48, 0x29, 0xf0,		  // sub rax, rsi
	    0xe7, 0x5c,			  // out 0x5c, eax
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

	n += put_store(c + n, 0xfee00320, 2u << 17 | TIMER_VEC); // LVT timer: TSC-deadline
	n += put(c + n, read_lvtt, sizeof(read_lvtt));
	n += put_store(c + n, 0xfee00380, 1000); // TMICT: ignored in this mode
	n += put(c + n, read_tmict, sizeof(read_tmict));
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
static size_t put_deadline_spin(uint8_t *c, uint32_t code_at)
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

static void put_spin_handler(uint8_t *mem)
{
	static const uint8_t h0[] = {
	    0x50,			  // push rax
	    0x48, 0x8b, 0x44, 0x24, 0x08, // mov rax, [rsp + 8]: the return RIP
	    0xe7, 0x59,			  // out 0x59, eax
	    0xbe, 1,	0,    0,    0,	  // mov esi, 1
	};
	static const uint8_t h1[] = {0x58, 0x48, 0xcf}; // pop rax; iretq
	uint64_t at = STUBS2 + 0x20 * (SPIN_VEC - 0x40);
	uint64_t *gate = (uint64_t *)(mem + IDT + 16 * SPIN_VEC);
	size_t k = put(mem + at, h0, sizeof(h0));

	k += put_store(mem + at + k, 0xfee000b0, 0); // EOI
	k += put(mem + at + k, h1, sizeof(h1));
	_Static_assert(sizeof(h0) + 11 + sizeof(h1) <= 0x20, "the stub fits its 0x20 bytes");
	gate[0] = (at & 0xffff) | 8ull << 16 | 0x8eull << 40 | (at >> 16 & 0xffff) << 48;
	gate[1] = at >> 32;
}

static void write_code2(uint8_t *mem)
{
	static const uint8_t read_lvr[] = {0xb9, 0x30, 0x00, 0xe0, 0xfe, 0x8b, 0x01, 0xe7, 0x50};
	static const uint8_t sti_hlt[] = {0xfb, 0xf4}, cli[] = {0xfa};
	uint8_t *c = mem + CODE2;
	size_t n = 0;

	// Mask both 8259s, as a guest using the I/O APIC does: KVM emulates them
	// (KVM_IRQ_LINE raises a PIC line too); Slat has none, its VMM sees the OUTs.
	n += put(c + n, (const uint8_t[]){0xb0, 0xff, 0xe6, 0x21, 0xe6, 0xa1}, 6);
	n += put_store(c + n, 0xfee000f0, 0x1ff);    // SVR: enabled, spurious 0xff
	n += put(c + n, read_lvr, sizeof(read_lvr)); // OUT 0x50: the version register
	n += put(c + n, cli, 1);
	n += put_store(c + n, 0xfee003e0, 0xb);	      // TDCR: divide by 1
	n += put_store(c + n, 0xfee00320, TIMER_VEC); // LVT timer: one-shot
	n += put_store(c + n, 0xfee00380, 2000000);   // TMICT: 2 ms at 1 GHz
	n += put(c + n, sti_hlt, 2);
	rip_timer = CODE2 + n;
	n += put(c + n, (const uint8_t[]){0xe7, 0x52}, 2);    // OUT 0x52
	n += put_store(c + n, 0xfee00300, 0x40000 | IPI_VEC); // ICR: self, fixed
	rip_ipi = CODE2 + n;
	n += put(c + n, (const uint8_t[]){0x90}, 1);
	n += put_store(c + n, 0xfec00000, 0x10 + 2 * IOAPIC_PIN); // IOREGSEL: pin 5 low
	n += put_store(c + n, 0xfec00010, PIN_VEC);		  // edge, fixed, unmasked, APIC 0
	n += put(c + n, cli, 1);
	n += put(c + n, (const uint8_t[]){0xe7, 0x54}, 2); // OUT 0x54: the VMM raises pin 5
	n += put(c + n, sti_hlt, 2);
	rip_pin = CODE2 + n;
	n += put(c + n, cli, 1);
	n += put(c + n, (const uint8_t[]){0xe7, 0x5a}, 2); // OUT 0x5a: the VMM signals an MSI
	n += put(c + n, sti_hlt, 2);
	rip_msi = CODE2 + n;
	n += put_deadline(c + n, CODE2 + n);
	n += put_deadline_spin(c + n, CODE2 + n);
	n += put(c + n, (const uint8_t[]){0xe7, 0x56}, 2); // OUT 0x56
	// Start vCPU 1 (APIC ID 1): a STARTUP before any INIT (ignored), INIT
	// assert, INIT level de-assert (no effect), STARTUP at AP_VEC.
	n += put_store(c + n, 0xfee00310, 1u << 24);	     // ICR2: APIC 1
	n += put_store(c + n, 0xfee00300, 0x600 | AP_EARLY); // STARTUP, no INIT yet
	n += put_store(c + n, 0xfee00300, 0xc500);	     // INIT, level, assert
	n += put_store(c + n, 0xfee00300, 0x8500);	     // INIT, level, de-assert
	n += put_store(c + n, 0xfee00300, 0x600 | AP_VEC);   // STARTUP
	n += put(c + n, (const uint8_t[]){0xe7, 0x58}, 2);   // OUT 0x58: sent
	n += put(c + n, (const uint8_t[]){0xeb, 0xfe}, 2);   // jmp $ (never reached)
	// The AP's real-mode code at each STARTUP vector: mov eax, val; out port,
	// eax; hlt (IF 0: it waits there until a signal ends KVM_RUN).
	static const uint8_t ap[] = {0x66, 0xb8, 0x34, 0x12, 0x00, 0x00,
				     0x66, 0xe7, 0x60, 0xf4, 0xeb, 0xfd};
	memcpy(mem + (AP_VEC << 12), ap, sizeof(ap));
	memcpy(mem + (AP_EARLY << 12), ap, sizeof(ap));
	mem[(AP_EARLY << 12) + 8] = 0x61; // out 0x61: started by the early STARTUP

	// Each handler: push rax, rcx; report its return RIP on port 0x51 + 2 * i;
	// EOI; pop; iretq.
	for (unsigned i = 0; i < 4; i++) {
		static const uint8_t h0[] = {0x50, 0x51, 0x48, 0x8b, 0x44, 0x24, 0x10, 0xe7, 0x00};
		static const uint8_t h1[] = {0x59, 0x58, 0x48, 0xcf};
		uint8_t *s = mem + STUBS2 + 0x20 * i;
		uint64_t at = STUBS2 + 0x20 * i, *gate = (uint64_t *)(mem + IDT + 16 * (0x40 + i));
		size_t k = put(s, h0, sizeof(h0));
		s[k - 1] = 0x51 + 2 * i;
		k += put_store(s + k, 0xfee000b0, 0); // EOI
		put(s + k, h1, sizeof(h1));
		gate[0] = (at & 0xffff) | 8ull << 16 | 0x8eull << 40 | (at >> 16 & 0xffff) << 48;
		gate[1] = at >> 32;
	}
	put_spin_handler(mem);
}

static uint32_t expect_out(int vcpu, struct kvm_run *run, uint16_t port, const char *what)
{
	return out_exit(vcpu, run, port, what) ? io_out(run, port) : 0xdeadbeef;
}

// One OUT of a byte to `port` (the VMM's exit: the PIC ports on Slat).
static void byte_out(int vcpu, struct kvm_run *run, uint16_t port, uint8_t val)
{
	bool io = run_to(vcpu, run, KVM_EXIT_IO, "PIC mask: an OUT to the VMM");
	uint8_t got = io ? *((const uint8_t *)run + run->io.data_offset) : 0;

	check("PIC mask: the byte and port",
	      io && run->io.port == port && run->io.size == 1 && got == val, io ? run->io.port : 0,
	      port);
}

static void run_deadline_part(int vcpu, struct kvm_run *run)
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

static void run_irqchip_guest(int vm, int vcpu, struct kvm_run *run)
{
	if (!reference) { // Slat has no 8259: its ports are the VMM's
		byte_out(vcpu, run, 0x21, 0xff);
		byte_out(vcpu, run, 0xa1, 0xff);
	}
	uint32_t v = expect_out(vcpu, run, 0x50, "irqchip exit 1: OUT 0x50");
	check("LAPIC version register", v == 0x50014, v, 0x50014);
	v = expect_out(vcpu, run, 0x51, "timer interrupt: handler's OUT 0x51");
	check("timer taken at the HLT after STI, not before", v == rip_timer, v, rip_timer);
	v = expect_out(vcpu, run, 0x52, "OUT 0x52 after the timer's IRETQ");
	v = expect_out(vcpu, run, 0x53, "self IPI: handler's OUT 0x53");
	check("self IPI taken right after the ICR write", v == rip_ipi, v, rip_ipi);
	if (expect_out(vcpu, run, 0x54, "OUT 0x54 (IF 0)") == 0xdeadbeef)
		return;
	struct kvm_irq_level line = {.irq = IOAPIC_PIN, .level = 1};
	expect("KVM_IRQ_LINE pin 5 up", ioctl(vm, KVM_IRQ_LINE, &line), 0);
	line.level = 0;
	expect("KVM_IRQ_LINE pin 5 down", ioctl(vm, KVM_IRQ_LINE, &line), 0);
	line.irq = 24;
	if (on_slat()) // KVM: a GSI with no route does nothing
		expect("KVM_IRQ_LINE pin 24", ioctl(vm, KVM_IRQ_LINE, &line), EINVAL);
	v = expect_out(vcpu, run, 0x55, "I/O APIC pin 5: handler's OUT 0x55");
	check("pin 5 taken at the HLT after STI", v == rip_pin, v, rip_pin);
	if (expect_out(vcpu, run, 0x5a, "OUT 0x5a (IF 0)") == 0xdeadbeef)
		return;
	struct kvm_msi msi = {.address_lo = 0xfee00000, .data = MSI_VEC, .flags = 1};
	if (on_slat()) // KVM ignores device IDs on x86
		expect("KVM_SIGNAL_MSI with a device ID", ioctl(vm, KVM_SIGNAL_MSI, &msi), EINVAL);
	msi = (struct kvm_msi){.address_lo = 0xfee00000, .data = MSI_VEC};
	long n = ioctl(vm, KVM_SIGNAL_MSI, &msi);
	check("KVM_SIGNAL_MSI to APIC 0: delivered to 1", n == 1, n, 1);
	v = expect_out(vcpu, run, 0x57, "MSI: handler's OUT 0x57");
	check("MSI taken at the HLT after STI", v == rip_msi, v, rip_msi);
	run_deadline_part(vcpu, run);
	expect_out(vcpu, run, 0x56, "irqchip guest: OUT 0x56");
}

#define LAPIC_REG(st, off) (*(uint32_t *)((st)->regs + (off)))

// KVM_SET_LAPIC: the APIC ID is the vCPU's; a timer with vector 5 (illegal,
// below 16) fires into ESR ("received illegal vector"), never into IRR.
static void check_lapic_state(int vcpu, const struct kvm_lapic_state *reset)
{
	struct kvm_lapic_state st = *reset;

	if (!on_slat()) // KVM lets the ID change and takes vectors below 16
		return;
	LAPIC_REG(&st, 0x20) = 1u << 24;
	expect("KVM_SET_LAPIC with another APIC ID", ioctl(vcpu, KVM_SET_LAPIC, &st), EINVAL);
	st = *reset;
	LAPIC_REG(&st, 0xf0) = 0x1ff; // SVR: enabled
	LAPIC_REG(&st, 0x3e0) = 0xb;  // TDCR: divide by 1
	LAPIC_REG(&st, 0x320) = 5;    // LVT timer: one-shot, vector 5
	LAPIC_REG(&st, 0x380) = 1000; // TMICT: 1 us
	expect("KVM_SET_LAPIC: a 1 us timer with vector 5", ioctl(vcpu, KVM_SET_LAPIC, &st), 0);
	usleep(50000);
	expect("KVM_GET_LAPIC after it fired", ioctl(vcpu, KVM_GET_LAPIC, &st), 0);
	uint32_t esr = LAPIC_REG(&st, 0x280), irr0 = LAPIC_REG(&st, 0x200);
	check("illegal vector 5: ESR bit 6, nothing in IRR", (esr & 0x40) && !irr0, esr, 0x40);
	expect("KVM_SET_LAPIC back to the reset state", ioctl(vcpu, KVM_SET_LAPIC, reset), 0);
}

// ---- INIT and STARTUP: the irqchip guest starts vCPU 1 ----
struct ap_run {
	int vcpu;
	struct kvm_run *run;
	pthread_t thread;
	long rc;
	int err;
	volatile int done;
};

static void on_usr1(int sig)
{
	(void)sig; // only to end a blocked KVM_RUN with EINTR
}

static void *ap_thread(void *arg)
{
	struct ap_run *a = arg;
	sigset_t alrm;

	sigemptyset(&alrm); // SIGALRM is the main thread's (run_to)
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	do { // KVM returns EAGAIN when INIT ends the wait of an UNINITIALIZED vCPU
		a->rc = ioctl(a->vcpu, KVM_RUN, 0);
		a->err = errno;
	} while (a->rc == -1 && a->err == EAGAIN);
	a->done = 1;
	return NULL;
}

// Waits up to `ms` for the AP's KVM_RUN; then SIGUSR1 ends it (EINTR).
static void ap_join(struct ap_run *a, unsigned ms)
{
	for (unsigned t = 0; t < ms && !a->done; t += 10)
		usleep(10000);
	while (!a->done) {
		pthread_kill(a->thread, SIGUSR1);
		usleep(10000);
	}
	pthread_join(a->thread, NULL);
}

static bool ap_start(struct ap_run *a)
{
	struct sigaction sa = {.sa_handler = on_usr1}; // no SA_RESTART

	sigaction(SIGUSR1, &sa, NULL);
	a->done = 0;
	return pthread_create(&a->thread, NULL, ap_thread, a) == 0;
}

// vCPU 1 exists before the guest runs; it waits in KVM_RUN for STARTUP.
static void check_ap_started(struct ap_run *a)
{
	struct kvm_mp_state mp;
	struct kvm_sregs s;

	ap_join(a, 20000);
	bool io = a->rc == 0 && a->run->exit_reason == KVM_EXIT_IO;
	uint16_t port = io ? a->run->io.port : 0;
	if (!io)
		say("AP's KVM_RUN: %ld (%s), exit reason %u", a->rc, strerror(a->err),
		    a->run->exit_reason);
	check("AP started by INIT + STARTUP: its OUT 0x60 (0x61: the early STARTUP ran)",
	      io && port == 0x60, port, 0x60);
	check("AP's OUT value", io && io_out(a->run, port) == 0x1234, io ? io_out(a->run, port) : 0,
	      0x1234);
	expect("AP: KVM_GET_SREGS", ioctl(a->vcpu, KVM_GET_SREGS, &s), 0);
	check("AP in real mode at CS 0x0c00, base 0xc000",
	      s.cs.selector == AP_VEC << 8 && s.cs.base == AP_VEC << 12 && !(s.cr0 & 1), s.cs.base,
	      AP_VEC << 12);
	expect("AP: KVM_GET_MP_STATE", ioctl(a->vcpu, KVM_GET_MP_STATE, &mp), 0);
	check("AP runnable after STARTUP", mp.mp_state == KVM_MP_STATE_RUNNABLE, mp.mp_state,
	      KVM_MP_STATE_RUNNABLE);
	// Its HLT with IF 0 waits in the kernel; a signal ends KVM_RUN.
	if (!ap_start(a))
		return;
	ap_join(a, 200);
	check("AP's HLT ended by a signal: EINTR, KVM_EXIT_INTR",
	      a->rc == -1 && a->err == EINTR && a->run->exit_reason == KVM_EXIT_INTR, a->err,
	      EINTR);
}

// KVM_GET/SET_IRQCHIP: the I/O APIC's image round-trips; there is no PIC.
static void check_ioapic_state(int vm)
{
	struct kvm_irqchip chip = {.chip_id = KVM_IRQCHIP_PIC_MASTER};

	if (on_slat()) // KVM's irqchip has two 8259s
		expect("KVM_GET_IRQCHIP: PIC (there is none)", ioctl(vm, KVM_GET_IRQCHIP, &chip),
		       EINVAL);
	chip.chip_id = KVM_IRQCHIP_IOAPIC;
	expect("KVM_GET_IRQCHIP: I/O APIC", ioctl(vm, KVM_GET_IRQCHIP, &chip), 0);
	struct kvm_ioapic_state *io = &chip.chip.ioapic;
	check("I/O APIC at 0xfec00000, pin 5 masked",
	      io->base_address == 0xfec00000 && io->redirtbl[5].bits == 1u << 16,
	      io->redirtbl[5].bits, 1u << 16);
	struct kvm_irqchip moved = chip;
	moved.chip.ioapic.base_address = 0xfec01000;
	if (on_slat()) // KVM lets it move
		expect("KVM_SET_IRQCHIP moving the I/O APIC", ioctl(vm, KVM_SET_IRQCHIP, &moved),
		       EINVAL);
	struct kvm_irqchip set = chip;
	set.chip.ioapic.redirtbl[7].bits = 0x10047; // masked, vector 0x47
	expect("KVM_SET_IRQCHIP: pin 7", ioctl(vm, KVM_SET_IRQCHIP, &set), 0);
	struct kvm_irqchip back = {.chip_id = KVM_IRQCHIP_IOAPIC};
	expect("KVM_GET_IRQCHIP after it", ioctl(vm, KVM_GET_IRQCHIP, &back), 0);
	check("pin 7 as set", back.chip.ioapic.redirtbl[7].bits == 0x10047,
	      back.chip.ioapic.redirtbl[7].bits, 0x10047);
	expect("KVM_SET_IRQCHIP: back", ioctl(vm, KVM_SET_IRQCHIP, &chip), 0);
}

// The TSC-deadline timer is the VMM's to offer when KVM_CAP_TSC_DEADLINE_TIMER
// says so (KVM 6.1 leaves it out of KVM_GET_SUPPORTED_CPUID); the guest's TSC
// frequency is KVM_GET_TSC_KHZ's.
static void set_deadline_cpuid(int kvm, int vcpu, struct kvm_cpuid2 *sup)
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

static void check_irqchip(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup)
{
	int vm = ioctl(kvm, KVM_CREATE_VM, 0), late = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem =
	    mmap(NULL, MEM_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kvm_lapic_state ls;

	if (vm < 0 || late < 0 || mem == MAP_FAILED) {
		check("irqchip VMs", false, 0, 1);
		return;
	}
	expect("KVM_CREATE_IRQCHIP", ioctl(vm, KVM_CREATE_IRQCHIP, 0), 0);
	expect("KVM_CREATE_IRQCHIP twice", ioctl(vm, KVM_CREATE_IRQCHIP, 0), EEXIST);
	int lv = ioctl(late, KVM_CREATE_VCPU, 0);
	expect("KVM_CREATE_IRQCHIP after a vCPU", ioctl(late, KVM_CREATE_IRQCHIP, 0), EINVAL);
	expect("KVM_GET_LAPIC without one", ioctl(lv, KVM_GET_LAPIC, &ls), EINVAL);
	close(lv);
	close(late);
	write_tables(mem);
	map_apics(mem);
	write_code2(mem);
	expect("irqchip VM: region", region(vm, 0, 0, 0, MEM_SZ, mem), 0);
	int vcpu;
	struct kvm_run *run = new_vcpu(kvm, vm, 0, &vcpu);
	if (!run) {
		check("irqchip vCPU", false, 0, 1);
		return;
	}
	expect("KVM_GET_LAPIC", ioctl(vcpu, KVM_GET_LAPIC, &ls), 0);
	uint32_t id = *(uint32_t *)(ls.regs + 0x20), svr = *(uint32_t *)(ls.regs + 0xf0);
	check("reset LAPIC: ID 0, SVR 0xff", id == 0 && svr == 0xff, svr, 0xff);
	struct kvm_interrupt irq = {.irq = 0x30};
	expect("KVM_INTERRUPT with an in-kernel LAPIC", ioctl(vcpu, KVM_INTERRUPT, &irq), ENXIO);
	check_lapic_state(vcpu, &ls);
	check_ioapic_state(vm);
	set_deadline_cpuid(kvm, vcpu, sup);
	s->idt.limit = 16 * (SPIN_VEC + 1) - 1;
	struct kvm_regs r = {.rip = CODE2, .rflags = 0x2, .rsp = STACK_TOP};
	expect("irqchip vCPU: SREGS", ioctl(vcpu, KVM_SET_SREGS, s), 0);
	expect("irqchip vCPU: REGS", ioctl(vcpu, KVM_SET_REGS, &r), 0);
	struct ap_run ap;
	struct kvm_mp_state mp = {.mp_state = 99};
	ap.run = new_vcpu(kvm, vm, 1, &ap.vcpu);
	expect("vCPU 1: KVM_GET_MP_STATE", ioctl(ap.vcpu, KVM_GET_MP_STATE, &mp), 0);
	check("vCPU 1 waits for STARTUP (UNINITIALIZED)", mp.mp_state == KVM_MP_STATE_UNINITIALIZED,
	      mp.mp_state, KVM_MP_STATE_UNINITIALIZED);
	bool ap_ok = ap.run && ap_start(&ap);
	check("vCPU 1 and its thread", ap_ok, 0, 1);
	run_irqchip_guest(vm, vcpu, run);
	if (ap_ok) {
		expect_out(vcpu, run, 0x58, "INIT and STARTUP sent: OUT 0x58");
		check_ap_started(&ap);
		close(ap.vcpu);
	}
	close(vcpu);
	close(vm);
	munmap(mem, MEM_SZ);
}

int main(int argc, char **argv)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	reference = argc == 2 && !strcmp(argv[1], "--reference");
	if (kvm < 0) {
		say("cannot open /dev/kvm: %s", strerror(errno));
		return 2;
	}
	if (reference)
		say("reference mode: Linux's KVM (checks of Slat's own choices left out)");
	struct sigaction sa = {.sa_handler = on_alarm}; // no SA_RESTART: KVM_RUN ends
	sigaction(SIGALRM, &sa, NULL);
	struct kvm_cpuid2 *sup = check_system(kvm);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	expect("KVM_CREATE_VM", vm, 0);
	struct kvm_irq_level line = {.irq = 5, .level = 1};
	expect("KVM_IRQ_LINE without an irqchip", ioctl(vm, KVM_IRQ_LINE, &line), ENXIO);
	struct kvm_msi msi = {.address_lo = 0xfee00000, .data = 0x30};
	expect("KVM_SIGNAL_MSI without an irqchip", ioctl(vm, KVM_SIGNAL_MSI, &msi), EINVAL);
	struct kvm_irqchip chip = {.chip_id = KVM_IRQCHIP_IOAPIC};
	expect("KVM_GET_IRQCHIP without an irqchip", ioctl(vm, KVM_GET_IRQCHIP, &chip), ENXIO);
	expect("KVM_SET_TSS_ADDR", ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000), 0);
	uint8_t *mem =
	    mmap(NULL, MEM_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || mem == MAP_FAILED)
		return 2;
	write_tables(mem);
	write_code(mem);
	expect("KVM_SET_USER_MEMORY_REGION 0..2 MiB", region(vm, 0, 0, 0, MEM_SZ, mem), 0);
	int vcpu;
	struct kvm_run *run = new_vcpu(kvm, vm, 0, &vcpu);
	if (!run) {
		say("vCPU: %s", strerror(errno));
		return 2;
	}
	struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_HALTED};
	expect("KVM_SET_MP_STATE HALTED (no irqchip)", ioctl(vcpu, KVM_SET_MP_STATE, &mp), EINVAL);
	struct kvm_sregs s;
	check_cpuid(vcpu, sup);
	check_state(vcpu, &s);
	check_msrs(vcpu);
	check_run(vcpu, run);
	check_irqchip(kvm, &s, sup);
	close(vcpu);
	close(vm);
	close(kvm);
	free(sup);
	return verdict();
}
