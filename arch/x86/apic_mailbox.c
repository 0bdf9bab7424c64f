// SPDX-License-Identifier: Apache-2.0
//
// The INIT/SIPI mailbox (../shared/design/svm-deprivilege.md): a real INIT
// must never reach a CPU that runs a guest (under SVM it resets the CPU out of
// guest mode or, intercepted, QEMU resets the host), so the primary's local
// APIC page is mapped read-only in the second-level tables and every write to
// it exits here. Ordinary writes are replayed on the real APIC by the CPU
// that made them (each CPU sees its own local APIC at the same address). ICR
// writes that send INIT or STARTUP are not replayed: an INIT moves each target
// vCPU's mailbox to "wait for SIPI", the INIT de-assert is dropped, a STARTUP
// posts its vector to targets that wait. Each vCPU's back end polls its
// mailbox on every exit (x86_mailbox_poll) and restarts the vCPU in real mode
// at vector << 12 when a SIPI arrived, as the hardware would.
//
// A target may be running its guest without exits (an OS halted with HLT not
// intercepted, e.g. a CPU the OS took offline): after an INIT the back end
// kicks it (x86_vm_ops.kick) so that it reaches its mailbox.
//
// Targets are matched by physical APIC ID, by logical ID (flat and cluster
// models, from the LDR/DFR values the guest wrote, which also exit here) and
// by shorthand. An INIT or SIPI to a physical APIC ID Slat does not run is
// passed to the hardware (that CPU is not virtualized; logged once).
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "core/log.h"

#define APIC_VERSION	   0x030
#define APIC_TPR	   0x080
#define APIC_EOI	   0x0b0
#define APIC_LDR	   0x0d0
#define APIC_DFR	   0x0e0
#define APIC_SVR	   0x0f0
#define APIC_ISR	   0x100
#define APIC_IRR	   0x200
#define APIC_ESR	   0x280
#define APIC_LVT_CMCI	   0x2f0
#define APIC_LVT_TIMER	   0x320
#define APIC_LVT_THERMAL   0x330
#define APIC_LVT_PERF	   0x340
#define APIC_LVT_LINT0	   0x350
#define APIC_LVT_LINT1	   0x360
#define APIC_LVT_ERROR	   0x370
#define APIC_TIMER_INITIAL 0x380
#define APIC_TIMER_DIVIDE  0x3e0
#define LVT_MASKED	   (1u << 16)
#define APIC_ICR_LO	   0x300
#define APIC_ICR_HI	   0x310
#define ICR_MODE(l)	   (((l) >> 8) & 7)
#define ICR_LOGICAL	   (1u << 11)
#define ICR_ASSERT	   (1u << 14)
#define ICR_SH(l)	   (((l) >> 18) & 3)
#define MODE_INIT	   5
#define MODE_STARTUP	   6

static volatile uint32_t *apic_reg(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(x86_primary.arch.apic_base + off);
}

// Any bit set in the 256-bit register at `base` (ISR, IRR).
static bool apic_any(unsigned base)
{
	for (unsigned off = base; off < base + 0x80; off += 0x10)
		if (*apic_reg(off))
			return true;
	return false;
}

static void apic_retire_in_service(void)
{
	for (unsigned i = 0; i < 256 && apic_any(APIC_ISR); i++)
		*apic_reg(APIC_EOI) = 0; // retires the highest in-service vector
}

static bool targets(const struct vcpu *t, const struct vcpu *self, uint32_t lo, uint32_t dest)
{
	switch (ICR_SH(lo)) {
	case 1:
		return t == self;
	case 2:
		return true;
	case 3:
		return t != self;
	default:
		break;
	}
	if (!(lo & ICR_LOGICAL))
		return dest == 0xff || (uint32_t)t->hw_id == dest;
	uint32_t ldr = t->arch.apic_ldr >> 24;
	if ((t->arch.apic_dfr >> 28) == 0xf) // flat model: a bit per CPU
		return (ldr & dest) != 0;
	return dest == 0xff || ((ldr >> 4) == (dest >> 4) && (ldr & dest & 0xf)); // cluster
}

