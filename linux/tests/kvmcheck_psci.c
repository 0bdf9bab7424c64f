// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the PSCI section.
#define _GNU_SOURCE // pthread_timedjoin_np
#include "kvmcheck_arm64.h"

// ---- PSCI: two vCPUs, CPU_ON / CPU_OFF / AFFINITY_INFO / SYSTEM_SUSPEND ----------
// vCPU 0 makes the calls and stores each answer in the results page; vCPU 1
// starts powered off, so its thread waits in KVM_RUN until vCPU 0's CPU_ON,
// stores the context id it gets in x0, waits for vCPU 0's go and turns itself
// off; vCPU 0 then sees it off, asks for SYSTEM_SUSPEND (the VMM's exit) and
// SYSTEM_OFF.

#define RES_GPA	  0x4000u
#define FLAG1_OFF 0x100u // vCPU 1's x0 on entry
#define GO_OFF	  0x108u // vCPU 0 lets vCPU 1 turn off
#define BAD1_OFF  0x110u // vCPU 1 got past CPU_OFF (must stay 0)
#define CTX1	  0x5a5a1234ull
#define NRES	  13

static void store_res(struct code *c, unsigned i)
{
	emit(c, STR_X(0, 19, 8 * i));
}

static void write_psci_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};

	mov64(&c, 19, RES_GPA);
	call(&c, FN_VERSION, 0, 0, 0);
	store_res(&c, 0);
	call(&c, FN64_CPU_ON, 0xff00ff, ENTRY1, CTX1); // no such vCPU
	store_res(&c, 1);
	call(&c, FN64_CPU_ON, ~0ull, ENTRY1, CTX1);
	store_res(&c, 2);
	call(&c, FN64_CPU_ON, ~0ull, ENTRY1, CTX1); // again
	store_res(&c, 3);
	call(&c, FN64_AFFINITY, ~0ull, 0, 0);
	store_res(&c, 4);
	call(&c, FN64_AFFINITY, ~0ull, 4, 0); // no level 4
	store_res(&c, 5);
	call(&c, FN_FEATURES, FN64_SYSTEM_SUSP, 0, 0);
	store_res(&c, 6);
	call(&c, FN64_SYSTEM_SUSP, 0, 0, 0); // vCPU 1 is on: DENIED
	store_res(&c, 7);
	unsigned wait = c.n; // until vCPU 1 has run
	emit(&c, LDR_X(9, 19, FLAG1_OFF));
	emit(&c, cbz_back(&c, 9, wait));
	emit(&c, movz(9, 1, 0));
	emit(&c, STR_X(9, 19, GO_OFF));
	unsigned poll = c.n; // until AFFINITY_INFO says OFF (1)
	call(&c, FN64_AFFINITY, ~0ull, 0, 0);
	emit(&c, CMP_X(0, 1));
	emit(&c, bne_back(&c, poll));
	call(&c, FN_MIGRATE_INFO, 0, 0, 0);
	store_res(&c, 8);
	call(&c, FN_SMCCC_VERSION, 0, 0, 0);
	store_res(&c, 9);
	call(&c, FN64_CPU_ON, 1ull << 40, ENTRY1, CTX1); // a bit outside MPIDR's affinity
	store_res(&c, 10);
	call(&c, 0xc4000050u, 0, 0, 0); // a PSCI number nobody defined
	store_res(&c, 11);
	call(&c, FN64_SYSTEM_SUSP, ENTRY1, CTX1, 0); // the VMM's exit
	store_res(&c, 12);			     // x0 as the call left it
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);

	struct code c1 = {(uint32_t *)(mem + ENTRY1), 0};
	mov64(&c1, 9, RES_GPA);
	emit(&c1, STR_X(0, 9, FLAG1_OFF));
	unsigned go = c1.n;
	emit(&c1, LDR_X(10, 9, GO_OFF));
	emit(&c1, cbz_back(&c1, 10, go));
	call(&c1, FN_CPU_OFF, 0, 0, 0);
	emit(&c1, movz(10, 0xbad, 0));
	emit(&c1, STR_X(10, 9, BAD1_OFF));
	emit(&c1, 0x14000000u); // b .
}

