// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/psci.c - PSCI as the firmware offers it (conduit from the
 * FADT, never named in a verdict): VERSION, FEATURES of the main functions,
 * CPU_ON of the second CPU (which reports in and calls CPU_OFF), AFFINITY_INFO
 * before and after, CPU_ON of a CPU that is on (ALREADY_ON), CPU_ON of CPUs
 * that do not exist (INVALID_PARAMETERS, every time), a CPU started again
 * after CPU_OFF, CPU_SUSPEND, and an unknown function (NOT_SUPPORTED).
 * Needs -smp 2.
 */
#include "tests/arch/arm64/lib/a64.h"

#define AFF_ON	    0
#define AFF_OFF	    1
#define AFF_PENDING 2

static struct a64_cpu_mailbox box __attribute__((aligned(64)));

/* The mailbox is read and written with the MMU off on the other CPU. */
static void box_clean(void)
{
	for (uintptr_t p = (uintptr_t)&box; p < (uintptr_t)(&box + 1); p += 16)
		__asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
	a64_dsb();
}

static int64_t affinity(uint64_t mpidr)
{
	return a64_psci(PSCI_AFFINITY_INFO_64, mpidr, 0, 0);
}

/* Polls AFFINITY_INFO until it says `want` (bounded: ~1 s of counter). */
static int64_t wait_affinity(uint64_t mpidr, int64_t want, uint64_t hz)
{
	uint64_t start = a64_cntpct();
	int64_t r;
	do
		r = affinity(mpidr);
	while (r != want && a64_cntpct() - start < hz);
	return r;
}

static bool wait_started(uint64_t hz)
{
	uint64_t start = a64_cntpct();
	do
		box_clean();
	while (!box.started && a64_cntpct() - start < hz);
	return box.started != 0;
}

static int64_t start_cpu(uint64_t mpidr)
{
	ta_memset(&box, 0, sizeof(box));
	box.use_hvc = a64_psci_uses_hvc();
	box_clean();
	return a64_psci(PSCI_CPU_ON_64, mpidr, (uint64_t)(uintptr_t)a64_cpu_entry,
			(uint64_t)(uintptr_t)&box);
}

static void release_cpu(void)
{
	box.release = 1;
	box_clean();
}

static void check_features(void)
{
	static const struct {
		const char *name;
		uint32_t fn;
	} fns[] = {
	    {"VERSION", PSCI_VERSION},
	    {"CPU_OFF", PSCI_CPU_OFF},
	    {"CPU_ON64", PSCI_CPU_ON_64},
	    {"AFFINITY_INFO64", PSCI_AFFINITY_INFO_64},
	    {"SYSTEM_OFF", PSCI_SYSTEM_OFF},
	    {"SYSTEM_RESET", PSCI_SYSTEM_RESET},
	    {"FEATURES", PSCI_FEATURES},
	    {"MIGRATE_INFO_TYPE", PSCI_MIGRATE_INFO_TYPE},
	    {"CPU_SUSPEND64", PSCI_CPU_SUSPEND_64},
	};
	for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		ta_verdict("features", "%s %lld", fns[i].name,
			   (long long)a64_psci(PSCI_FEATURES, fns[i].fn, 0, 0));
}

