// SPDX-License-Identifier: Apache-2.0
//
// Nested shadow MMU life cycle: creation, destruction and the settings. Above
// shadow.c (pages, slab, hash, lists) and shadow_zap.c (zapping), so that the
// shadow files call each other in one direction only (docs/mm.md, "Layers").
#include "core/mem.h"
#include "mm/shadow_internal.h"

// ---- creation -----------------------------------------------------------------------

static uint64_t default_quota(uint64_t guest_pages)
{
	uint64_t q = guest_pages / 50;

	return q > SH_MIN_QUOTA ? q : SH_MIN_QUOTA;
}

static unsigned pages_of(uint64_t bytes)
{
	return (unsigned)((bytes + S2_PAGE_SIZE - 1) / S2_PAGE_SIZE);
}

int sh_create(struct s2_vm *vm, const struct sh_config *cfg, struct sh_mmu **out)
{
	struct sh_config def = {0};
	struct s2_geom g;

	if (!vm || !out)
		return S2_E_INVAL;
	if (!cfg)
		cfg = &def;
	const struct s2_fmt *f = cfg->fmt ? cfg->fmt : s2_vm_fmt(vm);
	unsigned ia = cfg->ia_bits ? cfg->ia_bits : s2_vm_geom(vm)->ia_bits;
	if (!s2_fmt_geom(f, ia, &g) || g.root_pages != 1 || g.root_entries > S2_PTES)
		return S2_E_INVAL;

	uint64_t pa = vm->be->page_alloc(vm->be_ctx, pages_of(sizeof(struct sh_mmu)), S2_PAGE_SIZE);
	if (!pa)
		return S2_E_NOMEM;
	struct sh_mmu *m = (struct sh_mmu *)(uintptr_t)pa;
	memset(m, 0, sizeof(*m));
	m->vm = vm;
	m->fmt = f;
	m->geom = g;
	m->caps = s2_vm_caps(vm);
	m->recursive = !cfg->non_recursive;
	m->table_access = !cfg->tables_carry_no_access;
	m->guest_pages = cfg->guest_pages ? cfg->guest_pages : (uint64_t)SH_MIN_QUOTA * 50;
	m->quota = cfg->quota ? cfg->quota : default_quota(m->guest_pages);
	m->mem = cfg->mem;
	m->track = cfg->track;
	m->l1_rsvd_mask = cfg->l1_rsvd_mask;
	m->flush_fn = cfg->flush;
	m->flush_ctx = cfg->flush_ctx;
	m->sp_slab.obj_size = (uint32_t)((sizeof(struct sh_page) + 15) & ~15ull);
	m->desc_slab.obj_size = (uint32_t)((sizeof(struct sh_pdesc) + 15) & ~15ull);
	mm_epoch_init(&m->ep, m->ep_cpus, SH_MAX_CPUS);

	uint64_t buckets = 1024;
	while (buckets < m->guest_pages / 8 && buckets < (1ull << 22))
		buckets <<= 1;
	m->rmap_pages = pages_of(buckets * sizeof(struct sh_rmap *));
	m->rmap_pa = sh_pages_alloc(m, m->rmap_pages);
	if (!m->rmap_pa) {
		sh_pages_free(m, pa, pages_of(sizeof(struct sh_mmu)));
		return S2_E_NOMEM;
	}
	m->rmap_hash = (struct sh_rmap **)(uintptr_t)m->rmap_pa;
	m->rmap_mask = buckets - 1;
	s2_vm_set_shadow(vm, &sh_slot_ops, m);
	*out = m;
	return 0;
}

void sh_set_recursive(struct sh_mmu *m, bool recursive)
{
	sh_lock(m);
	m->recursive = recursive;
	sh_unlock(m);
}
