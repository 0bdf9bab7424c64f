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
#include "arch/x86/mp.h"
#include "arch/x86/svm/svm.h"
#include "arch/x86/x86_boot.h"
#include "boot/efi.h"
#include "core/log.h"

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

static void EFIAPI ap_procedure(void *arg)
{
	struct ap_ctx *ctx = arg;

	if (cpu_enter(ctx) != 0)
		__atomic_fetch_add(&ctx->failures, 1, __ATOMIC_RELAXED);
}

int svm_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	EFI_BOOT_SERVICES *bs = st->BootServices;
	struct svm_boot_args a = {.plan = plan};
	struct x86_mp_services *mp = x86_mp_locate(bs);
	UINTN n_cpus = 1, n_enabled = 1;

	x86_power_from_acpi(plan->fw.acpi_rsdp, &a.power);
	if (x86_acpi_hide_s3(plan->fw.acpi_rsdp))
		log_info(
		    "slat: ACPI S3 not offered (\\_S3_ renamed in the DSDT): no resume path\n");
	a.tsc_hz = x86_tsc_hz(bs, a.power.pm_tmr, &a.tsc_start);
	a.features = cpuid(0x8000000au, 0).edx;
	resident_init_fn init =
	    (resident_init_fn)x86_resident_addr(plan, (const void *)svm_resident_init);
	if (init(&a) != 0)
		return -1;
	struct ap_ctx ctx = {
	    .prepare = (resident_prepare_fn)x86_resident_addr(
		plan, (const void *)svm_resident_cpu_prepare),
	};
	if (mp) {
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
