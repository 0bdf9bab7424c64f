// SPDX-License-Identifier: Apache-2.0
//
// slat-killtest: a child process creates a VM with slots and runs 2 vCPU
// threads on write/check jobs; the parent SIGKILLs it mid-run. Afterwards
// the module has no VM and no pinned page, and Slat's pool has every page
// back (HV_STATS), and the kernel's free memory is back where it was before
// the child (its 16 MiB of slots were unpinned and freed: /proc/meminfo, not
// only the module's own counter). Prints SLAT-GUEST lines and PASS or FAIL.
#include "slatlib.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define KSLOTS	     8
#define KSLOT_SZ     0x200000u
#define KSLOT_GPA(i) (0x1000000u * (i))
#define MAX_JOBS     1000000

struct kv {
	struct sl_vcpu vc;
	int ready_fd;
};

/*
 * MemFree moves with per-CPU page lists and the page cache: mid-run it must be
 * at least a quarter of the slots' 16 MiB below the start, afterwards within 8 MiB (a leak of the
 * slots is 16 MiB).
 */
#define MEMFREE_SLACK_KB 8192

/* MemFree with the per-CPU counter deltas folded in first (vm.stat_refresh). */
static long memfree_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/sys/vm/stat_refresh", "w");

	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
	f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static void *kworker(void *arg)
{
	struct kv *k = arg;
	struct sl_job j = {GJ_OP_WRITE | GJ_OP_CHECK, 0, 0, KSLOT_SZ, 256, 0x1234, k->vc.idx};
	struct sl_result r;

	for (unsigned n = 0; n < MAX_JOBS; n++) {
		/* vCPU v takes slots v + 1, v + 3, ...: no two write one slot. */
		j.gpa = j.pbase = KSLOT_GPA(1 + k->vc.idx + 2 * (n % (KSLOTS / 2)));
		if (sl_run_job(&k->vc, &j, &r) || r.errors)
			sl_die("killtest child: vCPU %u job %u: %s (%u bad)", k->vc.idx, n, r.why,
			       r.errors);
		if (n == 0 && write(k->ready_fd, "r", 1) != 1)
			sl_die("killtest child: pipe write failed");
	}
	sl_die("killtest child: still alive after %d jobs (no SIGKILL came)", MAX_JOBS);
}

static void child(int ready_fd)
{
	int sys = sl_open(), vm = sl_vm_create(sys), rc;
	struct kv k[2];
	pthread_t th[2];
	uint8_t *ctrl, *mem;

	if (vm < 0)
		sl_die("killtest child: CREATE_VM: %s", strerror(-vm));
	ctrl = sl_ctrl_setup(vm);
	mem = sl_alloc((size_t)KSLOTS * KSLOT_SZ);
	/* 4 KiB pages: freed huge pages can sit in per-CPU lists, out of MemFree. */
	madvise(mem, (size_t)KSLOTS * KSLOT_SZ, MADV_NOHUGEPAGE);
	for (unsigned i = 1; i <= KSLOTS; i++) {
		rc = sl_slot(vm, i, KSLOT_GPA(i), KSLOT_SZ, mem + (size_t)(i - 1) * KSLOT_SZ);
		if (rc)
			sl_die("killtest child: slot %u: %s", i, strerror(-rc));
	}
	for (unsigned v = 0; v < 2; v++) {
		k[v].ready_fd = ready_fd;
		rc = sl_vcpu_create(vm, v, ctrl, &k[v].vc);
		if (rc)
			sl_die("killtest child: vCPU %u: %s", v, strerror(-rc));
		pthread_create(&th[v], NULL, kworker, &k[v]);
	}
	pthread_join(th[0], NULL);
	exit(3);
}

int main(void)
{
	int sys = sl_open(), p[2], st, fails = 0;
	struct slat_module_stats during, after;
	struct hc_hv_stats hs;
	struct pollfd pf;
	char c[2];
	pid_t pid;

	long free_before = memfree_kb(), free_during, free_after;

	if (pipe(p))
		sl_die("killtest: pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1]);
	}
	close(p[1]);
	pf = (struct pollfd){.fd = p[0], .events = POLLIN};
	/* Both vCPUs ran a job (bounded wait: 120 s). */
	for (int got = 0; got < 2;) {
		if (poll(&pf, 1, 120000) != 1 || read(p[0], c, 1) != 1) {
			sl_say("killtest: the child's vCPUs did not run within 120 s");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			sl_say("killtest: FAIL");
			return 1;
		}
		got++;
	}
	usleep(100000);
	sl_mod_stats(sys, &during);
	free_during = memfree_kb();
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	sl_mod_stats(sys, &after);
	/* Freed pages may sit in per-CPU lists a moment: up to 3 s. */
	for (int i = 0; i < 30; i++) {
		free_after = memfree_kb();
		if (free_after >= free_before - MEMFREE_SLACK_KB)
			break;
		usleep(100000);
	}
	sl_hv_stats(sys, &hs);
	bool was = during.vms == 1 &&
		   during.pinned_pages == KSLOTS * KSLOT_SZ / 4096 + GJ_CTRL_SIZE / 4096;
	bool killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	bool gone = after.vms == 0 && after.pinned_pages == 0 && after.deposited_now == 0;
	bool pool = hs.vms == 0 && hs.used == 0 && hs.free == 0 && hs.deposited == hs.withdrawn;

	bool mem = free_after >= free_before - MEMFREE_SLACK_KB &&
		   free_during < free_before - KSLOTS * KSLOT_SZ / 1024 / 4;

	fails += !was + !killed + !gone + !pool + !mem;
	sl_say("killtest: mid-run: %llu VM, %llu pages pinned, %llu held by Slat: %s",
	       (unsigned long long)during.vms, (unsigned long long)during.pinned_pages,
	       (unsigned long long)during.deposited_now, was ? "ok" : "FAILED");
	sl_say("killtest: child killed by SIGKILL: %s", killed ? "ok" : "FAILED");
	sl_say("killtest: after: %llu VMs, %llu pages pinned, %llu held by Slat: %s",
	       (unsigned long long)after.vms, (unsigned long long)after.pinned_pages,
	       (unsigned long long)after.deposited_now, gone ? "ok" : "FAILED");
	sl_say("killtest: HV_STATS: vms %llu, used %llu, free %llu, deposited %llu, withdrawn "
	       "%llu: %s",
	       (unsigned long long)hs.vms, (unsigned long long)hs.used, (unsigned long long)hs.free,
	       (unsigned long long)hs.deposited, (unsigned long long)hs.withdrawn,
	       pool ? "ok" : "FAILED");
	sl_say("killtest: MemFree before the child %ld kB, mid-run %ld kB, after %ld kB (slack %d "
	       "kB): %s",
	       free_before, free_during, free_after, MEMFREE_SLACK_KB, mem ? "ok" : "FAILED");
	sl_say("killtest: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
