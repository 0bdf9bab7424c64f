// SPDX-License-Identifier: Apache-2.0
//
// The VM-wide part of the shared x86 exit layer: exception injection, stepping over instructions,
// XSETBV, port I/O with power-off / reset detection, second-level violations, and the shutdown that
// prints the exit summary. See vcpu.h for the contract and docs/x86-exits.md for the policy.
#include "arch/x86/cpu.h"
#include "arch/x86/cr_check.h"
#include "arch/x86/vcpu.h"
#include "core/hv.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/vm_arch.h"

#define PM1_SLP_EN (1u << 13)
#define RST_CPU	   (1u << 2) // reset control register (0xCF9): reset now
#define KBC_CMD	   0x64	     // keyboard controller: command 0xFE pulses the reset line
#define KBC_RESET  0xfe

static void port_write(uint16_t port, uint32_t value, unsigned size)
{
	if (size == 1)
		outb(port, (uint8_t)value);
	else if (size == 2)
		outw(port, (uint16_t)value);
	else
		outl(port, value);
}

static void io_report(void);

// A power-off no guest write asked for: ACPI S5 through the FADT's PM1
// control registers (SLP_TYP of the DSDT's \_S5_, 0 when unknown, as on
// QEMU's machines), a or b and both when there are two (ACPI 6.4, 7.4.2).
static void acpi_power_off(const struct x86_power_ports *p)
{
	uint16_t s5 = (uint16_t)((p->s5_known ? p->s5_slp_typ : 0) << 10 | PM1_SLP_EN);

	if (p->pm1b_cnt)
		outw(p->pm1b_cnt, s5);
	if (p->pm1a_cnt)
		outw(p->pm1a_cnt, s5);
}

__attribute__((noreturn)) void x86_vm_shutdown(struct vcpu *v, bool reset, uint16_t port,
					       uint32_t value, unsigned size)
{
	struct vm *vm = v->vm;

	if (!vm_begin_shutdown(vm))
		x86_park(); // another CPU is already shutting the machine down
	vm_teardown_and_report(vm, reset ? "reset" : "power-off");
	io_report();
	if (vm->arch.ops->summary)
		vm->arch.ops->summary();
	hv_print_summary();
	log_info("slat: %s\n", reset ? "resetting" : "powering off");
	log_flush();
	if (port) {
		port_write(port, value, size);
	} else if (reset) {
		outb(0xcf9, 0x02);
		outb(0xcf9, 0x06); // PC reset control: hard reset
	} else {
		acpi_power_off(&vm->arch.power); // Slat's own decision (a vCPU that cannot run)
	}
	for (unsigned i = 0; i < 1000000; i++)
		pause();
	log_err("slat: the %s request had no effect; halting\n", reset ? "reset" : "power-off");
	log_flush();
	x86_park();
}

// ---- injection and stepping ---------------------------------------------------
enum x86_action x86_inject_ud(struct vcpu *v)
{
	v->arch.ops->inject(v, X86_EXC_UD, false, 0);
	return X86_CONTINUE;
}

enum x86_action x86_inject_gp0(struct vcpu *v)
{
	v->arch.ops->inject(v, X86_EXC_GP, true, 0);
	return X86_CONTINUE;
}

bool x86_skip_insn(struct vcpu *v)
{
	unsigned len = v->arch.ops->insn_len(v);

	if (!len) {
		struct x86_insn in;
		if (!x86_decode(v, &in)) {
			static int seen;
			if (!__atomic_exchange_n(&seen, 1, __ATOMIC_RELAXED))
				log_warn("x86: cannot decode the instruction at 0x%llx on vcpu%u: "
					 "#UD\n",
					 (unsigned long long)v->arch.rip, v->index);
			x86_inject_ud(v);
			return false;
		}
		len = in.len;
	}
	v->arch.rip += len;
	v->arch.insn_done = true;
	return true;
}

