// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): the 8259 pair and the 8254 PIT of the in-kernel
// irqchip (KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2), in a third VM: the PIT's
// ioctls and refusals, the PIT and PIC state images (KVM_GET/SET_PIT2,
// KVM_GET/SET_IRQCHIP chips 0 and 1), then a guest that programs both chips
// through their ports (answered in the kernel: the first exit the VMM sees
// is the guest's report), takes an IRQ 3 that the VMM raises with
// KVM_IRQ_LINE through the 8259 and its local APIC's LINT0 (ExtINT) exactly
// once, and a tick of the PIT's counter 0 on IRQ 0 the same way.
#include "kvmcheck_x86.h"

#define PIC_CODE   0x12000u
#define PIC_STUBS  0x12800u // one 0x20-byte stub per vector PIC_BASE..PIC_BASE+15
#define PIC_COUNT  0x13000u // u32 per vector: how many times each was taken
#define PIC_BASE   0x48	    // ICW2 of the master; the slave's is PIC_BASE + 8
#define PIC_IRQ	   3	    // the line the VMM raises
#define PIT_COUNT0 11932    // 10 ms at 1.193182 MHz

static size_t out_al(uint8_t *c, uint8_t port, uint8_t val)
{
	const uint8_t b[] = {0xb0, val, 0xe6, port}; // mov al, val; out port, al
	return put(c, b, sizeof(b));
}

// in al, port; movzx eax, al; out report, eax
static size_t report_in(uint8_t *c, uint8_t port, uint8_t report)
{
	const uint8_t b[] = {0xe4, port, 0x0f, 0xb6, 0xc0, 0xe7, report};
	return put(c, b, sizeof(b));
}

// mov eax, [PIC_COUNT + 4 * vector offset]; out report, eax
static size_t report_count(uint8_t *c, unsigned irq, uint8_t report)
{
	uint32_t at = PIC_COUNT + 4 * irq;
	uint8_t b[] = {0x8b, 0x04, 0x25, 0, 0, 0, 0, 0xe7, report};
	memcpy(b + 3, &at, 4);
	return put(c, b, sizeof(b));
}

// Each vector's stub: count it, a non-specific EOI to the master, IRETQ.
static void write_stubs(uint8_t *mem)
{
	for (unsigned i = 0; i < 16; i++) {
		uint8_t *s = mem + PIC_STUBS + 0x20 * i;
		uint32_t at = PIC_COUNT + 4 * i;
		uint8_t b[] = {0x50, 0xff, 0x04, 0x25, 0, 0, 0, 0, // push rax; inc dword [at]
			       0xb0, 0x20, 0xe6, 0x20,		   // OCW2: EOI
			       0x58, 0x48, 0xcf};		   // pop rax; iretq
		memcpy(b + 4, &at, 4);
		memcpy(s, b, sizeof(b));
		idt_gate(mem, PIC_BASE + i, PIC_STUBS + 0x20 * i);
	}
}

