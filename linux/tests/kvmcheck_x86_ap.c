// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (x86): INIT and STARTUP. vCPU 1 of the irqchip guest
// (kvmcheck_x86_irqchip.c) exists before the guest runs and waits in
// KVM_RUN on its own thread; vCPU 0 sends a STARTUP before any INIT (which
// must not start it), INIT and STARTUP; vCPU 1 then runs its real-mode code,
// and its HLT with IF 0 waits in the kernel until a signal ends KVM_RUN.
#include "kvmcheck_x86.h"

static void on_usr1(int sig)
{
	(void)sig; // only to end a blocked KVM_RUN with EINTR
}

static void *ap_thread(void *arg)
{
	struct ap_run *a = arg;
	sigset_t alrm;

	sigemptyset(&alrm); // SIGALRM is the main thread's (run_to)
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	do { // KVM returns EAGAIN when INIT ends the wait of an UNINITIALIZED vCPU
		a->rc = ioctl(a->vcpu, KVM_RUN, 0);
		a->err = errno;
	} while (a->rc == -1 && a->err == EAGAIN);
	a->done = 1;
	return NULL;
}

// Waits up to `ms` for the AP's KVM_RUN; then SIGUSR1 ends it (EINTR).
static void ap_join(struct ap_run *a, unsigned ms)
{
	for (unsigned t = 0; t < ms && !a->done; t += 10)
		usleep(10000);
	while (!a->done) {
		pthread_kill(a->thread, SIGUSR1);
		usleep(10000);
	}
	pthread_join(a->thread, NULL);
}

bool ap_start(struct ap_run *a)
{
	struct sigaction sa = {.sa_handler = on_usr1}; // no SA_RESTART

	sigaction(SIGUSR1, &sa, NULL);
	a->done = 0;
	return pthread_create(&a->thread, NULL, ap_thread, a) == 0;
}

// vCPU 1 exists before the guest runs; it waits in KVM_RUN for STARTUP.
void check_ap_started(struct ap_run *a)
{
	struct kvm_mp_state mp;
	struct kvm_sregs s;

	ap_join(a, 20000);
	bool io = a->rc == 0 && a->run->exit_reason == KVM_EXIT_IO;
	uint16_t port = io ? a->run->io.port : 0;
	if (!io)
		say("AP's KVM_RUN: %ld (%s), exit reason %u", a->rc, strerror(a->err),
		    a->run->exit_reason);
	check("AP started by INIT + STARTUP: its OUT 0x60 (0x61: the early STARTUP ran)",
	      io && port == 0x60, port, 0x60);
	check("AP's OUT value", io && io_out(a->run, port) == 0x1234, io ? io_out(a->run, port) : 0,
	      0x1234);
	expect("AP: KVM_GET_SREGS", ioctl(a->vcpu, KVM_GET_SREGS, &s), 0);
	check("AP in real mode at CS 0x0c00, base 0xc000",
	      s.cs.selector == AP_VEC << 8 && s.cs.base == AP_VEC << 12 && !(s.cr0 & 1), s.cs.base,
	      AP_VEC << 12);
	expect("AP: KVM_GET_MP_STATE", ioctl(a->vcpu, KVM_GET_MP_STATE, &mp), 0);
	check("AP runnable after STARTUP", mp.mp_state == KVM_MP_STATE_RUNNABLE, mp.mp_state,
	      KVM_MP_STATE_RUNNABLE);
	// Its HLT with IF 0 waits in the kernel; a signal ends KVM_RUN.
	if (!ap_start(a))
		return;
	ap_join(a, 200);
	check("AP's HLT ended by a signal: EINTR, KVM_EXIT_INTR",
	      a->rc == -1 && a->err == EINTR && a->run->exit_reason == KVM_EXIT_INTR, a->err,
	      EINTR);
}
