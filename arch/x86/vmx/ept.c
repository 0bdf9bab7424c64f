// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's EPT: the shared x86 identity SLAT (arch/x86/slat.h) in the
// Intel EPT 4-level format (arch/x86/fmt_ept.c), over the VMX back end of
// ept_backend.c (pages from Slat's region, INVEPT). The local APIC page is
// read-only when the INIT/SIPI mailbox is used, so that every write exits.
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/slat.h"
#include "arch/x86/vmx/vmx.h"
#include "arch/slat_counts.h"
#include "core/log.h"
#include "mm/s2.h"

static struct x86_slat ept;

bool vmx_ept_build(struct region *r, const struct slat_plan *plan, const struct vmx_config *cf,
		   uint64_t apic, uint64_t *eptp, struct vmx_ept_counts *counts)
{
	unsigned phys =
	    cpuid(0x80000000u, 0).eax >= 0x80000008u ? cpuid(0x80000008u, 0).eax & 0xff : 36;
	const struct x86_slat_params p = {
	    .name = "EPT",
	    .fmt = cf->ept_1g ? &s2_fmt_ept4 : &s2_fmt_ept4_2m, // as vmx_hv_ops's
	    .ops = &vmx_slat_ops,
	    .phys_bits = phys,
	    .apic = apic,
	    .apic_prot = cf->native_sipi ? S2_PROT_RWX : S2_PROT_R,
	};
	struct slat_mm_counts mc;

	// 4 KiB leaves alone would take 2 MiB of tables per GiB mapped.
	if (!cf->ept_2m) {
		log_err("vmx: EPT without 2 MiB pages: not supported\n");
		return false;
	}
	if (!cf->ept_1g)
		log_info("vmx: EPT without 1 GiB pages: the map uses 2 MiB leaves\n");
	vmx_mm_init(r);
	if (!x86_slat_build(&ept, plan, &p))
		return false;
	vmx_ept_mm_counts(&mc);
	*counts = (struct vmx_ept_counts){
	    .leaves_1g = ept.leaves_1g,
	    .leaves_2m = ept.leaves_2m,
	    .leaves_4k = ept.leaves_4k,
	    .table_pages = mc.table_pages,
	    .top = ept.top,
	};
	*eptp = ept_eptp(s2_root_pa(ept.root), 4, false);
	vmx_mm_set_live(*eptp);
	return true;
}

// Batched teardown by the engine: detach everything below the root (which
// stays, empty: other CPUs may still run on it), one invalidation, then free
// the tables with no per-entry invalidation.
void vmx_ept_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	struct s2_stats work;

	*pages_freed = x86_slat_teardown(&ept, &work);
	*invalidations = work.inval_context;
}

// EPT walks are cache-coherent on x86: no maintenance, so cmos stays 0.
void vmx_ept_mm_counts(struct slat_mm_counts *out)
{
	*out = slat_mm_counts_of(ept.vm);
}
