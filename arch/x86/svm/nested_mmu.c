// SPDX-License-Identifier: Apache-2.0
//
// NPT02 for nested SVM: the mm/ shadow engine over L1's nested page tables
// (NPT12, in the primary's memory) and the primary's own map (NPT01).
//
//   - The primary's RAM is given to the engine as memslots whose frames are
//     the identity, except pages the primary's map no longer has (deposited
//     to Slat): those are absent, so no shadow leaf can ever reach them. A
//     deposit zaps what maps them (x86_slat_on_primary_unmap).
//   - Write tracking is the engine's (sh_track_ops): before it first reads
//     an NPT12 page as a table it calls protect_l1_page, which maps the page
//     read-only (4 KiB) in NPT01, so that every later write of L1 exits; a
//     page given back (sh_unprotect_gfn) is made writable again by
//     unprotect_l1_page. Both run under the primary VM's mmu lock, which
//     orders them against every shadow change: a shadowed page is never
//     writable. A write to a page the engine shadows is emulated through it
//     (MOV, XCHG, CMPXCHG: sh_emulate_update, recursive orphan reclaim); any
//     other write, or one to a page no longer shadowed, gives the page back
//     to L1 (its shadow pages zapped) and L1 retries the instruction.
//   - The engine's walk of NPT12 also says what L1 would have seen (present,
//     reserved bits): the error code of a fault reflected to L1.
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/l1_write.h"
#include "arch/x86/slat.h"
#include "arch/x86/svm/nested.h"
#include "core/config.h"
#include "core/log.h"
#include "core/page_pool.h"
#include "core/plan.h"
#include "mm/shadow.h"

#define NPF_P	  (1ull << 0)
#define NPF_W	  (1ull << 1)
#define NPF_U	  (1ull << 2)
#define NPF_RSVD  (1ull << 3)
#define NPF_ID	  (1ull << 4)
#define NPF_FINAL (1ull << 32) // the fault was on the final guest-physical address
#define NPF_WALK  (1ull << 33) // ... on a table of the guest's own page walk
#define PTE_ADDR  0x000ffffffffff000ull

struct l1_slot {
	struct s2_backing b; // first: the engine hands back &b
	uint64_t base;
};

static struct {
	struct sh_mmu *sh;
	struct s2_vm *vm;
	struct s2_root *root01;
	uint64_t rsvd_mask;  // NPT entry bits above the CPU's physical width (to 51)
	uint64_t empty_root; // NPT02 while L1's maps nothing: every access faults
	struct l1_slot slots[PLAN_MAX_RANGES];
} nm;

// ---- the cost of zaps -------------------------------------------------------------
// The costliest single operation that zapped shadow pages (an emulated write,
// a page given back, memory taken from the primary), for the exit summary.
struct zap_timer {
	uint64_t tsc, zapped;
};

static struct zap_timer zap_start(void)
{
	return (struct zap_timer){rdtsc(), sh_zapped_total(nm.sh)};
}

