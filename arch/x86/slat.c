// SPDX-License-Identifier: Apache-2.0
//
// The x86 primary VM's identity SLAT through the mm/ engine (see slat.h).
#include "arch/x86/slat.h"
#include "core/config.h"
#include "core/log.h"
#include "core/page_pool.h"
#include "mm/s2.h"

// ---- the engine's back-end contract (mm/s2_backend.h), ctx = x86_slat_ops
static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	return page_pool_alloc(((const struct x86_slat_ops *)ctx)->pool, npages, align);
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	page_pool_free(((const struct x86_slat_ops *)ctx)->pool, pa, npages);
}

static void be_inval_context(void *ctx, struct s2_vm *vm)
{
	((const struct x86_slat_ops *)ctx)->invalidate_all_cpus();
}

static bool be_need_resched(void *ctx)
{
	return false;
}

static void be_relax(void *ctx)
{
	__asm__ volatile("pause");
}

static const struct s2_backend x86_slat_backend = {
    .page_alloc = be_page_alloc,
    .page_free = be_page_free,
    .inval_context = be_inval_context,
    .need_resched = be_need_resched,
    .yield = be_relax,
    .cpu_relax = be_relax,
};

struct slat_build {
	struct x86_slat *s;
	const struct x86_slat_params *p;
	const struct region *hole; // Slat's region: never mapped
	int err;
};

static void slat_map(struct slat_build *b, uint64_t base, uint64_t size, unsigned prot,
		     enum s2_memtype mt)
{
	if (!size || b->err)
		return;
	b->err = s2_map(b->s->vm, b->s->root, base, size, base, prot, mt);
	if (b->err)
		log_err("x86: %s map of 0x%llx+0x%llx failed (%d)\n", b->p->name,
			(unsigned long long)base, (unsigned long long)size, b->err);
}

// [base, end) of one kind, minus Slat's region, with the APIC page apart.
static void slat_emit(struct slat_build *b, uint64_t base, uint64_t end, bool normal)
{
	uint64_t hb = b->hole->base, he = b->hole->base + b->hole->size, apic = b->p->apic;
	enum s2_memtype mt = normal ? S2_MT_WB : S2_MT_DEVICE;

	if (base >= end)
		return;
	if (base < he && hb < end) { // overlaps Slat's region: map around it
		slat_emit(b, base, hb < base ? base : hb, normal);
		slat_emit(b, he > end ? end : he, end, normal);
		return;
	}
	if (apic >= base && apic < end) {
		slat_map(b, base, apic - base, S2_PROT_RWX, mt);
		slat_map(b, apic, 4096, b->p->apic_prot, S2_MT_DEVICE);
		slat_map(b, apic + 4096, end - apic - 4096, S2_PROT_RWX, mt);
		return;
	}
	slat_map(b, base, end - base, S2_PROT_RWX, mt);
}

// Plan ranges in order; the gaps between them (and above the last) are MMIO.
static void slat_emit_plan(struct slat_build *b, const struct slat_plan *plan, uint64_t top)
{
	uint64_t cursor = 0;

	for (unsigned i = 0; i < plan->n_ranges && cursor < top; i++) {
		const struct plan_range *r = &plan->ranges[i];
		uint64_t end = r->base + r->size < top ? r->base + r->size : top;

		if (r->base > cursor)
			slat_emit(b, cursor, r->base < top ? r->base : top, false);
		if (end > r->base && end > cursor)
			slat_emit(b, r->base > cursor ? r->base : cursor, end,
				  r->kind == PLAN_MEM_NORMAL);
		if (end > cursor)
			cursor = end;
	}
	slat_emit(b, cursor, top, false);
}

bool x86_slat_build(struct x86_slat *s, const struct slat_plan *plan,
		    const struct x86_slat_params *p)
{
	unsigned bits =
	    p->phys_bits < X86_SLAT_MAX_PHYS_BITS ? p->phys_bits : X86_SLAT_MAX_PHYS_BITS;
	struct s2_vm_config cfg = {
	    .fmt = p->fmt,
	    .be = &x86_slat_backend,
	    .be_ctx = (void *)p->ops,
	    .zap_mode = plan->zap_mode == CFG_ZAP_ALL ? S2_ZAP_ALL : S2_ZAP_SLOT,
	};
	struct slat_build b = {.s = s, .p = p, .hole = &plan->region};
	struct s2_stats st;

	*s = (struct x86_slat){.top = 1ull << bits};
	b.err = s2_vm_create(&cfg, &s->vm);
	if (!b.err)
		b.err = s2_root_get(s->vm, (struct s2_role){0, 0}, &s->root);
	if (b.err) {
		log_err("x86: cannot create the %s (%d)\n", p->name, b.err);
		return false;
	}
	slat_emit_plan(&b, plan, s->top);
	if (b.err) {
		log_err("x86: cannot build the %s (out of Slat memory?)\n", p->name);
		return false;
	}
	s2_vm_stats(s->vm, &st);
	s->leaves_1g = st.leaves_mapped[2];
	s->leaves_2m = st.leaves_mapped[1];
	s->leaves_4k = st.leaves_mapped[0];
	return true;
}

uint64_t x86_slat_teardown(struct x86_slat *s)
{
	if (!s->vm || !s->root)
		return 0;
	return s2_root_teardown(s->vm, s->root);
}
