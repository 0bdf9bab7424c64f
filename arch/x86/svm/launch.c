// SPDX-License-Identifier: Apache-2.0
//
// The loaded image's part of taking SVM host mode (boot services still up):
// gather what the resident copy needs (ACPI power ports, TSC rate), let the
// resident copy build the host's tables, then deprivilege every CPU: the APs
// first through the firmware's MP services (each runs the resident copy's
// svm_resident_cpu_enter and returns to the firmware in guest mode), the
// boot CPU last. From the boot CPU's return on, this code runs in the
// primary VM.
#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"
#include "arch/x86/x86_boot.h"
#include "boot/efi.h"
#include "core/log.h"

// EFI_MP_SERVICES_PROTOCOL (UEFI PI specification, vol. 2, 13.4).
#define MP_SERVICES_GUID                                                                           \
	{                                                                                          \
		0x3fdda605, 0xa76e, 0x4f46,                                                        \
		{                                                                                  \
			0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08                             \
		}                                                                                  \
	}
typedef void(EFIAPI *mp_procedure)(void *arg);
struct mp_services {
	EFI_STATUS(EFIAPI *get_number_of_processors)
	(struct mp_services *self, UINTN *n, UINTN *enabled);
	void *get_processor_info;
	EFI_STATUS(EFIAPI *startup_all_aps)
	(struct mp_services *self, mp_procedure proc, BOOLEAN single_thread, EFI_EVENT wait,
	 UINTN timeout_us, void *arg, UINTN **failed);
	void *startup_this_ap, *switch_bsp, *enable_disable_ap, *who_am_i;
};

typedef struct svm_cpu *(*resident_prepare_fn)(void);
typedef int (*resident_init_fn)(struct svm_boot_args *a);

struct ap_ctx {
	resident_prepare_fn prepare;
	int failures;
};

// Deprivileges the calling CPU; returns 0 in guest mode. svm_launch is this
// image's copy: the guest's return path must stay in the loaded image.
static int cpu_enter(struct ap_ctx *ctx)
{
	struct svm_cpu *c = ctx->prepare();

	return c ? svm_launch(c) : -1;
}

static uint64_t resident_addr(const struct slat_plan *plan, const void *sym)
{
	return (uint64_t)(uintptr_t)sym - plan->image_base + plan->resident_base;
}

static void EFIAPI ap_procedure(void *arg)
{
	struct ap_ctx *ctx = arg;

	if (cpu_enter(ctx) != 0)
		__atomic_fetch_add(&ctx->failures, 1, __ATOMIC_RELAXED);
}

// The TSC rate: TSC ticks over an interval timed by the ACPI PM timer
// (3.579545 MHz, 24 bits) when there is one, so that a Stall() that returns
// late (a loaded host under emulation) does not skew it; else over Stall().
static uint64_t tsc_hz(EFI_BOOT_SERVICES *bs, uint16_t pm_tmr, uint64_t *start)
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

int svm_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	EFI_BOOT_SERVICES *bs = st->BootServices;
	struct svm_boot_args a = {.plan = plan};
	EFI_GUID mp_guid = MP_SERVICES_GUID;
	struct mp_services *mp = NULL;
	UINTN n_cpus = 1, n_enabled = 1;

	x86_power_from_acpi(plan->fw.acpi_rsdp, &a.power);
	a.tsc_hz = tsc_hz(bs, a.power.pm_tmr, &a.tsc_start);
	a.features = cpuid(0x8000000au, 0).edx;
	resident_init_fn init =
	    (resident_init_fn)resident_addr(plan, (const void *)svm_resident_init);
	if (init(&a) != 0)
		return -1;
	struct ap_ctx ctx = {
	    .prepare =
		(resident_prepare_fn)resident_addr(plan, (const void *)svm_resident_cpu_prepare),
	};
	if (!EFI_ERROR(bs->LocateProtocol(&mp_guid, NULL, (void **)&mp)) && mp) {
		mp->get_number_of_processors(mp, &n_cpus, &n_enabled);
		if (n_enabled > X86_MAX_CPUS)
			log_warn("svm: %llu CPUs enabled, Slat runs at most %u\n",
				 (unsigned long long)n_enabled, X86_MAX_CPUS);
		if (n_enabled > 1) {
			EFI_STATUS s =
			    mp->startup_all_aps(mp, ap_procedure, TRUE, NULL, 0, &ctx, NULL);
			if (EFI_ERROR(s) || ctx.failures)
				log_err(
				    "svm: %d AP(s) could not enter guest mode (0x%llx); they run "
				    "outside Slat\n",
				    ctx.failures, (unsigned long long)s);
		}
	} else {
		log_warn("svm: no MP services protocol: only the boot CPU is virtualized\n");
	}
	if (cpu_enter(&ctx) != 0)
		return -1; // only possible before the boot CPU changed anything
	log_info("slat: firmware continues as the primary VM on %llu CPU(s) (SVM, NPT)\n",
		 (unsigned long long)n_enabled);
	return 0;
}