static void write_pic_code(uint8_t *mem)
{
	static const uint8_t sti_hlt[] = {0xfb, 0xf4}, cli[] = {0xfa};
	// ecx = 20000; loop $ (IF 1: a second delivery would come here)
	static const uint8_t spin[] = {0xfb, 0xb9, 0x20, 0x4e, 0x00, 0x00, 0xe2, 0xfe, 0xfa};
	// latch counter 0, read it LSB then MSB into cx, out 0x75, eax (zero-extended)
	static const uint8_t latch[] = {0xb0, 0x00, 0xe6, 0x43, 0xe4, 0x40, 0x88, 0xc1, 0xe4,
					0x40, 0x88, 0xc5, 0x0f, 0xb7, 0xc1, 0xe7, 0x75};
	uint8_t *c = mem + PIC_CODE;
	size_t n = 0;

	n += put_store(c + n, 0xfee000f0, 0x1ff); // SVR: enabled
	n += put_store(c + n, 0xfee00350, 0x700); // LVT0: ExtINT, unmasked (virtual wire)
	// ICW1-ICW4 of the master (vectors PIC_BASE.., slave on IR2) and the slave.
	n += out_al(c + n, 0x20, 0x11);
	n += out_al(c + n, 0x21, PIC_BASE);
	n += out_al(c + n, 0x21, 0x04);
	n += out_al(c + n, 0x21, 0x01);
	n += out_al(c + n, 0xa0, 0x11);
	n += out_al(c + n, 0xa1, PIC_BASE + 8);
	n += out_al(c + n, 0xa1, 0x02);
	n += out_al(c + n, 0xa1, 0x01);
	n += out_al(c + n, 0x21, (uint8_t) ~(1u << PIC_IRQ)); // OCW1: only IRQ 3
	n += out_al(c + n, 0xa1, 0xff);
	n += report_in(c + n, 0x21, 0x70); // the IMR, read in the kernel
	n += put(c + n, cli, 1);
	n += put(c + n, (const uint8_t[]){0xe7, 0x71}, 2); // the VMM raises IRQ 3
	n += put(c + n, sti_hlt, 2);
	n += put(c + n, spin, sizeof(spin));
	n += report_count(c + n, PIC_IRQ, 0x72);
	n += out_al(c + n, 0x20, 0x0b);	   // OCW3: read ISR
	n += report_in(c + n, 0x20, 0x73); // nothing in service after the EOI
	// The PIT: counter 0, LSB+MSB, mode 2, 10 ms; only IRQ 0 open.
	n += out_al(c + n, 0x21, 0xfe);
	n += out_al(c + n, 0x43, 0x34);
	n += out_al(c + n, 0x40, PIT_COUNT0 & 0xff);
	n += out_al(c + n, 0x40, PIT_COUNT0 >> 8);
	n += put(c + n, sti_hlt, 2);
	n += put(c + n, cli, 1);
	n += out_al(c + n, 0x21, 0xff); // every line masked again
	n += report_count(c + n, 0, 0x74);
	n += put(c + n, latch, sizeof(latch));
	n += report_in(c + n, 0x61, 0x76); // no dummy speaker: port 0x61 is the VMM's
	n += put(c + n, (const uint8_t[]){0xe7, 0x77, 0xeb, 0xfe}, 4); // out 0x77; jmp $
}

// KVM_GET/SET_PIT2: the reset image, then one that must come back as set.
static void check_pit_state(int vm)
{
	struct kvm_pit_state2 st, back;

	memset(&st, 0xa5, sizeof(st));
	expect("KVM_GET_PIT2", ioctl(vm, KVM_GET_PIT2, &st), 0);
	check("PIT reset: counters 0x10000, counter 2's gate low, flags 0",
	      st.channels[0].count == 0x10000 && st.channels[1].count == 0x10000 &&
		  st.channels[0].gate == 1 && st.channels[2].gate == 0 && st.flags == 0,
	      st.channels[0].count, 0x10000);
	st.channels[1].mode = 2;
	st.channels[1].count = 1000;
	st.channels[1].rw_mode = 3;
	st.channels[1].read_state = 3;
	st.channels[1].write_state = 3;
	st.channels[1].latched_count = 0x1234;
	st.channels[1].count_latched = 3;
	st.channels[2].gate = 1;
	st.channels[2].bcd = 0;
	st.flags = KVM_PIT_FLAGS_HPET_LEGACY;
	expect("KVM_SET_PIT2", ioctl(vm, KVM_SET_PIT2, &st), 0);
	expect("KVM_GET_PIT2 after it", ioctl(vm, KVM_GET_PIT2, &back), 0);
	struct kvm_pit_channel_state *a = &st.channels[1], *b = &back.channels[1];
	check("PIT2 round trip: counter 1, counter 2's gate, HPET_LEGACY",
	      b->mode == a->mode && b->count == a->count && b->rw_mode == a->rw_mode &&
		  b->read_state == a->read_state && b->write_state == a->write_state &&
		  b->latched_count == a->latched_count && b->count_latched == a->count_latched &&
		  back.channels[2].gate == 1 && back.flags == KVM_PIT_FLAGS_HPET_LEGACY,
	      b->count, a->count);
	struct kvm_pit_state old;
	expect("KVM_GET_PIT (the first version)", ioctl(vm, KVM_GET_PIT, &old), 0);
	check("KVM_GET_PIT: counter 1's count", old.channels[1].count == 1000,
	      old.channels[1].count, 1000);
	st.flags = 0; // the HPET gives IRQ 0 back: counter 0 may tick again
	st.channels[1].count_latched = 0;
	expect("KVM_SET_PIT2 without HPET_LEGACY", ioctl(vm, KVM_SET_PIT2, &st), 0);
	struct kvm_reinject_control rc = {.pit_reinject = 1};
	expect("KVM_REINJECT_CONTROL", ioctl(vm, KVM_REINJECT_CONTROL, &rc), 0);
}

