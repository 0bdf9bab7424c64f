// SPDX-License-Identifier: Apache-2.0
//
// The x86 primary VM's identity SLAT through the mm/ engine (see slat.h).
#include "arch/x86/slat.h"
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/slat_shoot.h"
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

static struct x86_slat *slat_primary;	    // the map x86_slat_build made last
static const struct x86_slat_ops *slat_ops; // its back end

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
	s->tables_built = st.tables_live;
	slat_primary = s;
	slat_ops = p->ops;
	return true;
}

uint64_t x86_slat_teardown(struct x86_slat *s, struct s2_stats *work)
{
	*work = (struct s2_stats){0};
	if (!s->vm || !s->root)
		return 0;
	return s2_root_teardown(s->vm, s->root, work);
}

// ---- deposited pages out of the primary's map, and the shootdown -----------------
// The protocol is arch/x86/slat_shoot.c. A CPU gets SLAT_SHOOT_SECONDS of TSC
// time to answer (an emulator's vCPU thread on a loaded host can be off its
// core for seconds; a pause-loop count was too short there), with a new kick
// every SLAT_REKICK pauses.
#define SLAT_SHOOT_SECONDS 20u
#define SLAT_REKICK	   (1u << 20)
_Static_assert(X86_MAX_CPUS <= X86_SHOOT_CPUS, "one shootdown record per CPU");

static struct x86_shoot slat_shoot;
static bool slat_shoot_waited;

void x86_slat_cpu_exit(unsigned cpu)
{
	x86_shoot_exit(&slat_shoot, cpu);
}

bool x86_slat_cpu_enter(unsigned cpu)
{
	return x86_shoot_enter(&slat_shoot, cpu);
}

static uint64_t shoot_now(void *ctx)
{
	return rdtsc();
}

static void shoot_kick(void *ctx, unsigned cpu)
{
	x86_hv_kick_primary(cpu);
}

static void shoot_relax(void *ctx)
{
	__asm__ volatile("pause");
}

// After the engine's invalidation (every CPU flagged to flush at its next
// entry): returns once no other CPU can still run the primary on a stale
// translation, or after logging the CPUs that never answered.
static void slat_shootdown(void)
{
	uint64_t hz = x86_primary.arch.tsc_hz ? x86_primary.arch.tsc_hz : 1000000000ull;
	const struct x86_shoot_wait w = {
	    .now = shoot_now,
	    .kick = shoot_kick,
	    .relax = shoot_relax,
	    .ticks = SLAT_SHOOT_SECONDS * hz,
	    .rekick = SLAT_REKICK,
	};
	struct x86_shoot_result r = x86_shoot_run(&slat_shoot, arch_hv_pcpu(), &w);

	if (r.kicked_mask && !r.late_mask && !slat_shoot_waited) { // once: the wait works
		slat_shoot_waited = true;
		log_info("x86: primary SLAT shootdown: CPU %u acknowledged (generation %llu, "
			 "%llu polls)\n",
			 (unsigned)__builtin_ctz(r.kicked_mask), (unsigned long long)r.gen,
			 (unsigned long long)r.polls);
	}
	for (unsigned i = 0; i < X86_SHOOT_CPUS; i++)
		if (r.late_mask & (1u << i))
			log_err("x86: CPU %u never left the primary to flush its SLAT "
				"(generation %llu, %u s): it may still reach unmapped pages\n",
				i, (unsigned long long)r.gen, SLAT_SHOOT_SECONDS);
}

static void (*slat_unmap_hook)(uint64_t pa, uint64_t size);

void x86_slat_on_primary_unmap(void (*fn)(uint64_t pa, uint64_t size))
{
	slat_unmap_hook = fn;
}

int arch_hv_primary_unmap(uint64_t pa, uint64_t pages)
{
	uint64_t size = pages * 4096;

	if (!slat_primary)
		return S2_E_INVAL;
	int r = s2_unmap(slat_primary->vm, slat_primary->root, pa, size);
	if (!r)
		slat_shootdown();
	// After the unmap: whatever reads the primary's map from here on finds
	// the pages gone, so what the hook zaps cannot come back.
	if (!r && slat_unmap_hook)
		slat_unmap_hook(pa, size);
	return r;
}

int x86_slat_primary_protect_locked(uint64_t pa, uint64_t size, unsigned prot)
{
	if (!slat_primary)
		return S2_E_INVAL;
	int r = s2_protect_locked(slat_primary->vm, slat_primary->root, pa, size, prot);
	if (!r && (prot & S2_PROT_RWX) != S2_PROT_RWX)
		slat_shootdown(); // rights taken away: no CPU may keep the old ones
	return r;
}

void x86_slat_primary_shootdown(void)
{
	if (!slat_primary)
		return;
	slat_ops->invalidate_all_cpus();
	slat_shootdown();
}

struct s2_vm *x86_slat_primary_vm(void)
{
	return slat_primary ? slat_primary->vm : NULL;
}

struct s2_root *x86_slat_primary_root(void)
{
	return slat_primary ? slat_primary->root : NULL;
}

int arch_hv_primary_map(uint64_t pa, uint64_t pages)
{
	if (!slat_primary)
		return S2_E_INVAL;
	return s2_map(slat_primary->vm, slat_primary->root, pa, pages * 4096, pa, S2_PROT_RWX,
		      S2_MT_WB);
}

uint64_t arch_hv_primary_tables(void)
{
	struct s2_stats st;

	if (!slat_primary)
		return 0;
	s2_vm_stats(slat_primary->vm, &st);
	return st.tables_live > slat_primary->tables_built
		   ? st.tables_live - slat_primary->tables_built
		   : 0;
}
