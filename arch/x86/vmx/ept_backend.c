// SPDX-License-Identifier: Apache-2.0
//
// The VMX side of the second-level back-end contract (mm/s2_backend.h): EPT
// table pages from Slat's reserved region (recycled through a free list),
// INVEPT for the primary's EPTP (the exit summary's figures are the engine's,
// arch/slat_counts.h).
// Runs only in the resident copy, in VMX root operation (or before the first
// VMXON, while the EPT is built).
//
// INVEPT acts on the calling CPU only. An invalidation runs INVEPT here (when
// this CPU is in VMX operation) and marks every other CPU, which invalidates
// at its next exit (vmx_ept_sync); one call counts as one invalidation. A CPU
// that stays in the guest keeps stale entries until it exits, which is
// enough for a map that only grows and for the batched teardown at power-off
// (no CPU runs the guest again).
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/vmx/vmx.h"
#include "core/page_pool.h"
#include "arch/x86/slat.h"

static struct page_pool mm_pool;
static uint64_t mm_eptp;
static int mm_live;
static uint8_t mm_stale[X86_MAX_CPUS]; // this CPU must INVEPT at its next exit

void vmx_mm_init(struct region *r)
{
	page_pool_init(&mm_pool, r);
}

// From now on this CPU may run INVEPT (VMX operation on every CPU that uses
// the EPT); `eptp` is what they use.
void vmx_mm_set_live(uint64_t eptp)
{
	mm_eptp = eptp;
	__atomic_store_n(&mm_live, 1, __ATOMIC_RELEASE);
}

static void invept_here(void)
{
	if (vmx_cfg.invept_single)
		vmx_invept(INVEPT_SINGLE, mm_eptp);
	else
		vmx_invept(INVEPT_ALL, 0);
}

// INVEPT here, and on every other CPU at its next exit (vmx_ept_sync).
static void vmx_ept_invalidate(void)
{
	if (__atomic_load_n(&mm_live, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < X86_MAX_CPUS; i++)
			__atomic_store_n(&mm_stale[i], 1, __ATOMIC_RELEASE);
		// Only a CPU in VMX operation gets here once the map is live.
		struct vcpu *v = x86_vcpu_for_apic(cpuid(1, 0).ebx >> 24);
		if (v && v->arch.backend) {
			invept_here();
			__atomic_store_n(&mm_stale[v->index], 0, __ATOMIC_RELEASE);
		}
	}
}

// Last thing before the entry: also the acknowledgement of the primary's
// SLAT shootdown (arch/x86/slat.h), which waits for it.
void vmx_ept_sync(unsigned cpu)
{
	bool ack = x86_slat_cpu_enter(cpu);

	if (cpu < X86_MAX_CPUS && (__atomic_load_n(&mm_stale[cpu], __ATOMIC_ACQUIRE) || ack)) {
		__atomic_store_n(&mm_stale[cpu], 0, __ATOMIC_RELEASE);
		invept_here();
	}
}

// What the shared x86 back end of the engine (arch/x86/slat.c) uses here.
const struct x86_slat_ops vmx_slat_ops = {
    .pool = &mm_pool,
    .invalidate_all_cpus = vmx_ept_invalidate,
};