// KVM_GET/SET_IRQCHIP of both 8259s: KVM's reset ELCR masks, then a round trip.
static void check_pic_state(int vm)
{
	struct kvm_irqchip m = {.chip_id = KVM_IRQCHIP_PIC_MASTER};
	struct kvm_irqchip s = {.chip_id = KVM_IRQCHIP_PIC_SLAVE};

	expect("KVM_GET_IRQCHIP: PIC master", ioctl(vm, KVM_GET_IRQCHIP, &m), 0);
	expect("KVM_GET_IRQCHIP: PIC slave", ioctl(vm, KVM_GET_IRQCHIP, &s), 0);
	check("8259 reset: ELCR masks 0xf8 and 0xde, nothing masked or pending",
	      m.chip.pic.elcr_mask == 0xf8 && s.chip.pic.elcr_mask == 0xde && !m.chip.pic.imr &&
		  !m.chip.pic.irr && !m.chip.pic.isr,
	      m.chip.pic.elcr_mask << 8 | s.chip.pic.elcr_mask, 0xf8de);
	struct kvm_irqchip set = s, back = {.chip_id = KVM_IRQCHIP_PIC_SLAVE};
	struct kvm_pic_state *p = &set.chip.pic;
	p->imr = 0x5a;
	p->irq_base = 0x70;
	p->elcr = 0x0c;
	p->priority_add = 3;
	p->auto_eoi = 1;
	p->special_fully_nested_mode = 1;
	p->read_reg_select = 1;
	p->init4 = 1;
	expect("KVM_SET_IRQCHIP: PIC slave", ioctl(vm, KVM_SET_IRQCHIP, &set), 0);
	expect("KVM_GET_IRQCHIP: PIC slave after it", ioctl(vm, KVM_GET_IRQCHIP, &back), 0);
	check("PIC slave round trip (all 16 bytes)", !memcmp(&back.chip.pic, p, sizeof(*p)),
	      back.chip.pic.imr, p->imr);
	expect("KVM_SET_IRQCHIP: PIC slave back", ioctl(vm, KVM_SET_IRQCHIP, &s), 0);
	struct kvm_irqchip bad = {.chip_id = 3};
	expect("KVM_GET_IRQCHIP: chip 3", ioctl(vm, KVM_GET_IRQCHIP, &bad), EINVAL);
}

// The capabilities and KVM_CREATE_PIT2's answers, as KVM 6.1 gives them.
static void check_pit_ioctls(int kvm, int vm)
{
	static const struct {
		long cap;
		const char *name;
	} caps[] = {{KVM_CAP_PIT, "KVM_CAP_PIT"},
		    {KVM_CAP_PIT2, "KVM_CAP_PIT2"},
		    {KVM_CAP_PIT_STATE2, "KVM_CAP_PIT_STATE2"},
		    {KVM_CAP_REINJECT_CONTROL, "KVM_CAP_REINJECT_CONTROL"}};
	struct kvm_pit_config cfg = {.flags = 0};
	struct kvm_pit_state2 st;

	for (unsigned i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		long n = ioctl(kvm, KVM_CHECK_EXTENSION, caps[i].cap);
		check(caps[i].name, n == 1, n, 1);
	}
	expect("KVM_GET_PIT2 before KVM_CREATE_PIT2", ioctl(vm, KVM_GET_PIT2, &st), ENXIO);
	struct kvm_reinject_control rc = {.pit_reinject = 0};
	expect("KVM_REINJECT_CONTROL without a PIT", ioctl(vm, KVM_REINJECT_CONTROL, &rc), ENXIO);
	expect("KVM_CREATE_PIT2", ioctl(vm, KVM_CREATE_PIT2, &cfg), 0);
	expect("KVM_CREATE_PIT2 twice", ioctl(vm, KVM_CREATE_PIT2, &cfg), EEXIST);
	expect("KVM_CREATE_PIT after KVM_CREATE_PIT2", ioctl(vm, KVM_CREATE_PIT, 0), EEXIST);
	expect("KVM_CREATE_PIT2 with a bad address", ioctl(vm, KVM_CREATE_PIT2, (void *)8), EFAULT);
	// KVM 6.1 makes a PIT without an irqchip too (its counter 0 then
	// raises nothing): no refusal to copy.
	int bare = ioctl(kvm, KVM_CREATE_VM, 0);
	expect("KVM_CREATE_PIT2 without an irqchip (KVM 6.1: made)",
	       ioctl(bare, KVM_CREATE_PIT2, &cfg), 0);
	expect("KVM_GET_PIT2 of it", ioctl(bare, KVM_GET_PIT2, &st), 0);
	close(bare);
}

