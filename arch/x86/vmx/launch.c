// SPDX-License-Identifier: Apache-2.0
//
// The loaded image's part of taking VMX root operation (boot services still
// up): list the CPUs (MP services), install a minimal MADT where the firmware
// has none (arch/x86/madt.c), read the ACPI power ports, time the TSC, let
// the resident copy build the host's tables and EPT, then deprivilege every
// CPU: the APs first through the firmware's MP services (each runs
// vmx_call_then_launch into the resident copy and returns to the firmware as
// a VMX guest), the boot CPU last. From the boot CPU's return on, this code
// runs in the primary VM.
#include "arch/x86/cpu.h"
#include "arch/x86/madt.h"
#include "arch/x86/mp.h"
#include "arch/x86/vmx/vmx.h"
#include "arch/x86/vmx/vmx_primary.h"
#include "arch/x86/x86_boot.h"
#include "boot/efi.h"
#include "core/log.h"

#ifndef SLAT_VMX_NATIVE_SIPI
#define SLAT_VMX_NATIVE_SIPI 0 // make EFI_EXTRA_CFLAGS=-DSLAT_VMX_NATIVE_SIPI=1
#endif

typedef int (*resident_init_fn)(struct vmx_boot_args *a);

struct ap_ctx {
	uint64_t cpu_start; // the resident copy's vmx_resident_cpu_start
	int failures;
};

static void EFIAPI ap_procedure(void *arg)
{
	struct ap_ctx *ctx = arg;

	if (vmx_call_then_launch(ctx->cpu_start, NULL) != 0)
		__atomic_fetch_add(&ctx->failures, 1, __ATOMIC_RELAXED);
}

int vmx_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	EFI_BOOT_SERVICES *bs = st->BootServices;
	struct x86_mp_services *mp = x86_mp_locate(bs);
	struct vmx_boot_args a = {.plan = plan};
	uint32_t ids[X86_MAX_CPUS];

	unsigned n = x86_mp_list_cpus(mp, ids, X86_MAX_CPUS);
	x86_acpi_install_madt(st, ids, n, &plan->fw.acpi_rsdp);
	x86_power_from_acpi(plan->fw.acpi_rsdp, &a.power);
	if (x86_acpi_hide_s3(plan->fw.acpi_rsdp))
		log_info(
		    "slat: ACPI S3 not offered (\\_S3_ renamed in the DSDT): no resume path\n");
	a.tsc_hz = x86_tsc_hz(bs, a.power.pm_tmr, &a.tsc_start);
	// The INIT/SIPI mailbox by default; the architectural wait-for-SIPI path
	// only when built with SLAT_VMX_NATIVE_SIPI=1 (untested: Bochs 2.7 breaks
	// it; see docs/vmx-primary.md) and when VMX_MISC says the CPU has it.
	a.native_sipi = SLAT_VMX_NATIVE_SIPI && (rdmsr(MSR_VMX_MISC) & (1u << 8));

	resident_init_fn init =
	    (resident_init_fn)x86_resident_addr(plan, (const void *)vmx_resident_init);
	if (init(&a) != 0)
		return -1;
	struct ap_ctx ctx = {.cpu_start =
				 x86_resident_addr(plan, (const void *)vmx_resident_cpu_start)};
	if (mp && n > 1) {
		EFI_STATUS s = mp->startup_all_aps(mp, ap_procedure, TRUE, NULL, 0, &ctx, NULL);
		if (EFI_ERROR(s) || ctx.failures)
			log_err("vmx: %d AP(s) could not enter VMX guest mode (0x%llx); they run "
				"outside Slat\n",
				ctx.failures, (unsigned long long)s);
	} else if (!mp) {
		log_warn("vmx: no MP services protocol: only the boot CPU is virtualized\n");
	}
	if (vmx_call_then_launch(ctx.cpu_start, NULL) != 0)
		return -1; // only possible before the boot CPU changed anything
	log_info("slat: firmware continues as the primary VM on %u CPU(s) (VT-x, EPT, VPID)\n",
		 n - (unsigned)ctx.failures);
	return 0;
}
