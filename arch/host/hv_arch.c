// SPDX-License-Identifier: Apache-2.0
//
// The hosted implementation of the secondary-VM contract (core/hv.h, core ->
// arch): an NPT-format SLAT over the process's memory, vCPUs whose "guest" is
// a function the test installs (host_hv_guest), and no broadcast
// invalidation, so core's kick-and-wait path runs as on x86. A "physical CPU"
// is a thread: host_hv_set_pcpu() names it.
#include <sched.h>

#include "arch/host/hv_host.h"
#include "arch/x86/fmt_x86.h"
#include "core/hv.h"
#include "core/mem.h"

host_hv_guest_fn host_hv_guest;
uint64_t host_hv_kicks;
uint32_t host_hv_kick_flag[64];
_Static_assert(HV_MAX_PCPUS == 64, "one kick flag per physical CPU");
static __thread unsigned this_pcpu;

void host_hv_set_pcpu(unsigned cpu)
{
	this_pcpu = cpu;
}

void arch_hv_s2_config(struct s2_vm_config *cfg)
{
	cfg->fmt = &s2_fmt_npt4;
	cfg->ia_bits = 48;
	cfg->caps = s2_fmt_npt4.caps;
}

int arch_hv_vcpu_create(struct vcpu *v)
{
	uint64_t pa = hv_page_alloc(v->vm);

	if (!pa)
		return HC_E_NOMEM;
	v->arch = (struct vcpu_arch){0};
	v->arch.state_page = pa;
	v->arch.pstate = 0x3c5; // EL1h, DAIF masked: the arm64 reset state
	return HC_OK;
}

void arch_hv_vcpu_destroy(struct vcpu *v)
{
	hv_page_free(v->vm, v->arch.state_page);
	v->arch.state_page = 0;
}

// The arm64 rule: AArch64 EL0t, EL1t or EL1h only.
int arch_hv_set_regs(struct vcpu *v, const void *page)
{
	const struct hc_regs_arm64 *r = page;
	uint64_t mode = r->pstate & 0x1f;

	if (mode != 0x0 && mode != 0x4 && mode != 0x5)
		return HC_E_INVAL;
	v->arch.pc = r->pc;
	v->arch.x0 = r->x[0];
	v->arch.pstate = r->pstate;
	return HC_OK;
}

void arch_hv_get_regs(struct vcpu *v, void *page)
{
	struct hc_regs_arm64 *r = page;

	r->pc = v->arch.pc;
	r->x[0] = v->arch.x0;
	r->pstate = v->arch.pstate;
	r->mpidr_el1 = v->index;
}

// The architecture's call range: a recorder the unit tests give hv_init
// (hv_boot.arch_call); the last call is recorded, and none is known.
uint32_t host_hv_arch_fn;
uint64_t host_hv_arch_args[HC_NARGS];

int host_hv_arch_call(uint32_t fn, const uint64_t *a, uint64_t *res)
{
	host_hv_arch_fn = fn;
	memcpy(host_hv_arch_args, a, sizeof(host_hv_arch_args));
	return HC_E_UNKNOWN;
}

int arch_hv_run(struct vcpu *caller, struct vcpu *v, struct hc_run *run)
{
	if (!host_hv_guest) {
		run->reason = HC_EXIT_HALT;
		return HC_OK;
	}
	return host_hv_guest(v, run);
}

bool arch_hv_flush_vm(struct vm *vm)
{
	return false;
}

void arch_hv_kick_pcpu(unsigned pcpu)
{
	__atomic_fetch_add(&host_hv_kicks, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&host_hv_kick_flag[pcpu], 1, __ATOMIC_RELEASE);
}

unsigned arch_hv_pcpu(void)
{
	return this_pcpu;
}

void arch_hv_relax(void)
{
	sched_yield();
}

// ---- the primary's SLAT: recorded, not built --------------------------------------
struct host_hv_range host_hv_ranges[HOST_HV_RANGES];
unsigned host_hv_nranges;
unsigned host_hv_primary_fail;

static int host_primary_op(uint64_t pa, uint64_t pages, int unmap)
{
	if (host_hv_primary_fail) {
		host_hv_primary_fail--;
		return S2_E_NOMEM;
	}
	// A range that continues the last one (either way) in the same state
	// extends it: the record stays small when a test withdraws tens of
	// thousands of pages one descending run at a time.
	struct host_hv_range *last = host_hv_nranges ? &host_hv_ranges[host_hv_nranges - 1] : NULL;
	if (last && last->unmap == unmap && last->pa + last->pages * 4096 == pa) {
		last->pages += pages;
		return S2_OK;
	}
	if (last && last->unmap == unmap && pa + pages * 4096 == last->pa) {
		last->pa = pa;
		last->pages += pages;
		return S2_OK;
	}
	if (host_hv_nranges < HOST_HV_RANGES)
		host_hv_ranges[host_hv_nranges++] = (struct host_hv_range){pa, pages, unmap};
	return S2_OK;
}

int arch_hv_primary_unmap(uint64_t pa, uint64_t pages)
{
	return host_primary_op(pa, pages, 1);
}

int arch_hv_primary_map(uint64_t pa, uint64_t pages)
{
	return host_primary_op(pa, pages, 0);
}

uint64_t arch_hv_primary_tables(void)
{
	return 0;
}

int host_hv_primary_unmapped(uint64_t pa)
{
	for (unsigned i = host_hv_nranges; i-- > 0;) { // the last record of pa decides
		const struct host_hv_range *r = &host_hv_ranges[i];
		if (pa >= r->pa && pa < r->pa + r->pages * 4096)
			return r->unmap;
	}
	return 0;
}
