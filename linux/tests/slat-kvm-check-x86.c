// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check on x86 (built as slat-kvm-check for x86_64): the KVM API on
// /dev/kvm as slat.ko answers it (the ABI version it needs: docs/kvm-api.md).
// The system ioctls (KVM_GET_SUPPORTED_CPUID and KVM_GET_MSR_INDEX_LIST with
// their -E2BIG protocol), the refusals (no in-kernel irqchip yet; a CPUID
// table claiming XSAVE; SREGS with a TPR, a bad EFER, reserved RFLAGS bits;
// an MSR Slat does not keep), then a 64-bit guest entered straight from
// KVM_SET_SREGS that reads CPUID from the VMM's table, an MSR the VMM set,
// writes one the VMM then reads, takes an IN answer to an MMIO write and
// halts. Prints one "SLAT-GUEST: kvmcheck: ..." line per check and a verdict.
//
// This file has main() and those first sections; the others are one file
// each: kvmcheck_x86_irq.c (interrupts and NMIs without an in-kernel
// irqchip), kvmcheck_x86_events.c (KVM_GET/SET_VCPU_EVENTS),
// kvmcheck_x86_irqchip.c (local APIC and I/O APIC),
// kvmcheck_x86_timer.c (the TSC-deadline timer) and kvmcheck_x86_ap.c (INIT
// and STARTUP). They share kvmcheck_x86.h / kvmcheck_x86.c (the guests'
// layout, vCPU and exit helpers) and kvmcheck.h / kvmcheck.c (the checks and
// the verdict, with the arm64 program).
#include "kvmcheck_x86.h"

#define LSTAR	  0xc0000082u
#define STAR	  0xc0000081u
#define LSTAR_VAL 0xffff800012345000ull
#define STAR_VAL  0x0023001011112222ull
#define IN_VAL	  0xabcd1234u
#define MARK_VAL  0x5a5a1234u // the VMM's value of CPUID 0x40000000 ECX

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
		check("KVM_GET_MSR_INDEX_LIST count", ml.l.nmsrs == 10, ml.l.nmsrs, 10);
	ml.l.nmsrs = 256;
	expect("KVM_GET_MSR_INDEX_LIST", ioctl(kvm, KVM_GET_MSR_INDEX_LIST, &ml), 0);
	bool has_lstar = false;
	for (unsigned i = 0; i < ml.l.nmsrs && i < 256; i++)
		has_lstar |= ml.idx[i] == LSTAR;
	check("MSR index list has LSTAR", has_lstar, has_lstar, 1);
	return c;
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
	};
	memcpy(mem + CODE, code, sizeof(code));
	// The interrupts and NMIs part follows (kvmcheck_x86_irq.c).
	put_irq_code(mem, mem + CODE + sizeof(code), CODE + sizeof(code));
	put_events_code(mem); // kvmcheck_x86_events.c
	put_msr_code(mem);    // kvmcheck_x86_msr.c
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

static void check_run(int kvm, int vcpu, struct kvm_run *run)
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
	check_events(kvm, vcpu, run);
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
	if (on_slat()) // x86's KVM 6.1 offers the ring
		check_no_dirty_ring(kvm, vm);
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
	check_run(kvm, vcpu, run);
	check_msr_exits(kvm, vm, vcpu, run, mem);
	check_irqchip(kvm, &s, sup);
	check_pic_pit(kvm, &s, sup);
	check_thp(kvm, &s, sup);
	close(vcpu);
	close(vm);
	close(kvm);
	free(sup);
	return verdict();
}
