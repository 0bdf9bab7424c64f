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

// The plan's ranges in the engine's terms (built once, on the boot CPU).
static struct s2_ident_range slat_mem[PLAN_MAX_RANGES];

// RAM and ROM write-back, MMIO and holes uncacheable, all RWX; Slat's region
// never mapped; the APIC page with its own protection.
static struct s2_ident_layout slat_layout(const struct slat_plan *plan,
					  const struct x86_slat_params *p, uint64_t top,
					  struct s2_ident_range *apic)
{
	for (unsigned i = 0; i < plan->n_ranges; i++)
		slat_mem[i] = (struct s2_ident_range){
		    plan->ranges[i].base, plan->ranges[i].size,
		    plan->ranges[i].kind == PLAN_MEM_NORMAL ? S2_MT_WB : S2_MT_DEVICE, S2_PROT_RWX};
	*apic = (struct s2_ident_range){p->apic, 4096, S2_MT_DEVICE, p->apic_prot};
	return (struct s2_ident_layout){
	    .top = top,
	    .mem = slat_mem,
	    .n_mem = plan->n_ranges,
	    .gap_mt = S2_MT_DEVICE,
	    .gap_prot = S2_PROT_RWX,
	    .hole_base = plan->region.base,
	    .hole_size = plan->region.size,
	    .over = apic,
	    .n_over = p->apic < top ? 1 : 0,
	};
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
	struct s2_ident_range apic;
	struct s2_ident_layout layout;
	struct s2_stats st;
	int err;

	*s = (struct x86_slat){.top = 1ull << bits};
	err = s2_vm_create(&cfg, &s->vm);
	if (!err)
		err = s2_root_get(s->vm, (struct s2_role){0, 0}, &s->root);
	if (err) {
		log_err("x86: cannot create the %s (%d)\n", p->name, err);
		return false;
	}
	layout = slat_layout(plan, p, s->top, &apic);
	err = s2_map_identity(s->vm, s->root, &layout, &st);
	if (err) {
		log_err("x86: cannot build the %s (%d; out of Slat memory?)\n", p->name, err);
		return false;
	}
	s->leaves_1g = st.leaves_mapped[2];
	s->leaves_2m = st.leaves_mapped[1];
	s->leaves_4k = st.leaves_mapped[0];
	return true;
}

uint64_t x86_slat_teardown(struct x86_slat *s, struct s2_stats *work)
{
	*work = (struct s2_stats){0};
	if (!s->vm || !s->root)
		return 0;
	return s2_root_teardown(s->vm, s->root, work);
}
