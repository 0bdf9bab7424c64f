// SPDX-License-Identifier: Apache-2.0
//
// slat-bench: issue 14's live benchmark, run in the primary (make bench,
// tools/bench-live-secondary.sh). For VMs of N data slots (64 KiB each, one
// vCPU) in both modes of the engine, slot-scoped (the default) and zap-all
// (VM_CREATE flag ZAP_ALL: the old way), it measures
//   delete_us   SET_SLOT delete of one slot, as the VMM sees it (ioctl time);
//   refaults    SLAT faults of a check pass over the remaining slots right
//               after the delete: the vCPU's disturbance;
//   zapped      leaves the delete zapped (engine counter);
//   destroy_us  the VM_DESTROY hypercall (slat.ko's own timing), beside the
//               SLAT table bytes the teardown reads once (tables_live x 4 KiB).
// One line per measurement: "SLAT-BENCH {json}". Timings are TCG emulator
// wall time, not hardware figures.
#include "slatlib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define SLOT_SIZE   0x10000u
#define SLOT_GPA(i) (0x100000u * (i))
#define PAGE	    4096u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t data_faults(const struct hc_vm_stats *s)
{
	return s->faults - s->faults_mmio;
}

// One pass of `op` over slots [1, n], one word per page.
static void pass(struct sl_vcpu *vc, unsigned n, uint32_t op, uint32_t seed)
{
	for (unsigned i = 1; i <= n; i++) {
		struct sl_job j = {op, SLOT_GPA(i), SLOT_GPA(i), SLOT_SIZE, PAGE, seed, 1};
		struct sl_result r;
		if (sl_run_job(vc, &j, &r) || r.errors)
			sl_die("bench: pass over slot %u: %s, %u bad", i, r.ok ? "ran" : r.why,
			       r.errors);
	}
}

static struct utsname uts;

static void one(int sys, const char *mode, uint32_t flags, unsigned n, unsigned run)
{
	struct hc_vm_stats s0, s1, s2, s3;
	struct slat_module_stats ms;
	struct sl_vcpu vc;
	int vm = sl_vm_create_flags(sys, flags);

	if (vm < 0)
		sl_die("bench: CREATE_VM(%#x): %s", flags, strerror(-vm));
	uint8_t *ctrl = sl_ctrl_setup(vm);
	uint8_t *mem = sl_alloc((uint64_t)n * SLOT_SIZE);
	for (unsigned i = 1; i <= n; i++)
		if (sl_slot(vm, i, SLOT_GPA(i), SLOT_SIZE, mem + (uint64_t)(i - 1) * SLOT_SIZE))
			sl_die("bench: slot %u", i);
	if (sl_vcpu_create(vm, 0, ctrl, &vc))
		sl_die("bench: vCPU");
	pass(&vc, n, GJ_OP_WRITE, run);
	sl_vm_stats(vm, &s0);
	uint64_t t0 = now_ns();
	if (sl_slot(vm, n, SLOT_GPA(n), 0, NULL))
		sl_die("bench: delete");
	uint64_t t1 = now_ns();
	sl_vm_stats(vm, &s1);
	pass(&vc, n - 1, GJ_OP_CHECK, run);
	sl_vm_stats(vm, &s2);
	s3 = s2;
	sl_vcpu_close(&vc);
	close(vm); // the last reference: slat.ko calls VM_DESTROY and times it
	sl_mod_stats(sys, &ms);
	munmap(mem, (uint64_t)n * SLOT_SIZE);
	munmap(ctrl, GJ_CTRL_SIZE);
	printf("SLAT-BENCH {\"bench\":\"live_secondary\",\"arch\":\"%s\",\"mode\":\"%s\","
	       "\"slots\":%u,\"vm_kib\":%u,\"run\":%u,\"delete_us\":%.1f,\"zapped\":%llu,"
	       "\"refaults\":%llu,\"destroy_us\":%.1f,\"table_bytes\":%llu,\"zap_all\":%llu}\n",
	       uts.machine, mode, n, n * (SLOT_SIZE / 1024), run, (t1 - t0) / 1000.0,
	       (unsigned long long)(s1.leaves_zapped - s0.leaves_zapped),
	       (unsigned long long)(data_faults(&s2) - data_faults(&s1)),
	       ms.last_destroy_ns / 1000.0, (unsigned long long)s3.tables_live * PAGE,
	       (unsigned long long)(s1.zap_all - s0.zap_all));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = {8, 32, 128, 512};
	unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
	unsigned nsizes = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	int sys = sl_open();

	uname(&uts);

	for (unsigned s = 0; s < nsizes && s < 4; s++)
		for (unsigned r = 1; r <= runs; r++) {
			one(sys, "slot", 0, sizes[s], r);
			one(sys, "all", HC_VM_FLAG_ZAP_ALL, sizes[s], r);
		}
	sl_say("bench done");
	return 0;
}