unsigned x86_guest_cpl(struct vcpu *v)
{
	struct x86_seg ss;

	if (v->arch.ops->cpl)
		return v->arch.ops->cpl(v);
	v->arch.ops->read_seg(v, X86_SS, &ss);
	return (ss.attr >> 5) & 3; // SS.DPL is the CPL
}

// ---- XSETBV ---------------------------------------------------------------------

enum x86_action x86_handle_xsetbv(struct vcpu *v)
{
	uint32_t xcr = (uint32_t)v->arch.gpr[X86_RCX];
	uint64_t val = (v->arch.gpr[X86_RDX] << 32) | (uint32_t)v->arch.gpr[X86_RAX];
	struct x86_cr_caps caps;

	// The checks the CPU makes (SDM XSETBV, APM XSETBV): #GP(0) otherwise.
	x86_guest_cr_caps(v, &caps);
	if (x86_guest_cpl(v) != 0 || !x86_xcr_ok(&caps, xcr, val))
		return x86_inject_gp0(v);
	xsetbv(0, val);
	x86_skip_insn(v);
	return X86_CONTINUE;
}

// ---- port I/O -------------------------------------------------------------------
bool x86_io_intercepted(uint16_t port)
{
	const struct x86_power_ports *p = &x86_primary.arch.power;

	return port == KBC_CMD ||
	       (p->pm1a_cnt && (port == p->pm1a_cnt || port == p->pm1a_cnt + 1)) ||
	       (p->pm1b_cnt && (port == p->pm1b_cnt || port == p->pm1b_cnt + 1)) ||
	       (p->reset_port && port == p->reset_port);
}

static uint32_t port_read(uint16_t port, unsigned size)
{
	return size == 1 ? inb(port) : size == 2 ? inw(port) : inl(port);
}

// Records the port write that performs the guest's power-off or reset.
static enum x86_action shutdown_request(struct vcpu *v, enum x86_action a, const struct x86_io *io,
					uint32_t val)
{
	v->arch.shutdown.port = io->port;
	v->arch.shutdown.size = io->size;
	v->arch.shutdown.value = val;
	return a;
}

// A write to a PM1 control register that sets SLP_EN: power-off when the
// sleep type is S5's (or S5's is unknown), else a sleep state Slat cannot
// resume from, refused by dropping the write.
static enum x86_action pm1_write(struct vcpu *v, const struct x86_io *io, uint32_t val,
				 uint32_t val16)
{
	const struct x86_power_ports *p = &v->vm->arch.power;
	unsigned slp_typ = (val16 >> 10) & 7;

	if (p->s5_known && slp_typ != p->s5_slp_typ) {
		log_warn("x86: guest asked for ACPI sleep type %u (not S5): ignored\n", slp_typ);
		return X86_CONTINUE;
	}
	return shutdown_request(v, X86_POWER_OFF, io, val);
}

// Exits per intercepted port, for the summary (a handful of ports).
#define IO_STAT_PORTS 8
static uint16_t io_stat_port[IO_STAT_PORTS];
static uint64_t io_stat_count[IO_STAT_PORTS];