struct vcpu1_run {
	int fd;
	long ret;
	int err;
	struct kvm_run *run;
};

static void *vcpu1_thread(void *arg)
{
	struct vcpu1_run *r = arg;

	r->ret = ioctl(r->fd, KVM_RUN, 0);
	r->err = errno;
	return NULL;
}

static int mp_state(int vcpu)
{
	struct kvm_mp_state mp = {.mp_state = 0xff};

	return ioctl(vcpu, KVM_GET_MP_STATE, &mp) ? -1 : (int)mp.mp_state;
}

static void check_psci_setup(int vm, int v0, int v1)
{
	struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_SUSPENDED};
	struct kvm_enable_cap cap = {.cap = KVM_CAP_ARM_SYSTEM_SUSPEND, .flags = 1};

	check("vCPU 0 (PSCI) runnable", mp_state(v0) == KVM_MP_STATE_RUNNABLE, mp_state(v0),
	      KVM_MP_STATE_RUNNABLE);
	check("vCPU 1 (PSCI, POWER_OFF) stopped", mp_state(v1) == KVM_MP_STATE_STOPPED,
	      mp_state(v1), KVM_MP_STATE_STOPPED);
	expect("KVM_SET_MP_STATE SUSPENDED (not offered)", ioctl(v0, KVM_SET_MP_STATE, &mp),
	       EINVAL);
	mp.mp_state = 77;
	expect("KVM_SET_MP_STATE 77", ioctl(v0, KVM_SET_MP_STATE, &mp), EINVAL);
	mp.mp_state = KVM_MP_STATE_STOPPED;
	expect("KVM_SET_MP_STATE STOPPED", ioctl(v0, KVM_SET_MP_STATE, &mp), 0);
	check("... reads back", mp_state(v0) == KVM_MP_STATE_STOPPED, mp_state(v0),
	      KVM_MP_STATE_STOPPED);
	mp.mp_state = KVM_MP_STATE_RUNNABLE;
	expect("KVM_SET_MP_STATE RUNNABLE", ioctl(v0, KVM_SET_MP_STATE, &mp), 0);
	expect("KVM_ENABLE_CAP SYSTEM_SUSPEND with flags", ioctl(vm, KVM_ENABLE_CAP, &cap), EINVAL);
	cap.flags = 0;
	cap.cap = KVM_CAP_ARM_PMU_V3;
	expect("KVM_ENABLE_CAP of a capability Slat lacks", ioctl(vm, KVM_ENABLE_CAP, &cap),
	       EINVAL);
	cap.cap = KVM_CAP_ARM_SYSTEM_SUSPEND;
	expect("KVM_ENABLE_CAP SYSTEM_SUSPEND", ioctl(vm, KVM_ENABLE_CAP, &cap), 0);
}

static void check_psci_results(const uint64_t *res, uint8_t *mem)
{
	static const struct {
		const char *what;
		uint64_t want;
	} want[NRES] = {
	    {"PSCI_VERSION 1.0", 0x10000},
	    {"CPU_ON of an MPIDR no vCPU has: INVALID_PARAMETERS", PSCI_INVALID},
	    {"CPU_ON of vCPU 1: SUCCESS", 0},
	    {"CPU_ON of vCPU 1 again: ALREADY_ON", PSCI_ALREADY_ON},
	    {"AFFINITY_INFO of vCPU 1: ON", 0},
	    {"AFFINITY_INFO at level 4: INVALID_PARAMETERS", PSCI_INVALID},
	    {"PSCI_FEATURES(SYSTEM_SUSPEND) once enabled: 0", 0},
	    {"SYSTEM_SUSPEND while vCPU 1 is on: DENIED", PSCI_DENIED},
	    {"MIGRATE_INFO_TYPE: no Trusted OS to migrate (2)", 2},
	    {"SMCCC_VERSION 1.1", 0x10001},
	    {"CPU_ON of a target with bits outside the affinity: INVALID_PARAMETERS", PSCI_INVALID},
	    {"an undefined PSCI function: NOT_SUPPORTED", PSCI_NOT_SUPPORTED},
	    {"x0 after the VMM resumed SYSTEM_SUSPEND: the call's own", FN64_SYSTEM_SUSP},
	};
	uint64_t v;

	for (unsigned i = 0; i < NRES; i++)
		check(want[i].what, res[i] == want[i].want, res[i], want[i].want);
	memcpy(&v, mem + RES_GPA + FLAG1_OFF, 8);
	check("vCPU 1 started at CPU_ON's entry with its context id in x0", v == CTX1, v, CTX1);
	memcpy(&v, mem + RES_GPA + BAD1_OFF, 8);
	check("vCPU 1 never ran past its CPU_OFF", v == 0, v, 0);
}

