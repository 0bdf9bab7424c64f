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

// Deprivileges the calling CPU (x86_enter_all_cpus); returns 0 in guest mode.
// `prepare` is the resident copy's svm_resident_cpu_prepare; svm_launch is
// this image's copy: the guest's return path must stay in the loaded image.
static int cpu_enter(void *prepare)
{
	struct svm_cpu *c = ((resident_prepare_fn)prepare)();

	return c ? svm_launch(c) : -1;
}

int svm_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	struct svm_boot_args a = {.plan = plan};
	struct x86_mp_services *mp = x86_mp_locate(st->BootServices);
	uint32_t ids[X86_MAX_CPUS];
	unsigned n = x86_mp_list_cpus(mp, ids, X86_MAX_CPUS);

	x86_boot_measure(plan, st->BootServices, &a.power, &a.tsc_hz, &a.tsc_start);
	a.features = cpuid(0x8000000au, 0).edx;
	resident_init_fn init =
	    (resident_init_fn)x86_resident_addr(plan, (const void *)svm_resident_init);
	if (init(&a) != 0)
		return -1;
	void *prepare =
	    (void *)(uintptr_t)x86_resident_addr(plan, (const void *)svm_resident_cpu_prepare);
	int cpus = x86_enter_all_cpus(mp, n, cpu_enter, prepare, "svm");
	if (cpus < 0)
		return -1;
	log_info("slat: firmware continues as the primary VM on %d CPU(s) (SVM, NPT)\n", cpus);
	return 0;
}
