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

// Deprivileges the calling CPU (x86_enter_all_cpus) through the resident
// copy's vmx_resident_cpu_start; returns 0 in guest mode.
static int cpu_enter(void *cpu_start)
{
	return (int)vmx_call_then_launch((uint64_t)(uintptr_t)cpu_start, NULL);
}

int vmx_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	struct x86_mp_services *mp = x86_mp_locate(st->BootServices);
	struct vmx_boot_args a = {.plan = plan};
	uint32_t ids[X86_MAX_CPUS];

	unsigned n = x86_mp_list_cpus(mp, ids, X86_MAX_CPUS);
	x86_acpi_install_madt(st, ids, n, &plan->fw.acpi_rsdp);
	x86_boot_measure(plan, st->BootServices, &a.power, &a.tsc_hz, &a.tsc_start);
	// The INIT/SIPI mailbox by default; the architectural wait-for-SIPI path
	// only when built with SLAT_VMX_NATIVE_SIPI=1 (untested: Bochs 2.7 breaks
	// it; see docs/vmx-primary.md) and when VMX_MISC says the CPU has it.
	a.native_sipi = SLAT_VMX_NATIVE_SIPI && (rdmsr(MSR_VMX_MISC) & (1u << 8));

	resident_init_fn init =
	    (resident_init_fn)x86_resident_addr(plan, (const void *)vmx_resident_init);
	if (init(&a) != 0)
		return -1;
	void *start =
	    (void *)(uintptr_t)x86_resident_addr(plan, (const void *)vmx_resident_cpu_start);
	int cpus = x86_enter_all_cpus(mp, n, cpu_enter, start, "vmx");
	if (cpus < 0)
		return -1;
	log_info("slat: firmware continues as the primary VM on %d CPU(s) (VT-x, EPT, VPID)\n",
		 cpus);
	return 0;
}
