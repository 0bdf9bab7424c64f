// SPDX-License-Identifier: Apache-2.0
//
// The arm64 slat-kvm-check's AArch64 instruction encoder and vCPU helpers
// (kvmcheck_arm64.h).
#include "kvmcheck_arm64.h"

int one_reg(int vcpu, uint64_t id, uint64_t *val, bool set)
{
	struct kvm_one_reg r = {.id = id, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(vcpu, set ? KVM_SET_ONE_REG : KVM_GET_ONE_REG, &r);
}

int vcpu_attr(int vcpu, unsigned long cmd, uint32_t group, uint64_t attr, void *val)
{
	struct kvm_device_attr a = {.group = group, .attr = attr, .addr = (uint64_t)(uintptr_t)val};

	return ioctl(vcpu, cmd, &a);
}

/*
 * KVM_GET_REG_LIST of an initialised vCPU without PMU, SVE or pointer auth:
 * KVM 6.1 lists 239 registers besides the caches' CCSIDRs (DEMUX ids, as
 * many as the host's CLIDR_EL1 names): get-reg-list's base and vregs lists.
 * Every one reads; a read-only one (CTR_EL0) takes its own value back and
 * refuses another (KVM's -EINVAL); MDSCR_EL1 and CSSELR_EL1 keep what is set
 * (Slat's register page, ABI 1.16).
 */
#define REG_LIST_NOT_DEMUX 239u
#define CTR_EL0_ID	   ARM64_SYS_REG(3, 3, 0, 0, 1)
#define MDSCR_EL1_ID	   ARM64_SYS_REG(2, 0, 0, 2, 2)
#define CSSELR_EL1_ID	   ARM64_SYS_REG(3, 2, 0, 0, 0)
#define DBGBVR0_EL1_ID	   ARM64_SYS_REG(2, 0, 0, 0, 4)
#define MDSCR_TDCC	   (1ull << 12) // EL0 debug channel traps: nothing an EL1 guest notices

static void check_reg_round_trip(int vcpu, const char *what, uint64_t id, uint64_t val)
{
	uint64_t got = ~val;
	char name[96];

	expect(what, one_reg(vcpu, id, &val, true), 0);
	one_reg(vcpu, id, &got, false);
	snprintf(name, sizeof(name), "%s: reads back", what);
	check(name, got == val, got, val);
	val = 0;
	one_reg(vcpu, id, &val, true);
}

void check_reg_list(int vcpu)
{
	struct kvm_reg_list probe = {.n = 0}, *l;
	unsigned i, not_demux = 0, unread = 0;
	uint64_t v = 0, buf[2];

	ioctl(vcpu, KVM_GET_REG_LIST, &probe);
	l = calloc(1, sizeof(*l) + probe.n * sizeof(l->reg[0]));
	if (!l)
		return;
	l->n = probe.n;
	expect("KVM_GET_REG_LIST", ioctl(vcpu, KVM_GET_REG_LIST, l), 0);
	for (i = 0; i < l->n; i++) {
		struct kvm_one_reg r = {.id = l->reg[i], .addr = (uint64_t)(uintptr_t)buf};

		if ((l->reg[i] & KVM_REG_ARM_COPROC_MASK) != KVM_REG_ARM_DEMUX)
			not_demux++;
		if (ioctl(vcpu, KVM_GET_ONE_REG, &r))
			unread++;
	}
	say("KVM_GET_REG_LIST: %u ids, %u of them CCSIDR (DEMUX)", (unsigned)l->n,
	    (unsigned)l->n - not_demux);
	check("KVM_GET_REG_LIST: KVM 6.1's registers besides the CCSIDRs",
	      not_demux == REG_LIST_NOT_DEMUX, not_demux, REG_LIST_NOT_DEMUX);
	check("every listed register reads", unread == 0, unread, 0);
	free(l);
	expect("GET CTR_EL0", one_reg(vcpu, CTR_EL0_ID, &v, false), 0);
	expect("SET CTR_EL0 to its value", one_reg(vcpu, CTR_EL0_ID, &v, true), 0);
	v ^= 1;
	expect("SET CTR_EL0 to another value (read only)", one_reg(vcpu, CTR_EL0_ID, &v, true),
	       EINVAL);
	check_reg_round_trip(vcpu, "SET MDSCR_EL1.TDCC", MDSCR_EL1_ID, MDSCR_TDCC);
	check_reg_round_trip(vcpu, "SET CSSELR_EL1 = 1 (L1 instruction cache)", CSSELR_EL1_ID, 1);
	v = 0x1000;
	if (on_slat()) // KVM keeps breakpoints; a guest on Slat reads its debug registers as 0
		expect("SET DBGBVR0_EL1 to another value than 0",
		       one_reg(vcpu, DBGBVR0_EL1_ID, &v, true), EINVAL);
}

// AArch64 encodings of the few instructions the guest needs.
uint32_t movz(unsigned rd, uint16_t imm, unsigned hw)
{
	return 0xD2800000u | hw << 21 | (uint32_t)imm << 5 | rd;
}
uint32_t movk(unsigned rd, uint16_t imm, unsigned hw)
{
	return 0xF2800000u | hw << 21 | (uint32_t)imm << 5 | rd;
}

void emit(struct code *c, uint32_t insn)
{
	c->p[c->n++] = insn;
}

void mov64(struct code *c, unsigned rd, uint64_t v)
{
	emit(c, movz(rd, v & 0xffff, 0));
	for (unsigned hw = 1; hw < 4; hw++)
		emit(c, movk(rd, (v >> (16 * hw)) & 0xffff, hw));
}

uint32_t cbz_back(const struct code *c, unsigned rt, unsigned to)
{
	return 0xB4000000u | ((uint32_t)((int)to - (int)c->n) & 0x7ffff) << 5 | rt;
}
uint32_t bne_back(const struct code *c, unsigned to)
{
	return 0x54000001u | ((uint32_t)((int)to - (int)c->n) & 0x7ffff) << 5;
}

// x0 = fn, x1..x3 = args (x1 = x20, the target's MPIDR, when a1 is ~0), HVC.
void call(struct code *c, uint32_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	mov64(c, 0, fn);
	if (a1 == ~0ull)
		emit(c, MOV_X(1, 20));
	else
		mov64(c, 1, a1);
	mov64(c, 2, a2);
	mov64(c, 3, a3);
	emit(c, HVC0);
}

// A forward branch: emit a placeholder, patch it at the target.
unsigned fwd(struct code *c)
{
	emit(c, 0);
	return c->n - 1;
}
void land_bcond(struct code *c, unsigned at, unsigned cond)
{
	c->p[at] = 0x54000000u | ((c->n - at) & 0x7ffff) << 5 | cond;
}
void land_tbz(struct code *c, unsigned at, unsigned rt, unsigned bit)
{
	c->p[at] = 0x36000000u | (bit & 31) << 19 | ((c->n - at) & 0x3fff) << 5 | rt;
}
uint32_t b_back(const struct code *c, unsigned to)
{
	return 0x14000000u | ((uint32_t)((int)to - (int)c->n) & 0x3ffffff);
}

int psci_vcpu(int vm, int id, uint32_t features, struct kvm_run **run, long sz)
{
	struct kvm_vcpu_init init;
	int fd = ioctl(vm, KVM_CREATE_VCPU, id);

	if (fd < 0 || ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init))
		return -1;
	init.features[0] = features;
	if (ioctl(fd, KVM_ARM_VCPU_INIT, &init))
		return -1;
	*run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return *run == MAP_FAILED ? -1 : fd;
}

void no_op(int sig)
{
	(void)sig;
}
