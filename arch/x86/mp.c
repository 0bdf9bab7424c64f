// SPDX-License-Identifier: Apache-2.0
//
// See mp.h.
#include "arch/x86/mp.h"
#include "arch/x86/cpu.h"
#include "arch/x86/x86_boot.h"
#include "core/log.h"

struct x86_mp_services *x86_mp_locate(EFI_BOOT_SERVICES *bs)
{
	EFI_GUID guid = {
	    0x3fdda605, 0xa76e, 0x4f46, {0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08}};
	struct x86_mp_services *mp = NULL;

	if (EFI_ERROR(bs->LocateProtocol(&guid, NULL, (void **)&mp)))
		return NULL;
	return mp;
}

unsigned x86_mp_list_cpus(struct x86_mp_services *mp, uint32_t *ids, unsigned max)
{
	UINTN n = 1, enabled = 1;
	unsigned k = 0;

	if (mp && !EFI_ERROR(mp->get_number_of_processors(mp, &n, &enabled))) {
		if (enabled > max)
			log_warn("x86: %llu CPUs enabled, Slat runs at most %u\n",
				 (unsigned long long)enabled, max);
		for (UINTN i = 0; i < n && k < max; i++) {
			struct x86_mp_cpu_info info = {0};
			if (!EFI_ERROR(mp->get_processor_info(mp, i, &info)) &&
			    (info.status_flag & 2))
				ids[k++] = (uint32_t)info.processor_id;
		}
	}
	if (!k)
		ids[k++] = cpuid(1, 0).ebx >> 24;
	return k;
}

uint64_t x86_tsc_hz(EFI_BOOT_SERVICES *bs, uint16_t pm_tmr, uint64_t *start)
{
	uint32_t p0 = pm_tmr ? inl(pm_tmr) : 0;
	uint64_t t0 = rdtsc();

	bs->Stall(10000); // 10 ms
	uint64_t t1 = rdtsc();
	uint32_t p1 = pm_tmr ? inl(pm_tmr) : 0;
	uint32_t dp = (p1 - p0) & 0xffffff;

	*start = t0;
	if (pm_tmr && dp)
		return (t1 - t0) * 3579545ull / dp;
	return (t1 - t0) * 100;
}

void x86_boot_measure(const struct slat_plan *plan, EFI_BOOT_SERVICES *bs,
		      struct x86_power_ports *power, uint64_t *tsc_hz, uint64_t *tsc_start)
{
	x86_power_from_acpi(plan->fw.acpi_rsdp, power);
	if (x86_acpi_hide_s3(plan->fw.acpi_rsdp))
		log_info(
		    "slat: ACPI S3 not offered (\\_S3_ renamed in the DSDT): no resume path\n");
	*tsc_hz = x86_tsc_hz(bs, power->pm_tmr, tsc_start);
}

struct enter_all {
	int (*enter)(void *arg);
	void *arg;
	int failures;
};

static void EFIAPI ap_enter(void *p)
{
	struct enter_all *all = p;

	if (all->enter(all->arg) != 0)
		__atomic_fetch_add(&all->failures, 1, __ATOMIC_RELAXED);
}

int x86_enter_all_cpus(struct x86_mp_services *mp, unsigned n, int (*enter)(void *arg), void *arg,
		       const char *vendor)
{
	struct enter_all all = {.enter = enter, .arg = arg};

	if (!mp) {
		log_warn("%s: no MP services protocol: only the boot CPU is virtualized\n", vendor);
	} else if (n > 1) {
		EFI_STATUS s = mp->startup_all_aps(mp, ap_enter, TRUE, NULL, 0, &all, NULL);
		if (EFI_ERROR(s) || all.failures)
			log_err(
			    "%s: %d AP(s) could not enter guest mode (0x%llx); they run outside "
			    "Slat\n",
			    vendor, all.failures, (unsigned long long)s);
	}
	if (enter(arg) != 0)
		return -1; // only possible before the boot CPU changed anything
	return (int)n - all.failures;
}