static void post(struct vcpu *t, unsigned mode, uint8_t vector)
{
	if (mode == MODE_INIT) {
		__atomic_store_n(&t->arch.mbox_state, X86_MBOX_WAIT_SIPI, __ATOMIC_RELEASE);
		return;
	}
	// A STARTUP counts only for a CPU that waits for one (as in hardware; the
	// second SIPI of the INIT-SIPI-SIPI sequence is dropped).
	int expect = X86_MBOX_WAIT_SIPI;
	t->arch.sipi_vector = vector;
	__atomic_compare_exchange_n(&t->arch.mbox_state, &expect, X86_MBOX_SIPI, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// An ICR low write from `v`; returns true when it was consumed (not replayed).
static bool icr_write(struct vcpu *v, uint32_t lo)
{
	unsigned mode = ICR_MODE(lo);

	if (mode != MODE_INIT && mode != MODE_STARTUP)
		return false;
	if (mode == MODE_INIT && !(lo & ICR_ASSERT))
		return true;			      // INIT level de-assert: nothing to do
	uint32_t dest = *apic_reg(APIC_ICR_HI) >> 24; // the guest's ICR high, already replayed
	unsigned hits = 0;

	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		struct vcpu *t = &x86_primary.vcpus[i];
		if (!vcpu_has_run(t) || !targets(t, v, lo, dest))
			continue;
		post(t, mode, (uint8_t)lo);
		hits++;
		if (mode == MODE_INIT && t != v && x86_primary.arch.ops->kick) {
			__atomic_store_n(&t->arch.kicks, 1, __ATOMIC_RELEASE);
			x86_primary.arch.ops->kick(t);
		}
	}
	log_debug("x86: vcpu%u sends %s (ICR 0x%x, dest 0x%x) to %u vCPU(s)\n", v->index,
		  mode == MODE_INIT ? "INIT" : "SIPI", lo, dest, hits);
	if (!hits && ICR_SH(lo) == 0 && !(lo & ICR_LOGICAL) && dest != 0xff) {
		static int seen;
		if (!__atomic_exchange_n(&seen, 1, __ATOMIC_RELAXED))
			log_warn("x86: %s to APIC ID %u, which Slat does not run: passed through\n",
				 mode == MODE_INIT ? "INIT" : "SIPI", dest);
		return false;
	}
	return true;
}

static bool write_value(struct vcpu *v, const struct x86_insn *in, unsigned off, uint32_t *val)
{
	if (in->two_byte)
		return false;
	switch (in->opcode) {
	case 0x89: // MOV r/m32, r32
		*val = (uint32_t)v->arch.gpr[in->reg];
		return in->op_size == 4;
	case 0xc7: // MOV r/m32, imm32
		*val = (uint32_t)in->imm;
		return in->op_size == 4;
	case 0xa3: // MOV moffs32, EAX
		*val = (uint32_t)v->arch.gpr[X86_RAX];
		return in->op_size == 4;
	case 0x87: // XCHG r/m32, r32: the register gets the old value
		if (in->op_size != 4)
			return false;
		*val = (uint32_t)v->arch.gpr[in->reg];
		v->arch.gpr[in->reg] = *apic_reg(off);
		return true;
	default:
		return false;
	}
}

enum x86_action x86_handle_apic_write(struct vcpu *v, uint64_t gpa)
{
	unsigned off = (unsigned)(gpa - x86_primary.arch.apic_base) & 0xff0;
	struct x86_insn in;
	uint32_t val;

	if (!x86_decode(v, &in) || !write_value(v, &in, off, &val)) {
		static int seen;
		if (!__atomic_exchange_n(&seen, 1, __ATOMIC_RELAXED))
			log_warn(
			    "x86: APIC write at 0x%llx by an instruction Slat does not emulate "
			    "(RIP 0x%llx): #GP\n",
			    (unsigned long long)gpa, (unsigned long long)v->arch.rip);
		return x86_inject_gp0(v);
	}
	unsigned len = v->arch.ops->insn_len(v);
	v->arch.rip += len ? len : in.len;
	if (off == APIC_LDR)
		v->arch.apic_ldr = val;
	else if (off == APIC_DFR)
		v->arch.apic_dfr = val;
	if (off == APIC_ICR_LO && icr_write(v, val))
		return X86_CONTINUE;
	*apic_reg(off) = val;
	return X86_CONTINUE;
}

bool x86_mailbox_pending(const struct vcpu *v)
{
	return __atomic_load_n(&v->arch.mbox_state, __ATOMIC_ACQUIRE) != X86_MBOX_RUNNING;
}

// What INIT does to a local APIC (SDM 10.4.7.3, APM 16.3.2), done by the
// target CPU on its own APIC since the real INIT never reaches it: every LVT
// masked, the timer stopped, TPR, LDR and ESR cleared, DFR all ones, the
// in-service interrupts retired (EOIs) and the APIC software-disabled
// (SVR 0xFF). Without this the next code started by SIPI inherits the old
// APIC: a running timer or a pending vector arrives as soon as it enables
// interrupts, before it has an IDT for it (a #GP or worse). Pending vectors
// (IRR) cannot be cleared by software: the host takes them in a short
// interrupt window (x86_vm_ops.irq_window) and retires them. Not reset: the
// ICR (a write would send an IPI).
static void apic_init_state(struct vcpu *v)
{
	unsigned max_lvt = (*apic_reg(APIC_VERSION) >> 16) & 0xff;

	*apic_reg(APIC_TIMER_INITIAL) = 0;
	*apic_reg(APIC_TIMER_DIVIDE) = 0;
	*apic_reg(APIC_LVT_TIMER) = LVT_MASKED;
	*apic_reg(APIC_LVT_LINT0) = LVT_MASKED;
	*apic_reg(APIC_LVT_LINT1) = LVT_MASKED;
	if (max_lvt >= 3)
		*apic_reg(APIC_LVT_ERROR) = LVT_MASKED;
	if (max_lvt >= 4)
		*apic_reg(APIC_LVT_PERF) = LVT_MASKED;
	if (max_lvt >= 5)
		*apic_reg(APIC_LVT_THERMAL) = LVT_MASKED;
	if (max_lvt >= 6)
		*apic_reg(APIC_LVT_CMCI) = LVT_MASKED;
	*apic_reg(APIC_TPR) = 0;
	*apic_reg(APIC_LDR) = 0;
	*apic_reg(APIC_DFR) = 0xffffffff;
	v->arch.apic_ldr = 0;
	v->arch.apic_dfr = 0xffffffff;
	apic_retire_in_service();
	// Vectors still pending: the host accepts them (the APIC delivers only
	// while software-enabled) and retires them.
	for (unsigned round = 0; round < 8 && apic_any(APIC_IRR); round++) {
		*apic_reg(APIC_SVR) = 0x1ff;
		if (x86_primary.arch.ops->irq_window)
			x86_primary.arch.ops->irq_window(v);
		apic_retire_in_service();
	}
	*apic_reg(APIC_ESR) = 0;
	*apic_reg(APIC_ESR) = 0; // ESR is write-then-read; twice clears it
	*apic_reg(APIC_SVR) = 0xff;
}

bool x86_mailbox_poll(struct vcpu *v, uint8_t *vector)
{
	int st = __atomic_load_n(&v->arch.mbox_state, __ATOMIC_ACQUIRE);

	if (st == X86_MBOX_RUNNING)
		return false;
	apic_init_state(v);		   // an INIT arrived (maybe its SIPI too)
	while (st == X86_MBOX_WAIT_SIPI) { // INIT: this CPU does nothing until a SIPI
		if (vm_is_shutting_down(v->vm))
			x86_park();
		pause();
		st = __atomic_load_n(&v->arch.mbox_state, __ATOMIC_ACQUIRE);
	}
	*vector = v->arch.sipi_vector;
	// An INIT that arrives after this store starts the next round.
	int expect = X86_MBOX_SIPI;
	__atomic_compare_exchange_n(&v->arch.mbox_state, &expect, X86_MBOX_RUNNING, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return true;
}

void x86_kick_nmi(struct vcpu *t)
{
	volatile uint32_t *apic = (volatile uint32_t *)(uintptr_t)x86_primary.arch.apic_base;
	uint32_t hi = apic[0x310 / 4];

	for (unsigned i = 0; i < 100000 && (apic[0x300 / 4] & (1u << 12)); i++)
		pause(); // a previous IPI still being sent
	apic[0x310 / 4] = (uint32_t)t->hw_id << 24;
	apic[0x300 / 4] = (4u << 8) | (1u << 14); // NMI, assert, physical destination
	apic[0x310 / 4] = hi;
}

bool x86_consume_kick(struct vcpu *v)
{
	return __atomic_exchange_n(&v->arch.kicks, 0, __ATOMIC_ACQ_REL) != 0;
}
