// SPDX-License-Identifier: Apache-2.0
//
// See mp.h.
#include "arch/x86/mp.h"
#include "arch/x86/cpu.h"

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