static void io_count(uint16_t port)
{
	for (unsigned i = 0; i < IO_STAT_PORTS; i++) {
		uint16_t p = __atomic_load_n(&io_stat_port[i], __ATOMIC_RELAXED);
		if (!p) {
			uint16_t zero = 0;
			if (!__atomic_compare_exchange_n(&io_stat_port[i], &zero, port, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
			    zero != port)
				continue;
			p = port;
		}
		if (p == port) {
			__atomic_fetch_add(&io_stat_count[i], 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

static void io_report(void)
{
	char buf[160];
	size_t len = 0;

	for (unsigned i = 0; i < IO_STAT_PORTS && io_stat_port[i]; i++)
		len += log_snprintf(buf + len, len < sizeof(buf) ? sizeof(buf) - len : 0,
				    "%s0x%x %llu", len ? ", " : "", io_stat_port[i],
				    (unsigned long long)io_stat_count[i]);
	if (len)
		log_info("slat: io exits by port: %s\n", buf);
}

// The I/O fast path: an access the policy has nothing to decide about (a
// read, or a write whose first port is not a power-off or reset port) is
// performed with the least work. The I/O permission map is checked per
// byte, so every 32-bit access to 0xCF8 (PCI configuration address) exits
// because it covers the intercepted reset port 0xCF9, ~23k times per Linux
// boot; a 32-bit access at 0xCF8 never reaches the 8-bit reset control
// register (PC chipsets decode 0xCF9 only as a byte). Counted like any
// other I/O exit.
bool x86_io_fast(struct vcpu *v, const struct x86_io *io, uint64_t *rax)
{
	uint32_t mask = io->size == 1 ? 0xff : io->size == 2 ? 0xffff : 0xffffffffu;

	if (io->string || (!io->in && x86_io_intercepted(io->port)))
		return false;
	vcpu_count_exit(v, EXIT_IO);
	io_count(io->port);
	if (io->in) {
		uint32_t val = port_read(io->port, io->size);
		*rax = io->size == 4 ? val : (*rax & ~(uint64_t)mask) | val;
	} else {
		port_write(io->port, (uint32_t)*rax & mask, io->size);
	}
	return true;
}

enum x86_action x86_handle_io(struct vcpu *v, const struct x86_io *io)
{
	const struct x86_power_ports *p = &v->vm->arch.power;

	io_count(io->port);
	uint32_t mask = io->size == 1 ? 0xff : io->size == 2 ? 0xffff : 0xffffffffu;

	if (io->string) {
		static int seen;
		if (!__atomic_exchange_n(&seen, 1, __ATOMIC_RELAXED))
			log_warn("x86: string I/O on intercepted port 0x%x: #GP\n", io->port);
		return x86_inject_gp0(v);
	}
	if (io->in) {
		uint32_t val = port_read(io->port, io->size);
		v->arch.gpr[X86_RAX] =
		    io->size == 4 ? val : (v->arch.gpr[X86_RAX] & ~(uint64_t)mask) | val;
		x86_skip_insn(v);
		return X86_CONTINUE;
	}
	uint32_t val = (uint32_t)v->arch.gpr[X86_RAX] & mask;
	x86_skip_insn(v); // the guest would continue after the OUT if it did nothing
	if (io->port == p->pm1a_cnt || (p->pm1b_cnt && io->port == p->pm1b_cnt)) {
		if (io->size >= 2 && (val & PM1_SLP_EN))
			return pm1_write(v, io, val, val);
	} else if (io->port == p->pm1a_cnt + 1 || (p->pm1b_cnt && io->port == p->pm1b_cnt + 1)) {
		if (val & (PM1_SLP_EN >> 8))
			return pm1_write(v, io, val, val << 8); // byte write of the high half
	} else if (io->port == p->reset_port && (val & RST_CPU)) {
		return shutdown_request(v, X86_RESET, io, val);
	} else if (io->port == KBC_CMD && val == KBC_RESET) {
		return shutdown_request(v, X86_RESET, io, val);
	}
	port_write(io->port, val, io->size);
	return X86_CONTINUE;
}

// ---- second-level violations ------------------------------------------------------
enum x86_action x86_handle_slat_violation(struct vcpu *v, uint64_t gpa, bool write, bool fetch)
{
	if (hv_primary_fault_retry(v, gpa))
		return X86_CONTINUE; // another CPU is changing this entry: retry the access
	if (vm_fault_first_report(gpa >> 12)) {
		bool ours = region_overlaps(&v->vm->hidden, gpa, 1);
		log_warn("slat: %s fault on %s at GPA 0x%llx (%s at CPL %u, RIP 0x%llx, vcpu%u): "
			 "injecting #GP(0)\n",
			 v->vm->slat_name, ours ? "Slat memory" : "an unmapped address",
			 (unsigned long long)gpa,
			 fetch	 ? "fetch"
			 : write ? "write"
				 : "read",
			 x86_guest_cpl(v), (unsigned long long)v->arch.rip, v->index);
	}
	return x86_inject_gp0(v);
}
