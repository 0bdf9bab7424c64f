// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's second-level map on x86, shared by the SVM (NPT) and VT-x
// (EPT) back ends: built and torn down by the mm/ engine, with only the
// format, the back end and the APIC page's protection differing.
//
// The map: guest-physical == host-physical over [0, 2^min(phys_bits, 40)),
// with the largest leaves alignment allows (1 GiB, 2 MiB, 4 KiB):
//   - RAM and ROM the firmware reports as cacheable (plan ranges of kind
//     Normal): write-back; everything else (MMIO, holes): uncacheable, so
//     the guest's own PAT/MTRR types only get stronger;
//   - Slat's region: not present (a guest access exits and the guest gets
//     #GP, see docs/x86-exits.md);
//   - the local APIC page: uncacheable with `apic_prot` (read-only when the
//     INIT/SIPI mailbox traps its writes, arch/x86/apic_mailbox.c).
// Everything else stays readable, writable and executable, as it was before
// Slat took over.
#ifndef SLAT_ARCH_X86_SLAT_H
#define SLAT_ARCH_X86_SLAT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/plan.h"

#define X86_SLAT_MAX_PHYS_BITS 40 // 1 TiB: two PDPT pages of 1 GiB leaves

struct page_pool;
struct s2_stats;
struct s2_fmt;
struct s2_root;
struct s2_vm;

// What differs between the SVM and VT-x back ends of the engine's contract:
// where table pages come from, and how every CPU's cached translations of the
// primary are invalidated (SVM: TLB_CONTROL at the next VMRUN; VT-x: INVEPT
// here and at the other CPUs' next exit). Host and root mode run with
// interrupts masked and nothing to schedule, so the shared back end never
// asks a walk to yield; roots never change under a running primary, so it
// has no kick_reload.
struct x86_slat_ops {
	struct page_pool *pool;
	void (*invalidate_all_cpus)(void);
};

struct x86_slat_params {
	const char *name; // "NPT" or "EPT", for messages
	const struct s2_fmt *fmt;
	const struct x86_slat_ops *ops;
	unsigned phys_bits; // the CPU's physical address width
	uint64_t apic;	    // local APIC page (guest-physical == host-physical)
	unsigned apic_prot; // S2_PROT_* of the APIC page
};

struct x86_slat {
	struct s2_vm *vm;
	struct s2_root *root;
	uint64_t top; // mapped guest-physical space: [0, top)
	uint64_t leaves_1g, leaves_2m, leaves_4k;
	uint64_t tables_built; // table pages after the build
};

// Builds the identity map of `plan` (minus Slat's region) into `s`. False,
// after logging why, when the engine cannot (out of Slat's memory).
bool x86_slat_build(struct x86_slat *s, const struct slat_plan *plan,
		    const struct x86_slat_params *p);

// The engine's batched teardown: everything below the root goes (the root
// stays, empty, since other CPUs may still run on it) with one invalidation
// through the back end and no per-entry invalidation. Returns the table pages
// freed; 0 when nothing was built. `work`: the engine's figures of this
// teardown (s2_root_teardown).
uint64_t x86_slat_teardown(struct x86_slat *s, struct s2_stats *work);

// Deposited pages: core/hv.h's arch_hv_primary_unmap, _map and _tables are
// slat.c's, in the map x86_slat_build made: S2_E_* of the engine. Unmap
// returns only when no other CPU can use a stale translation: the engine's
// invalidation flags every CPU, then each CPU in the primary's guest mode is
// kicked (NMI) and waited for (bounded; a CPU that never answers is logged).
// Called after every successful arch_hv_primary_unmap (nested SVM: shadow
// pages that map or shadow the range go too). One hook; NULL: none.
void x86_slat_on_primary_unmap(void (*fn)(uint64_t pa, uint64_t size));
// Permissions S2_PROT_* of the primary's pages [pa, pa + size) (large leaves
// split as needed); with fewer than RWX, returns only once no CPU can use the
// old rights (the same shootdown as unmap). Called with the primary VM's mmu
// lock held for write (the nested shadow engine's write-tracking hooks). The
// shootdown waits only for CPUs in guest mode, so a CPU spinning on the lock
// in host mode never blocks it.
int x86_slat_primary_protect_locked(uint64_t pa, uint64_t size, unsigned prot);
// Every CPU flushes the primary's translations (and nested ones) before it
// runs a guest again; returns once each CPU in guest mode did.
void x86_slat_primary_shootdown(void);
// The engine's records of the primary's map (NULL before x86_slat_build).
struct s2_vm *x86_slat_primary_vm(void);
struct s2_root *x86_slat_primary_root(void);
// The acknowledgement of both back ends: x86_slat_cpu_exit first thing on
// every exit of the primary's vCPU `cpu`, x86_slat_cpu_enter last thing
// before its entry; true: flush the primary's translations in this entry
// (SVM: TLB_CONTROL; VT-x: INVEPT).
void x86_slat_cpu_exit(unsigned cpu);
bool x86_slat_cpu_enter(unsigned cpu);

#endif
