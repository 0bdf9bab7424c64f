// SPDX-License-Identifier: GPL-2.0
/*
 * The deposit pool: pages the module gives Slat (DEPOSIT) when a call answers
 * HC_E_NOMEM, and takes back (WITHDRAW) after a VM is destroyed and at unload.
 * Every deposited frame is recorded in slat_deposited; a withdrawn frame is
 * freed only if it is recorded there (Slat gives back what it was given).
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/printk.h>

#include "slat.h"

#define SLAT_CHUNK_ORDER 4 /* 16 contiguous pages per DEPOSIT */

static DEFINE_XARRAY(slat_deposited); /* pfn -> xa_mk_value(1) */
static atomic64_t slat_dep_now, slat_dep_calls, slat_withdrawn;

int slat_pool_deposit_chunk(void)
{
	const unsigned long n = 1ul << SLAT_CHUNK_ORDER;
	struct page *pg = alloc_pages(GFP_KERNEL | __GFP_ZERO, SLAT_CHUNK_ORDER);
	unsigned long i, pfn;
	u64 r[3];
	u64 a[6] = {0};
	long st;

	if (!pg)
		return -ENOMEM;
	split_page(pg, SLAT_CHUNK_ORDER);
	pfn = page_to_pfn(pg);
	/* Recorded first: Slat may hand them back as soon as it has them. */
	for (i = 0; i < n; i++)
		if (xa_err(xa_store(&slat_deposited, pfn + i, xa_mk_value(1), GFP_KERNEL)))
			goto undo;
	a[0] = PFN_PHYS(pfn);
	a[1] = n;
	st = slat_arch_hcall(HC_FN(HC_DEPOSIT), a, r);
	if (st != HC_OK) {
		pr_warn_ratelimited("slat: DEPOSIT of %lu pages at %#llx refused (%ld)\n", n, a[0],
				    st);
		goto undo;
	}
	atomic64_add(n, &slat_dep_now);
	atomic64_inc(&slat_dep_calls);
	return 0;
undo:
	for (i = 0; i < n; i++) {
		xa_erase(&slat_deposited, pfn + i);
		__free_page(pg + i);
	}
	return -ENOMEM;
}

void slat_pool_take_back(const u64 *pfns, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		if (!xa_erase(&slat_deposited, pfns[i])) {
			pr_err_ratelimited(
			    "slat: WITHDRAW gave back frame %#llx never deposited; not freed\n",
			    pfns[i]);
			continue;
		}
		__free_page(pfn_to_page(pfns[i]));
		atomic64_dec(&slat_dep_now);
		atomic64_inc(&slat_withdrawn);
	}
}

void slat_pool_withdraw_all(void)
{
	struct page *list = alloc_page(GFP_KERNEL | __GFP_ZERO);
	u64 a[6] = {0}, r[3], *pfns;
	long st;

	if (!list) {
		pr_warn("slat: no page for WITHDRAW; pool pages stay with Slat\n");
		return;
	}
	pfns = page_address(list);
	a[0] = slat_pa(list);
	a[1] = HC_LIST_MAX;
	/* Bounded: each round gives back >= 1 of the finitely many deposited pages. */
	for (;;) {
		st = slat_arch_hcall(HC_FN(HC_WITHDRAW), a, r);
		if (st != HC_OK || r[0] == 0 || r[0] > HC_LIST_MAX)
			break;
		slat_pool_take_back(pfns, r[0]);
	}
	if (st != HC_OK)
		pr_warn("slat: WITHDRAW answered %ld\n", st);
	__free_page(list);
}

void slat_pool_stats(struct slat_module_stats *s)
{
	s->vms = atomic64_read(&slat_vms_alive);
	s->pinned_pages = atomic64_read(&slat_pinned_pages);
	s->deposited_now = atomic64_read(&slat_dep_now);
	s->deposits = atomic64_read(&slat_dep_calls);
	s->withdrawn = atomic64_read(&slat_withdrawn);
	s->nomem_retries = atomic64_read(&slat_nomem_retries);
	s->hv_version = slat_hv_version;
	s->last_destroy_ns = atomic64_read(&slat_last_destroy_ns);
}

void slat_pool_exit(void)
{
	long left = atomic64_read(&slat_dep_now);

	/* Pages Slat kept cannot be freed: the primary may not touch them. */
	if (left)
		pr_warn("slat: unloading with %ld pages still deposited (leaked on purpose)\n",
			left);
	xa_destroy(&slat_deposited);
}
