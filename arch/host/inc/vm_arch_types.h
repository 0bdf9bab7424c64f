// SPDX-License-Identifier: Apache-2.0
//
// The hosted architecture's part of core's VM and vCPU records (core/vm.h).
// A hosted vCPU runs a guest program: a function the test or benchmark
// supplies, called once per "entry", that says why the guest stopped (the
// exit) the way hardware would. arch/host/vm_arch.c runs it through the same
// contract (core/vm_arch.h) as the real paths.
#ifndef SLAT_ARCH_HOST_VM_ARCH_TYPES_H
#define SLAT_ARCH_HOST_VM_ARCH_TYPES_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;

// What a hosted guest program did on one entry.
struct host_exit {
	unsigned reason; // enum exit_reason
	bool power_off;	 // the guest asked its VM to power off
};

struct host_guest {
	// Runs the guest until its next exit.
	struct host_exit (*step)(struct vcpu *v, void *ctx);
	void *ctx;
};

struct vcpu_arch {
	const struct host_guest *guest; // set by the caller before vcpu_arch_run
	uint64_t entries;		// guest entries made
	// Secondary vCPUs (arch/host/hv_arch.c): the registers SET_REGS gave
	// (the arm64 layout) and a page taken for them, as a VMCB would be.
	uint64_t pc, x0, pstate;
	uint64_t state_page;
};

struct vm_arch {
	uint64_t start_ns; // CLOCK_MONOTONIC at vm_arch_init
};

#endif
