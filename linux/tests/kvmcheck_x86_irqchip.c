// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): the in-kernel irqchip, in a second VM with a local
// APIC and an I/O APIC: KVM_CREATE_IRQCHIP's refusals, the LAPIC's state
// (KVM_GET/SET_LAPIC), the I/O APIC's (KVM_GET/SET_IRQCHIP), then a guest
// that takes its LAPIC timer, a self IPI, an I/O APIC pin (KVM_IRQ_LINE), an
// MSI (KVM_SIGNAL_MSI) and the TSC-deadline timer (kvmcheck_x86_timer.c), and
// starts vCPU 1 with INIT and STARTUP (kvmcheck_x86_ap.c).
#include "kvmcheck_x86.h"

// The APIC page and the I/O APIC window, identity-mapped (2 MiB pages).
static void map_apics(uint8_t *mem)
{
	uint64_t *pdpt = (uint64_t *)(mem + PDPT), *pd3 = (uint64_t *)(mem + PD3);

	pdpt[3] = PD3 | 3;
	pd3[(0xfec00000u - 0xc0000000u) >> 21] = 0xfec00000u | 0x9b; // PCD, PWT: uncached
	pd3[(0xfee00000u - 0xc0000000u) >> 21] = 0xfee00000u | 0x9b;
}

// Where each interrupt must find the guest.
static uint32_t rip_timer, rip_ipi, rip_pin, rip_msi, rip_shadow;

// Rounds of the STI; HLT loop (put_shadow_rounds): 2000 on Slat, one on
// Linux's KVM. KVM under QEMU 7.2 loses the shadow too (its VMRUN leaves the
// guest's shadow behind: one MSI before the HLT in 306 rounds in the reference
// run), so many rounds there test the emulator, not KVM's semantics.
#define SHADOW_ROUNDS 2000
static unsigned shadow_rounds(void)
{
	return on_slat() ? SHADOW_ROUNDS : 1;
}

// mov ecx, SHADOW_ROUNDS; then each round: CLI; OUT 0x5b (the VMM makes an
// MSI pending); STI; HLT; DEC ECX; JNZ to the CLI. The MSI must wake the HLT:
// STI's shadow holds it back for one instruction however the RUN goes.
static size_t put_shadow_rounds(uint8_t *c, uint32_t at)
{
	static const uint8_t round[] = {0xfa, 0xe7, 0x5b, 0xfb, 0xf4, 0xff, 0xc9, 0x75, 0xf7};
	size_t n = put(c, (const uint8_t[]){0xb9}, 1);

	n += put(c + n, (const uint8_t[]){shadow_rounds() & 0xff, shadow_rounds() >> 8, 0, 0}, 4);
	n += put(c + n, round, sizeof(round));
	rip_shadow = at + n - 4; // after the HLT
	return n;
}

static void write_code2(uint8_t *mem)
{
	static const uint8_t read_lvr[] = {0xb9, 0x30, 0x00, 0xe0, 0xfe, 0x8b, 0x01, 0xe7, 0x50};
	static const uint8_t sti_hlt[] = {0xfb, 0xf4}, cli[] = {0xfa};
	uint8_t *c = mem + CODE2;
	size_t n = 0;

	// Mask both 8259s, as a guest using the I/O APIC does: KVM_IRQ_LINE raises
	// a PIC line too (the in-kernel 8259s: no exit, kvmcheck_x86_pic.c).
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
	n += put_shadow_rounds(c + n, CODE2 + n);
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
	check("the irqchip guest's code ends before its stubs", n <= STUBS2 - CODE2, n,
	      STUBS2 - CODE2);
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
		size_t k = put(s, h0, sizeof(h0));
		s[k - 1] = 0x51 + 2 * i;
		k += put_store(s + k, 0xfee000b0, 0); // EOI
		put(s + k, h1, sizeof(h1));
		idt_gate(mem, 0x40 + i, STUBS2 + 0x20 * i);
	}
	put_spin_handler(mem);
}

// One KVM_RUN to an OUT of 4 bytes to `port`: its value, or 0xdeadbeef
// (no check counted: run_shadow_rounds counts its rounds itself).
static uint32_t quiet_out(int vcpu, struct kvm_run *run, uint16_t port)
{
	uint32_t v;

	alarm(RUN_LIMIT_S);
	int rc = ioctl(vcpu, KVM_RUN, 0);
	alarm(0);
	if (rc || run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
	    run->io.port != port || run->io.size != 4)
		return 0xdeadbeef;
	memcpy(&v, (const uint8_t *)run + run->io.data_offset, 4);
	return v;
}