static void run_pic_guest(int vm, int vcpu, struct kvm_run *run)
{
	uint32_t v = expect_out(vcpu, run, 0x70, "8259 guest: first exit, OUT 0x70 (the IMR)");
	check("the 8259s' ports answered in the kernel; IMR 0xf7", v == 0xf7, v, 0xf7);
	if (expect_out(vcpu, run, 0x71, "OUT 0x71 (IF 0)") == 0xdeadbeef)
		return;
	struct kvm_irq_level line = {.irq = PIC_IRQ, .level = 1};
	expect("KVM_IRQ_LINE GSI 3 up", ioctl(vm, KVM_IRQ_LINE, &line), 0);
	line.level = 0;
	expect("KVM_IRQ_LINE GSI 3 down", ioctl(vm, KVM_IRQ_LINE, &line), 0);
	v = expect_out(vcpu, run, 0x72, "IRQ 3 through the 8259: its count");
	check("IRQ 3 taken exactly once, at its vector (ExtINT through LINT0)", v == 1, v, 1);
	v = expect_out(vcpu, run, 0x73, "ISR after the EOI");
	check("8259 ISR empty after the EOI", v == 0, v, 0);
	v = expect_out(vcpu, run, 0x74, "PIT counter 0 on IRQ 0: its count");
	check("a PIT tick taken on IRQ 0 through the 8259", v >= 1 && v < 100, v, 1);
	v = expect_out(vcpu, run, 0x75, "PIT counter 0 latched");
	check("counter 0's latched count within its 10 ms period", v >= 1 && v <= PIT_COUNT0, v,
	      PIT_COUNT0);
	bool in = run_to(vcpu, run, KVM_EXIT_IO, "IN from port 0x61: an exit to the VMM");
	check("port 0x61 without KVM_PIT_SPEAKER_DUMMY: the VMM's",
	      in && run->io.direction == KVM_EXIT_IO_IN && run->io.port == 0x61 &&
		  run->io.size == 1,
	      in ? run->io.port : 0, 0x61);
	if (in)
		*((uint8_t *)run + run->io.data_offset) = 0x20;
	v = expect_out(vcpu, run, 0x76, "the VMM's answer from port 0x61");
	check("port 0x61: the VMM's byte", v == 0x20, v, 0x20);
	expect_out(vcpu, run, 0x77, "8259 guest: done, OUT 0x77");
}

void check_pic_pit(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup)
{
	int vm = ioctl(kvm, KVM_CREATE_VM, 0), vcpu;
	uint8_t *mem =
	    mmap(NULL, MEM_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (vm < 0 || mem == MAP_FAILED) {
		check("8259/PIT VM", false, 0, 1);
		return;
	}
	expect("8259/PIT VM: KVM_CREATE_IRQCHIP", ioctl(vm, KVM_CREATE_IRQCHIP, 0), 0);
	check_pit_ioctls(kvm, vm);
	check_pit_state(vm);
	check_pic_state(vm);
	write_tables(mem);
	uint64_t *pdpt = (uint64_t *)(mem + PDPT), *pd3 = (uint64_t *)(mem + PD3);
	pdpt[3] = PD3 | 3;
	pd3[(0xfee00000u - 0xc0000000u) >> 21] = 0xfee00000u | 0x9b; // the APIC page, uncached
	write_stubs(mem);
	write_pic_code(mem);
	expect("8259/PIT VM: region", region(vm, 0, 0, 0, MEM_SZ, mem), 0);
	struct kvm_run *run = new_vcpu(kvm, vm, 0, &vcpu);
	if (!run) {
		check("8259/PIT vCPU", false, 0, 1);
		close(vm);
		return;
	}
	expect("8259/PIT vCPU: KVM_SET_CPUID2", ioctl(vcpu, KVM_SET_CPUID2, sup), 0);
	struct kvm_sregs ps = *s;
	ps.idt.limit = 16 * (PIC_BASE + 16) - 1;
	ps.cr8 = 0;
	struct kvm_regs r = {.rip = PIC_CODE, .rflags = 0x2, .rsp = STACK_TOP};
	expect("8259/PIT vCPU: SREGS", ioctl(vcpu, KVM_SET_SREGS, &ps), 0);
	expect("8259/PIT vCPU: REGS", ioctl(vcpu, KVM_SET_REGS, &r), 0);
	run_pic_guest(vm, vcpu, run);
	uint32_t stray = 0;
	for (unsigned i = 0; i < 16; i++)
		if (i != PIC_IRQ && i != 0)
			stray += *(uint32_t *)(mem + PIC_COUNT + 4 * i);
	check("no other 8259 vector taken (spurious IR7, a second line)", stray == 0, stray, 0);
	close(vcpu);
	close(vm); // the PIT's timer stops with the VM
	munmap(mem, MEM_SZ);
}
