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