// put_shadow_rounds' loop. A host interrupt that ends a RUN right after the
// STI leaves the guest in STI's shadow with the MSI pending: the next entry
// must keep the shadow (QEMU 7.2's VMRUN does not load it: svm_entry.S), or
// the MSI comes before the HLT and its handler sees the HLT's RIP.
static volatile int shootdown_stop;

// TLB shootdowns of this process: IPIs to the CPU that runs the vCPU, so that
// host interrupts end RUNs at many points of the guest's loop, right after
// its STI among them.
static void *shootdown_loop(void *arg)
{
	uint8_t *page = arg;

	while (!shootdown_stop) {
		mprotect(page, 4096, PROT_READ);
		mprotect(page, 4096, PROT_READ | PROT_WRITE);
		page[0]++;
	}
	return NULL;
}

static void run_shadow_rounds(int vm, int vcpu, struct kvm_run *run)
{
	const struct kvm_msi msi = {.address_lo = 0xfee00000, .data = MSI_VEC};
	unsigned rounds = 0, before_hlt = 0;
	uint8_t *page =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;

	shootdown_stop = 0;
	page[0] = 1;
	pthread_create(&t, NULL, shootdown_loop, page);

	for (; rounds < shadow_rounds(); rounds++) {
		if (quiet_out(vcpu, run, 0x5b) == 0xdeadbeef ||
		    ioctl(vm, KVM_SIGNAL_MSI, (void *)&msi) != 1)
			break;
		uint32_t v = quiet_out(vcpu, run, 0x57);
		if (v == rip_shadow - 1)
			before_hlt++;
		else if (v != rip_shadow)
			break;
	}
	shootdown_stop = 1;
	pthread_join(t, NULL);
	munmap(page, 4096);
	check("STI; HLT rounds, each with an MSI made pending at IF 0", rounds == shadow_rounds(),
	      rounds, shadow_rounds());
	check("every round's MSI taken at the HLT after STI, none in STI's shadow", before_hlt == 0,
	      before_hlt, 0);
}

static void run_irqchip_guest(int vm, int vcpu, struct kvm_run *run)
{
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
	run_shadow_rounds(vm, vcpu, run);
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

// KVM_GET/SET_IRQCHIP: the I/O APIC's image round-trips (the 8259s':
// kvmcheck_x86_pic.c).
static void check_ioapic_state(int vm)
{
	struct kvm_irqchip chip = {.chip_id = KVM_IRQCHIP_IOAPIC};

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

// With an in-kernel LAPIC, SREGS' CR8 is the TPR's bits 7:4 both ways (QEMU
// puts it back so on a migration's destination); s is left with CR8 0.
static void check_cr8_tpr(int vcpu, struct kvm_sregs *s)
{
	struct kvm_lapic_state ls;
	struct kvm_sregs back;

	s->cr8 = 5;
	expect("irqchip vCPU: SREGS with CR8 5", ioctl(vcpu, KVM_SET_SREGS, s), 0);
	expect("KVM_GET_LAPIC after CR8 5", ioctl(vcpu, KVM_GET_LAPIC, &ls), 0);
	expect("KVM_GET_SREGS after CR8 5", ioctl(vcpu, KVM_GET_SREGS, &back), 0);
	uint32_t tpr = *(uint32_t *)(ls.regs + 0x80);
	check("CR8 5 is TPR 0x50 and reads back 5", tpr == 0x50 && back.cr8 == 5, tpr, 0x50);
	s->cr8 = 0;
}

void check_irqchip(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup)
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
	check_cr8_tpr(vcpu, s);
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
	// KVM fills it at every exit; QEMU migrates what it reads there.
	check("run->apic_base after exits: 0xfee00900 (enabled, BSP)", run->apic_base == 0xfee00900,
	      run->apic_base, 0xfee00900);
	if (ap_ok) {
		expect_out(vcpu, run, 0x58, "INIT and STARTUP sent: OUT 0x58");
		check_ap_started(&ap);
		close(ap.vcpu);
	}
	close(vcpu);
	close(vm);
	munmap(mem, MEM_SZ);
}
