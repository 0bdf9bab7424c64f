// SPDX-License-Identifier: Apache-2.0
//
// The x86 slat-kvm-check's helpers (kvmcheck_x86.h): CPUID tables, the
// guests' page tables and IDT gates, instruction pieces, vCPUs and their
// exits.
#include "kvmcheck_x86.h"

struct kvm_cpuid2 *cpuid_alloc(unsigned n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

	c->nent = n;
	return c;
}

struct kvm_cpuid_entry2 *leaf(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	return NULL;
}

void write_tables(uint8_t *mem)
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

void idt_gate(uint8_t *mem, unsigned vector, uint64_t at)
{
	uint64_t *gate = (uint64_t *)(mem + IDT + 16 * vector);

	gate[0] = (at & 0xffff) | 8ull << 16 | 0x8eull << 40 | (at >> 16 & 0xffff) << 48;
	gate[1] = at >> 32;
}

size_t put_store(uint8_t *p, uint32_t addr, uint32_t val)
{
	uint8_t c[] = {0xb9, 0, 0, 0, 0, 0xc7, 0x01, 0, 0, 0, 0};

	memcpy(c + 1, &addr, 4);
	memcpy(c + 7, &val, 4);
	memcpy(p, c, sizeof(c));
	return sizeof(c);
}

size_t put(uint8_t *p, const uint8_t *b, size_t n)
{
	memcpy(p, b, n);
	return n;
}

struct kvm_run *new_vcpu(int kvm, int vm, int id, int *vcpu)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	void *run;

	*vcpu = ioctl(vm, KVM_CREATE_VCPU, id);
	if (*vcpu < 0 || sz <= 0)
		return NULL;
	run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, *vcpu, 0);
	return run == MAP_FAILED ? NULL : run;
}

void on_alarm(int sig)
{
	(void)sig; // only to end a KVM_RUN that hangs (EINTR)
}

bool run_to(int vcpu, struct kvm_run *run, uint32_t reason, const char *what)
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

uint32_t io_out(const struct kvm_run *run, uint16_t port)
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

bool out_exit(int vcpu, struct kvm_run *run, uint16_t port, const char *what)
{
	return run_to(vcpu, run, KVM_EXIT_IO, what) && io_out(run, port) != 0xdeadbeef;
}

uint32_t expect_out(int vcpu, struct kvm_run *run, uint16_t port, const char *what)
{
	return out_exit(vcpu, run, port, what) ? io_out(run, port) : 0xdeadbeef;
}