static void check_cpu_on(uint64_t mpidr, uint64_t hz)
{
	ta_verdict("affinity-before", "%lld", (long long)affinity(mpidr));
	ta_verdict("cpu-on", "%lld", (long long)start_cpu(mpidr));
	bool up = wait_started(hz);
	ta_verdict("cpu-started", "%s at EL%u, SCTLR_EL1.M %u, context id %s", up ? "yes" : "no",
		   box.current_el, (unsigned)box.sctlr & 1,
		   box.x0 == (uint64_t)(uintptr_t)&box ? "kept" : "lost");
	ta_verdict("affinity-while-on", "%lld", (long long)wait_affinity(mpidr, AFF_ON, hz));
	int64_t again = a64_psci(PSCI_CPU_ON_64, mpidr, (uint64_t)(uintptr_t)a64_cpu_entry,
				 (uint64_t)(uintptr_t)&box);
	ta_verdict("cpu-on-again", "%lld", (long long)again);
	release_cpu();
	ta_verdict("affinity-after-off", "%lld", (long long)wait_affinity(mpidr, AFF_OFF, hz));

	/* Off, then on again: the CPU runs the entry a second time. */
	ta_verdict("cpu-on-restart", "%lld", (long long)start_cpu(mpidr));
	ta_verdict("cpu-restarted", "%s", wait_started(hz) ? "yes" : "no");
	release_cpu();
	ta_verdict("affinity-after-second-off", "%lld",
		   (long long)wait_affinity(mpidr, AFF_OFF, hz));
}

/* CPU_SUSPEND with the firmware's timer interrupt as the wake-up: a standby
 * state returns SUCCESS; a power-down state either resumes at the entry
 * point or returns SUCCESS (the firmware may downgrade it; QEMU always does);
 * a power_state with reserved bits is refused. */
static void check_cpu_suspend(void)
{
	ta_verdict("cpu-suspend-standby", "%lld",
		   (long long)a64_psci(PSCI_CPU_SUSPEND_64, 0, 0, 0));
	ta_verdict("cpu-suspend-powerdown", "%lld",
		   (long long)a64_psci(PSCI_CPU_SUSPEND_64, 1u << 16,
				       (uint64_t)(uintptr_t)a64_cpu_entry,
				       (uint64_t)(uintptr_t)&box));
	ta_verdict("cpu-suspend-bad-state", "%lld",
		   (long long)a64_psci(PSCI_CPU_SUSPEND_64, 1u << 20, 0, 0));
}

/* MPIDRs no CPU has: the answer is the same however often one asks. */
static void check_bad_targets(void)
{
	unsigned invalid = 0, other = 0;
	int64_t first_other = 0;
	for (unsigned i = 0; i < 12; i++) {
		int64_t r = a64_psci(PSCI_CPU_ON_64, 0x10 + i, (uint64_t)(uintptr_t)a64_cpu_entry,
				     (uint64_t)(uintptr_t)&box);
		if (r == -2) {
			invalid++;
		} else {
			if (!other++)
				first_other = r;
		}
	}
	ta_verdict("cpu-on-nonexistent", "12 calls: %u INVALID_PARAMETERS, %u other (first %lld)",
		   invalid, other, (long long)first_other);
	ta_verdict("affinity-nonexistent", "%lld", (long long)affinity(0x10));
}

void ta_main(void)
{
	uint64_t hz = a64_mrs("cntfrq_el0");
	struct a64_madt m;

	if (!a64_psci_init()) {
		ta_verdict("psci", "absent");
		return;
	}
	uint64_t v = (uint64_t)a64_psci(PSCI_VERSION, 0, 0, 0);
	ta_verdict("version", "%u.%u", (unsigned)(v >> 16) & 0xffff, (unsigned)v & 0xffff);
	check_features();
	ta_verdict("unknown-function", "%lld", (long long)a64_psci(0x8400001fu, 0, 0, 0));
	ta_verdict("migrate-info-type", "%lld",
		   (long long)a64_psci(PSCI_MIGRATE_INFO_TYPE, 0, 0, 0));
	if (!a64_madt_read(&m) || m.n_cpus < 2) {
		ta_verdict("second-cpu", "absent");
		return;
	}
	uint64_t self = a64_mrs(A64_MPIDR) & 0xff00ffffffull;
	uint64_t other = (m.mpidr[0] & 0xff00ffffffull) == self ? m.mpidr[1] : m.mpidr[0];
	ta_verdict("affinity-self", "%lld", (long long)affinity(self));
	check_cpu_on(other & 0xff00ffffffull, hz);
	check_bad_targets();
	check_cpu_suspend();
}
