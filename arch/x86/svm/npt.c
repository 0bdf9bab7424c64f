// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's nested page tables: the shared x86 identity SLAT
// (arch/x86/slat.h) in the AMD64 NPT format (arch/x86/fmt_npt.c), over the SVM
// back end of npt_backend.c (pages from Slat's region, ASID flushes through
// TLB_CONTROL). The local APIC page is read-only so that every write exits to
// the INIT/SIPI mailbox.
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/slat.h"
#include "arch/x86/svm/svm.h"
#include "arch/slat_counts.h"
#include "core/log.h"
#include "mm/s2.h"

static struct x86_slat npt;

// Without Page1GB (CPUID 0x80000001 EDX bit 26) PS in a PDPE is a reserved bit.
const struct s2_fmt *svm_npt_fmt(void)
{
	return cpuid(0x80000001u, 0).edx & (1u << 26) ? &s2_fmt_npt4 : &s2_fmt_npt4_2m;
}

bool svm_npt_build(const struct slat_plan *plan, uint64_t apic_page, unsigned phys_bits,
		   uint64_t *root, struct svm_npt_stats *st)
{
	const struct x86_slat_params p = {
	    .name = "NPT",
	    .fmt = svm_npt_fmt(),
	    .ops = &svm_slat_ops,
	    .phys_bits = phys_bits,
	    .apic = apic_page,
	    .apic_prot = S2_PROT_R,
	};

	if (!x86_slat_build(&npt, plan, &p))
		return false;
	if (p.fmt == &s2_fmt_npt4_2m)
		log_info("svm: no 1 GiB pages (CPUID Page1GB clear): NPT maps with 2 MiB leaves\n");
	*st = (struct svm_npt_stats){
	    .leaves_1g = npt.leaves_1g,
	    .leaves_2m = npt.leaves_2m,
	    .leaves_4k = npt.leaves_4k,
	    .top = npt.top,
	};
	*root = s2_root_pa(npt.root);
	return true;
}

// Batched teardown by the engine: detach everything below the root (which
// stays, empty: other CPUs may still run on it), one invalidation for every
// vCPU, then free the tables with no per-entry invalidation.
void svm_npt_teardown(uint64_t *pages_freed, uint64_t *invalidations)
{
	struct s2_stats work;

	*pages_freed = x86_slat_teardown(&npt, &work);
	*invalidations = work.inval_context;
}

void svm_mm_counts(struct slat_mm_counts *out)
{
	*out = slat_mm_counts_of(npt.vm);
}