static void zap_end(struct zap_timer t)
{
	uint64_t sps = sh_zapped_total(nm.sh) - t.zapped, hz = x86_primary.arch.tsc_hz;
	uint64_t us = hz ? (rdtsc() - t.tsc) * 1000000 / hz : 0;

	if (!sps || us <= __atomic_load_n(&svm_nested_stats.zap_max_us, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&svm_nested_stats.zap_max_us, us, __ATOMIC_RELAXED);
	__atomic_store_n(&svm_nested_stats.zap_max_sps, sps, __ATOMIC_RELAXED);
}

// ---- the primary's RAM as the engine's memslots -------------------------------------
// L1's rights (S2_PROT_*) on its page at `gpa` in NPT01, or -1 when that is not
// L1's RAM (not mapped, MMIO, Slat's own, deposited).
static int l1_ram_prot(uint64_t gpa)
{
	struct s2_xlate x;

	s2_translate(nm.vm, nm.root01, gpa, &x);
	return x.mapped && x.mt == S2_MT_WB ? (int)x.prot : -1;
}

static uint64_t l1_page_hpa(const struct s2_backing *b, uint64_t index)
{
	const struct l1_slot *s = (const struct l1_slot *)b;
	uint64_t gpa = s->base + (index << 12);

	return l1_ram_prot(gpa) >= 0 ? gpa : S2_HPA_ABSENT;
}

static bool l1_contiguous(const struct s2_backing *b, uint64_t index, uint64_t n)
{
	return false; // the engine's own faults never run on the primary's VM
}

static void nested_flush(void *ctx, struct s2_vm *vm)
{
	x86_slat_primary_shootdown(); // every L2 entry flushes; this makes each CPU enter anew
}

static void stats_leaf(uint32_t out[4]);
static int protect_l1_page(void *ctx, unsigned as, uint64_t gfn);
static void unprotect_l1_page(void *ctx, unsigned as, uint64_t gfn);

static void nested_unmap(uint64_t pa, uint64_t size)
{
	struct zap_timer t = zap_start();

	sh_zap_range(nm.sh, 0, pa, size);
	zap_end(t);
}

bool svm_nested_mmu_init(const struct slat_plan *plan)
{
	unsigned phys = cpuid(0x80000008u, 0).eax & 0xff, id = 0;

	nm.vm = x86_slat_primary_vm();
	nm.root01 = x86_slat_primary_root();
	if (!nm.vm || !nm.root01)
		return false;
	nm.rsvd_mask = PTE_ADDR & ~((1ull << (phys < 52 ? phys : 52)) - 1);
	for (unsigned i = 0; i < plan->n_ranges && i < PLAN_MAX_RANGES; i++) {
		const struct plan_range *r = &plan->ranges[i];
		struct l1_slot *s = &nm.slots[id];

		if (r->kind != PLAN_MEM_NORMAL || !r->size || (r->base | r->size) & 0xfff)
			continue;
		*s = (struct l1_slot){{l1_page_hpa, l1_contiguous, 0}, r->base};
		int e = s2_slot_add_backed(nm.vm, 0, id, r->base, r->size, &s->b, 0);
		if (e) {
			log_err("svm: nested: RAM 0x%llx+0x%llx as a memslot: error %d\n",
				(unsigned long long)r->base, (unsigned long long)r->size, e);
			return false;
		}
		id++;
	}
	const struct sh_config cfg = {
	    .fmt = svm_npt_fmt(),
	    .ia_bits = 48,
	    // slat.cfg's nested_quota: shadow pages at most (NPT02 tables, each
	    // with one or three metadata pages), a bound on what L1 can make
	    // Slat allocate whatever its guests do; the rmap hash is sized for it.
	    .guest_pages = (uint64_t)plan->nested_quota * 50,
	    .quota = plan->nested_quota,
	    .non_recursive = plan->nested_reclaim == CFG_RECLAIM_NONE, // benchmark baseline
	    .track = {protect_l1_page, unprotect_l1_page, NULL},
	    .l1_rsvd_mask = nm.rsvd_mask,
	    .flush = nested_flush,
	};
	int e = sh_create(nm.vm, &cfg, &nm.sh);
	if (e) {
		log_err("svm: nested: no shadow MMU (error %d)\n", e);
		return false;
	}
	nm.empty_root = svm_mm_page_alloc();
	if (!nm.empty_root)
		return false;
	x86_slat_on_primary_unmap(nested_unmap);
	x86_nested_stats_leaf = stats_leaf;
	return true;
}

// ---- L1 memory --------------------------------------------------------------------
bool svm_nested_l1_ram(uint64_t gpa, uint64_t len)
{
	if (!len || (gpa & 0xfff) + len > 4096)
		return false;
	int prot = l1_ram_prot(gpa);
	return prot >= 0 && (prot & S2_PROT_R);
}

// Gives page `gpa` back to L1: its shadow pages go, then NPT01 maps it
// writable again (the engine's unprotect hook, in that order).
static void give_back(uint64_t gpa)
{
	struct zap_timer t = zap_start();

	if (sh_unprotect_gfn(nm.sh, 0, gpa >> 12))
		NESTED_COUNT(unprotects);
	zap_end(t);
}

void svm_nested_before_write(uint64_t gpa)
{
	int prot = l1_ram_prot(gpa);

	if (prot >= 0 && !(prot & S2_PROT_W))
		give_back(gpa);
}

// sh_track_ops.protect (the mmu lock held): L1 page `gfn` read-only in NPT01
// (4 KiB; a no-op when it already is). S2_E_INVAL when it is not L1's RAM,
// S2_E_NOMEM when no table page was left for the split.
static int protect_l1_page(void *ctx, unsigned as, uint64_t gfn)
{
	int prot = l1_ram_prot(gfn << 12);

	if (prot < 0)
		return S2_E_INVAL;
	if (!(prot & S2_PROT_W))
		return 0;
	int e = x86_slat_primary_protect_locked(gfn << 12, 4096, S2_PROT_R | S2_PROT_X);
	if (!e)
		NESTED_COUNT(wp_pages);
	return e;
}

// sh_track_ops.unprotect (the mmu lock held): no shadow page reads it any more.
static void unprotect_l1_page(void *ctx, unsigned as, uint64_t gfn)
{
	int prot = l1_ram_prot(gfn << 12);

	if (prot >= 0 && !(prot & S2_PROT_W))
		x86_slat_primary_protect_locked(gfn << 12, 4096, S2_PROT_RWX);
}

// ---- roots ------------------------------------------------------------------------
// NPT12 has L1's paging depth: with CR4.LA57 (Linux turns it on where the CPU
// has it) five levels. L2-physical addresses below 2^48 all go through entry
// 0 of the top table, so the four-level table it points to is what the
// engine shadows (NPT02 has Slat's four levels). False: L1 maps nothing.
bool svm_nested_npt12_root(const struct svm_cpu *c, uint64_t ncr3, uint64_t *root4)
{
	uint64_t e;

	if (!c->nested.la57) {
		*root4 = ncr3 & PTE_ADDR;
		return true;
	}
	if (!x86_guest_read_phys(ncr3 & PTE_ADDR, &e, 8) || !(e & NPT_P) || (e & nm.rsvd_mask))
		return false;
	*root4 = e & PTE_ADDR;
	return true;
}

uint64_t svm_nested_empty_root(void)
{
	return nm.empty_root;
}

bool svm_nested_root(struct svm_cpu *c, uint64_t root4)
{
	struct svm_nested_cpu *n = &c->nested;
	uint64_t gpa = root4 & PTE_ADDR;

	if (n->root && n->root_gpa == gpa && !sh_root_is_invalid(n->root))
		return true;
	svm_nested_root_drop(c);
	if (sh_root_get(nm.sh, 0, gpa, &n->root)) {
		n->root = NULL;
		return false;
	}
	n->root_gpa = gpa;
	n->flush = true;
	return true;
}

void svm_nested_root_drop(struct svm_cpu *c)
{
	if (c->nested.root) {
		sh_root_put(nm.sh, c->nested.root);
		c->nested.root = NULL;
		NESTED_COUNT(reload_roots);
	}
}

// ---- L2's nested page faults ------------------------------------------------------
static unsigned npf_access(uint64_t info1)
{
	return S2_PROT_R | ((info1 & NPF_W) ? S2_PROT_W : 0) | ((info1 & NPF_ID) ? S2_PROT_X : 0);
}

// What L1 would have seen: the access bits of the real fault, P when NPT12
// maps the address (a permission fault) or has reserved bits, RSVD then.
static uint64_t npf_error12(uint64_t info1, const struct sh_fault_info *fi)
{
	uint64_t e = info1 & (NPF_W | NPF_U | NPF_ID | NPF_FINAL | NPF_WALK);

	if (fi->present)
		e |= NPF_P;
	if (fi->rsvd)
		e |= NPF_RSVD;
	return e;
}

bool svm_nested_npf(struct svm_cpu *c, uint64_t ncr3, uint64_t info1, uint64_t gpa, uint64_t *err12)
{
	static struct log_once no_ram, no_room;
	struct sh_fault_info fi = {0};
	int r = S2_E_NOMEM;

	uint64_t root4;
	if (!svm_nested_npt12_root(c, ncr3, &root4)) { // nothing mapped at all: L1's fault
		*err12 = info1 & (NPF_W | NPF_U | NPF_ID | NPF_FINAL | NPF_WALK);
		NESTED_COUNT(npf_reflected);
		return false;
	}
	if (!c->nested.root || c->nested.root_gpa != root4)
		if (!svm_nested_root(c, root4))
			goto no_room;
	if (c->nested.la57 && (gpa >> 48)) { // beyond what the shadow maps
		*err12 = info1 & (NPF_W | NPF_U | NPF_ID | NPF_FINAL | NPF_WALK);
		NESTED_COUNT(npf_reflected);
		return false;
	}
	r = sh_fault(nm.sh, c->nested.root, gpa, npf_access(info1), &fi);
	switch (r) {
	case SH_FAULT_MAPPED:
		NESTED_COUNT(npf_fixed);
		return true;
	case SH_FAULT_RELOAD: // a zap-all or a slot change invalidated the root
		svm_nested_root_drop(c);
		return svm_nested_root(c, root4);
	case SH_FAULT_EMULATE: // L2 writes L1's table page: stop shadowing that page
		give_back(fi.l1_gpa);
		return true;
	case SH_FAULT_MMIO:
		if (log_once_first(&no_ram, 0))
			log_warn("svm: nested: L1 maps L2 0x%llx to 0x%llx, which is not its RAM: "
				 "reflected as a fault\n",
				 (unsigned long long)gpa, (unsigned long long)fi.l1_gpa);
		break;
	case SH_FAULT_L1:
		break;
	default: // out of memory with only roots in use left
	no_room:
		NESTED_COUNT(nospc);
		if (log_once_first(&no_room, 0))
			log_err("svm: nested: no shadow page for L2 0x%llx (error %d): L1 gets a "
				"shutdown exit\n",
				(unsigned long long)gpa, r);
		*err12 = ~0ull;
		return false;
	}
	NESTED_COUNT(npf_reflected);
	*err12 = npf_error12(info1, &fi);
	return false;
}

// ---- L1's writes to pages Slat tracks ------------------------------------------------
// An instruction arch/x86/l1_write.c emulates through the engine.
static bool emulate_write(struct svm_cpu *c, uint64_t gpa)
{
	struct zap_timer t = zap_start();
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;

	if (!x86_l1_write_emulate(c->vcpu, nm.sh, gpa, vmcb64(vmcb, VMCB_RFLAGS)))
		return false;
	zap_end(t);
	NESTED_COUNT(emulated_writes);
	return true;
}

bool svm_nested_l1_write_fault(struct svm_cpu *c, uint64_t gpa, uint64_t info1)
{
	// The APIC page's writes (the most frequent NPF) go on at once.
	if (!nm.sh || (info1 & (NPF_P | NPF_W)) != (NPF_P | NPF_W) ||
	    (gpa >> 12) == (x86_primary.arch.apic_base >> 12))
		return false;
	int prot = l1_ram_prot(gpa);
	if (prot < 0)
		return false; // not RAM (the APIC page, ...): the primary's policy
	if (prot & S2_PROT_W)
		return true; // given back meanwhile (a stale translation): retry
	if (sh_gfn_tracked(nm.sh, 0, gpa >> 12) && emulate_write(c, gpa))
		return true;
	give_back(gpa);
	return true;
}

// ---- figures ----------------------------------------------------------------------
static void stats_leaf(uint32_t out[4])
{
	struct sh_stats s;

	sh_stats(nm.sh, &s);
	out[0] = (uint32_t)s.used;
	out[1] = (uint32_t)s.longest_chain;
	out[2] = (uint32_t)s.created;
	out[3] = (uint32_t)s.zapped_orphans;
}

void svm_nested_mmu_summary(void)
{
	struct sh_stats s;

	if (!nm.sh)
		return;
	sh_stats(nm.sh, &s);
	log_info("slat: nested shadow pages: %llu in use (max %llu, quota %llu), %llu created, "
		 "%llu zapped (%llu orphans reclaimed, %llu evicted), longest hash chain %llu\n",
		 (unsigned long long)s.used, (unsigned long long)s.used_max,
		 (unsigned long long)s.quota, (unsigned long long)s.created,
		 (unsigned long long)s.zapped, (unsigned long long)s.zapped_orphans,
		 (unsigned long long)s.evicted, (unsigned long long)s.longest_chain);
	log_info("slat: nested shadow writes: %llu emulated (%llu updates, %llu zaps), %llu pages "
		 "given back, %llu slot zaps; costliest zap %llu shadow pages in %llu us; check "
		 "%s\n",
		 (unsigned long long)s.emul_writes, (unsigned long long)s.emul_updates,
		 (unsigned long long)s.emul_zaps, (unsigned long long)s.unprotects,
		 (unsigned long long)s.slot_zaps, (unsigned long long)svm_nested_stats.zap_max_sps,
		 (unsigned long long)svm_nested_stats.zap_max_us,
		 sh_check(nm.sh) ? "FAILED" : "ok");
	log_info("slat: nested shadow memory: %llu reclaims (%llu allocations refused), %llu L1 "
		 "pages write-protected; Slat's table pages %llu live (max %llu), %llu KiB of its "
		 "region never used\n",
		 (unsigned long long)s.reclaims, (unsigned long long)s.nomem,
		 (unsigned long long)s.protects,
		 (unsigned long long)page_pool_live(svm_slat_ops.pool),
		 (unsigned long long)svm_slat_ops.pool->max,
		 (unsigned long long)region_free_bytes(svm_slat_ops.pool->region) / 1024);
}
