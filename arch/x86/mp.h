// SPDX-License-Identifier: Apache-2.0
//
// What the SVM and VT-x launchers share while boot services are still up
// (loaded image only): the firmware's MP services, the list of enabled CPUs,
// the TSC rate, and the address of a symbol in Slat's resident copy.
#ifndef SLAT_ARCH_X86_MP_H
#define SLAT_ARCH_X86_MP_H

#include <stdint.h>

#include "boot/efi.h"
#include "core/plan.h"

// EFI_MP_SERVICES_PROTOCOL (UEFI PI specification, vol. 2, 13.4): the part
// Slat calls.
typedef void(EFIAPI *x86_mp_procedure)(void *arg);
struct x86_mp_cpu_info {
	uint64_t processor_id; // the local APIC ID
	uint32_t status_flag;  // bit 0 BSP, bit 1 enabled, bit 2 healthy
	uint32_t location[3];
	uint32_t extended[6];
};
struct x86_mp_services {
	EFI_STATUS(EFIAPI *get_number_of_processors)
	(struct x86_mp_services *self, UINTN *n, UINTN *enabled);
	EFI_STATUS(EFIAPI *get_processor_info)
	(struct x86_mp_services *self, UINTN n, struct x86_mp_cpu_info *info);
	EFI_STATUS(EFIAPI *startup_all_aps)
	(struct x86_mp_services *self, x86_mp_procedure proc, BOOLEAN single_thread, EFI_EVENT wait,
	 UINTN timeout_us, void *arg, UINTN **failed);
	void *startup_this_ap, *switch_bsp, *enable_disable_ap, *who_am_i;
};

// The firmware's MP services, or NULL (then only the boot CPU runs Slat).
struct x86_mp_services *x86_mp_locate(EFI_BOOT_SERVICES *bs);

// The enabled CPUs' APIC IDs (at most `max`), or just this CPU's.
unsigned x86_mp_list_cpus(struct x86_mp_services *mp, uint32_t *ids, unsigned max);

// TSC ticks per second, timed over 10 ms by the ACPI PM timer (3.579545 MHz,
// 24 bits) when `pm_tmr` is its port, so that a Stall() that returns late (a
// loaded host under emulation) does not skew it; else by Stall() alone.
// *start is the TSC at the beginning of the interval.
uint64_t x86_tsc_hz(EFI_BOOT_SERVICES *bs, uint16_t pm_tmr, uint64_t *start);

struct x86_power_ports;
// What both launchers read first: the ACPI power ports (\_S3_ hidden from
// the DSDT, logged), then the TSC rate (x86_tsc_hz).
void x86_boot_measure(const struct slat_plan *plan, EFI_BOOT_SERVICES *bs,
		      struct x86_power_ports *power, uint64_t *tsc_hz, uint64_t *tsc_start);

// Deprivileges every CPU with enter(arg) (0: the CPU returned in guest
// mode): the APs first through the MP services (`n` CPUs enabled, those
// that fail are logged and run outside Slat), the calling boot CPU last.
// Returns how many CPUs run in guest mode, or -1 when the boot CPU failed
// (before it changed anything).
int x86_enter_all_cpus(struct x86_mp_services *mp, unsigned n, int (*enter)(void *arg), void *arg,
		       const char *vendor);

// Where `sym` of the loaded image lives in Slat's resident copy.
static inline uint64_t x86_resident_addr(const struct slat_plan *plan, const void *sym)
{
	return (uint64_t)(uintptr_t)sym - plan->image_base + plan->resident_base;
}

#endif
