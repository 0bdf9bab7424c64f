// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the read-only region section.
#include "kvmcheck_arm64.h"

// ---- a read-only region (KVM_MEM_READONLY) -----------------------------------------
// The guest reads the region (its value reaches the VMM through an MMIO
// write), writes it (an MMIO write exit at the region's address: KVM's way),
// reads it again (unchanged) and powers off.

#define RO_GPA	0x100000u
#define RO_WORD 0xabcd1234ull

static void write_ro_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	mov64(&c, 1, RO_GPA);
	mov64(&c, 3, MMIO_GPA);
	mov64(&c, 4, 0x5555);
	emit(&c, LDR_X(2, 1, 0));
	emit(&c, STR_X(2, 3, 0)); // the value read
	emit(&c, STR_X(4, 1, 0)); // the write to the read-only page
	emit(&c, LDR_X(2, 1, 0));
	emit(&c, STR_X(2, 3, 8)); // read again
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
}

void check_readonly(int kvm)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	struct kvm_run *run;
	uint64_t v = 0;
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem =
	    mmap(NULL, 2 * SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (vm < 0 || mem == MAP_FAILED) {
		check("read-only VM set up", false, errno, 0);
		return;
	}
	write_ro_guest(mem);
	*(volatile uint64_t *)(mem + SLOT_SZ) = RO_WORD;
	region(vm, 0, 0, 0, SLOT_SZ, mem);
	expect("region KVM_MEM_READONLY",
	       region(vm, 1, KVM_MEM_READONLY, RO_GPA, SLOT_SZ, mem + SLOT_SZ), 0);
	int vcpu = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	if (vcpu < 0) {
		check("read-only VM's vCPU", false, errno, 0);
		return;
	}
	expect("KVM_RUN to the guest's report of its read", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the guest reads the read-only region's word",
	      mmio_write_exit(run, MMIO_GPA, &v) && v == RO_WORD, v, RO_WORD);
	expect("KVM_RUN to the guest's write", ioctl(vcpu, KVM_RUN, 0), 0);
	check("its write is an MMIO write exit at the region's address",
	      mmio_write_exit(run, RO_GPA, &v) && v == 0x5555, run->exit_reason, KVM_EXIT_MMIO);
	expect("KVM_RUN to the guest's second read", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the word is unchanged for the guest",
	      mmio_write_exit(run, MMIO_GPA + 8, &v) && v == RO_WORD, v, RO_WORD);
	memcpy(&v, mem + SLOT_SZ, 8);
	check("... and for the VMM", v == RO_WORD, v, RO_WORD);
	expect("KVM_RUN to SYSTEM_OFF", ioctl(vcpu, KVM_RUN, 0), 0);
	check("read-only VM powers off", run->exit_reason == KVM_EXIT_SYSTEM_EVENT,
	      run->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	close(vcpu);
	close(vm);
	munmap(mem, 2 * SLOT_SZ);
}
