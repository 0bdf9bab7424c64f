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
#include "arch/x86/vmx/vmx.h"
#include "arch/x86/vmx/vmx_primary.h"
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
struct mp_cpu_info {
	uint64_t processor_id; // the local APIC ID
	uint32_t status_flag;  // bit 0 BSP, bit 1 enabled, bit 2 healthy
	uint32_t location[3];
	uint32_t extended[6];
};
struct mp_services {
	EFI_STATUS(EFIAPI *get_number_of_processors)
	(struct mp_services *self, UINTN *n, UINTN *enabled);
	EFI_STATUS(EFIAPI *get_processor_info)
	(struct mp_services *self, UINTN n, struct mp_cpu_info *info);
	EFI_STATUS(EFIAPI *startup_all_aps)
	(struct mp_services *self, mp_procedure proc, BOOLEAN single_thread, EFI_EVENT wait,
	 UINTN timeout_us, void *arg, UINTN **failed);
	void *startup_this_ap, *switch_bsp, *enable_disable_ap, *who_am_i;
};

#ifndef SLAT_VMX_NATIVE_SIPI
#define SLAT_VMX_NATIVE_SIPI 0 // make EFI_EXTRA_CFLAGS=-DSLAT_VMX_NATIVE_SIPI=1
#endif

typedef int (*resident_init_fn)(struct vmx_boot_args *a);

struct ap_ctx {
	uint64_t cpu_start; // the resident copy's vmx_resident_cpu_start
	int failures;
};

static uint64_t resident_addr(const struct slat_plan *plan, const void *sym)
{
	return (uint64_t)(uintptr_t)sym - plan->image_base + plan->resident_base;
}

static void EFIAPI ap_procedure(void *arg)
{
	struct ap_ctx *ctx = arg;

	if (vmx_call_then_launch(ctx->cpu_start, NULL) != 0)
		__atomic_fetch_add(&ctx->failures, 1, __ATOMIC_RELAXED);
}

static uint64_t tsc_hz(EFI_BOOT_SERVICES *bs, uint64_t *start)
{
	uint64_t t0 = rdtsc();

	bs->Stall(10000); // 10 ms
	*start = t0;
	return (rdtsc() - t0) * 100;
}

// The enabled CPUs' APIC IDs (MP services), or just this CPU's.
static unsigned list_cpus(struct mp_services *mp, uint32_t *ids, unsigned max)
{
	UINTN n = 1, enabled = 1;
	unsigned k = 0;

	if (mp && !EFI_ERROR(mp->get_number_of_processors(mp, &n, &enabled))) {
		for (UINTN i = 0; i < n && k < max; i++) {
			struct mp_cpu_info info = {0};
			if (!EFI_ERROR(mp->get_processor_info(mp, i, &info)) &&
			    (info.status_flag & 2))
				ids[k++] = (uint32_t)info.processor_id;
		}
	}
	if (!k)
		ids[k++] = cpuid(1, 0).ebx >> 24;
	return k;
}

int vmx_enter_primary(struct slat_plan *plan)
{
	EFI_SYSTEM_TABLE *st = (EFI_SYSTEM_TABLE *)plan->fw.efi_system_table;
	EFI_BOOT_SERVICES *bs = st->BootServices;
	EFI_GUID mp_guid = MP_SERVICES_GUID;
	struct mp_services *mp = NULL;
	struct vmx_boot_args a = {.plan = plan};
	uint32_t ids[X86_MAX_CPUS];

	if (EFI_ERROR(bs->LocateProtocol(&mp_guid, NULL, (void **)&mp)))
		mp = NULL;
	unsigned n = list_cpus(mp, ids, X86_MAX_CPUS);
	x86_acpi_install_madt(st, ids, n, &plan->fw.acpi_rsdp);
	x86_power_from_acpi(plan->fw.acpi_rsdp, &a.power);
	a.tsc_hz = tsc_hz(bs, &a.tsc_start);
	// The INIT/SIPI mailbox by default; the architectural wait-for-SIPI path
	// only when built with SLAT_VMX_NATIVE_SIPI=1 (untested: Bochs 2.7 breaks
	// it; see docs/vmx-primary.md) and when VMX_MISC says the CPU has it.
	a.native_sipi = SLAT_VMX_NATIVE_SIPI && (rdmsr(MSR_VMX_MISC) & (1u << 8));

	resident_init_fn init =
	    (resident_init_fn)resident_addr(plan, (const void *)vmx_resident_init);
	if (init(&a) != 0)
		return -1;
	struct ap_ctx ctx = {.cpu_start =
				 resident_addr(plan, (const void *)vmx_resident_cpu_start)};
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