void check_psci(int kvm)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	struct sigaction sa = {.sa_handler = no_op}; // no SA_RESTART: KVM_RUN returns EINTR
	struct kvm_run *run0, *run1;
	struct vcpu1_run r1 = {0};
	uint64_t v = 0, res[NRES];
	pthread_t t1;

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *mem =
	    mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || mem == MAP_FAILED) {
		check("PSCI VM set up", false, errno, 0);
		return;
	}
	write_psci_guest(mem);
	region(vm, 0, 0, 0, SLOT_SZ, mem);
	int v0 = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run0, sz);
	int v1 =
	    psci_vcpu(vm, 1, 1u << KVM_ARM_VCPU_PSCI_0_2 | 1u << KVM_ARM_VCPU_POWER_OFF, &run1, sz);
	if (v0 < 0 || v1 < 0) {
		check("PSCI vCPUs made with KVM_ARM_VCPU_PSCI_0_2", false, errno, 0);
		return;
	}
	check_psci_setup(vm, v0, v1);
	one_reg(v1, ARM64_SYS_REG(3, 0, 0, 0, 5), &v, false);
	v &= 0xff00ffffffull;
	one_reg(v0, CORE(regs.regs[20]), &v, true);
	r1.fd = v1;
	r1.run = run1;
	pthread_create(&t1, NULL, vcpu1_thread, &r1);
	alarm(120); // a guest stuck in its waits: KVM_RUN ends with EINTR, the checks fail
	expect("KVM_RUN of vCPU 0 to SYSTEM_SUSPEND", ioctl(v0, KVM_RUN, 0), 0);
	check("SYSTEM_SUSPEND is KVM_EXIT_SYSTEM_EVENT suspend",
	      run0->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  run0->system_event.type == KVM_SYSTEM_EVENT_SUSPEND,
	      run0->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	one_reg(v0, CORE(regs.regs[1]), &v, false);
	check("the VMM reads SYSTEM_SUSPEND's entry point in x1", v == ENTRY1, v, ENTRY1);
	// vCPU 1's thread waits in KVM_RUN, holding the vCPU (its other ioctls
	// wait, as in KVM): a signal ends that RUN.
	pthread_kill(t1, SIGUSR1);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	int joined = pthread_timedjoin_np(t1, NULL, &ts);
	check("a signal ends the off vCPU's KVM_RUN with EINTR, KVM_EXIT_INTR",
	      joined == 0 && r1.ret == -1 && r1.err == EINTR && run1->exit_reason == KVM_EXIT_INTR,
	      joined ? 0xdead : (unsigned long long)r1.err, EINTR);
	if (joined == 0)
		check("vCPU 1 off after its CPU_OFF", mp_state(v1) == KVM_MP_STATE_STOPPED,
		      mp_state(v1), KVM_MP_STATE_STOPPED);
	expect("KVM_RUN of vCPU 0 to SYSTEM_OFF", ioctl(v0, KVM_RUN, 0), 0);
	alarm(0);
	check("SYSTEM_OFF is KVM_EXIT_SYSTEM_EVENT shutdown",
	      run0->exit_reason == KVM_EXIT_SYSTEM_EVENT &&
		  run0->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN,
	      run0->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	check("every vCPU off after SYSTEM_OFF", mp_state(v0) == KVM_MP_STATE_STOPPED, mp_state(v0),
	      KVM_MP_STATE_STOPPED);
	memcpy(res, mem + RES_GPA, sizeof(res));
	check_psci_results(res, mem);
	if (joined == 0) {
		close(v1);
		close(v0);
		close(vm);
	} // else vCPU 1's thread still holds its fd: leave the VM to exit()
	munmap(mem, SLOT_SZ);
}
