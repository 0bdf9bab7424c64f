// SPDX-License-Identifier: Apache-2.0
//
// B7 dirty-log harvest (mm/dirty.c): the cost of one harvest of a logging
// slot vs the slot's size and the fraction of its pages written since the
// last one, in the two ways /dev/kvm offers it: get-and-clear in one call
// (KVM_GET_DIRTY_LOG without manual protection) and get, then clear with the
// mask (KVM_GET_DIRTY_LOG + KVM_CLEAR_DIRTY_LOG, manual protection). Each
// round first writes the chosen pages (each write a write fault on a
// write-protected 4 KiB leaf, which maps it writable and marks it: timed per
// page too), then harvests the whole slot. Reported: harvest latency, per
// dirty page, the flushes each harvest made (one per harvest is the engine's
// promise), and the pages reported (exactly the pages written).
//
// The baseline, in the same run over the same slots and writes: a harvest
// without the engine's help, "scan": no dirty bitmap is read; the harvest
// walks every leaf of the slot in the SLAT (the engine's own walker, one
// descent, under the mmu lock for write), reports each writable 4 KiB leaf
// (in a logging slot only a write fault makes one writable: the stand-in for
// a hardware dirty bit, as an EPT A/D or NPT D-bit harvest reads it) and
// write-protects it, with one flush for the walk. That is how a harvest
// works where the hypervisor keeps no bitmap of its own (docs/dirty-log.md,
// "What EPT A/D bits and PML would change"): its cost follows the slot's
// mapped leaves, whatever fraction of them was written.
//
// Then the cost of turning logging on for a slot already mapped, with 4 KiB
// and with 2 MiB leaves: the flag change zaps the slot once and every page
// refaults as a 4 KiB leaf on its first touch (the engine's policy: split on
// demand, not eagerly; docs/mm.md). The guest's pages are plain numbers here
// (the engine never touches guest memory).
#include <stdlib.h>
#include <string.h>

#include "arch/x86/fmt_x86.h"
#include "mm/s2_internal.h" // the mmu lock, for the baseline's walk
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#define SLOT_ID 1
#define PAGE	4096ull
#define HPA	(1ull << 40) // 1 GiB aligned: blocks where logging allows them

static struct s2_root *get_root(struct s2_vm *vm)
{
	struct s2_root *r;
	if (s2_root_get(vm, (struct s2_role){0, 0}, &r))
		bench_die("s2_root_get");
	return r;
}

static void write_fault(struct s2_vm *vm, struct s2_root *root, uint64_t gpa)
{
	if (s2_fault(vm, root, gpa, S2_PROT_W, NULL) != S2_FAULT_MAPPED)
		bench_die("b7: write fault at %#llx", (unsigned long long)gpa);
}

static unsigned popcount(const uint64_t *bm, uint64_t words)
{
	unsigned n = 0;
	for (uint64_t i = 0; i < words; i++)
		n += (unsigned)__builtin_popcountll(bm[i]);
	return n;
}

// Every `stride`-th page (the dirty fraction 1/stride), starting at `phase`.
static uint64_t write_pages(struct s2_vm *vm, struct s2_root *root, uint64_t pages, uint64_t stride,
			    uint64_t phase)
{
	uint64_t n = 0;
	for (uint64_t p = phase % stride; p < pages; p += stride, n++)
		write_fault(vm, root, p * PAGE);
	return n;
}

enum harvest_mode { GET_AND_CLEAR, GET_THEN_CLEAR, SCAN };
static const char *const mode_names[] = {"get-and-clear", "get+clear", "scan (baseline)"};

struct scan_ctx {
	struct s2_vm *vm;
	uint64_t *bm; // bit i: the slot's page i (the slot starts at GPA 0)
};

// The baseline's visitor: a writable leaf is a written page; report it and
// take its write access away (the walk batches the flush).
static int scan_visit(struct s2_walk *w, const struct s2_walk_entry *e, unsigned kind, void *ctx)
{
	struct scan_ctx *c = ctx;
	const struct s2_fmt *f = s2_vm_fmt(c->vm);
	unsigned prot = f->leaf_prot(e->old);
	uint64_t page = e->addr / PAGE;

	(void)kind;
	if (e->level || !(prot & S2_PROT_W))
		return 0;
	c->bm[page / 64] |= 1ull << (page % 64);
	s2_walk_replace(w, e,
			f->make_leaf(s2_pte_addr(f, e->old), 0, prot & ~S2_PROT_W,
				     f->leaf_memtype(e->old, c->vm->caps), c->vm->caps));
	return 0;
}

// One harvest of the whole slot in `mode` into bm; 0 or the engine's error.
static int harvest(struct s2_vm *vm, struct s2_root *root, enum harvest_mode mode, uint64_t size,
		   uint64_t *bm)
{
	uint64_t pages = size / PAGE;
	if (mode == GET_AND_CLEAR)
		return s2_slot_dirty_get(vm, 0, SLOT_ID, 0, pages, bm, true);
	if (mode == GET_THEN_CLEAR) {
		int rc = s2_slot_dirty_get(vm, 0, SLOT_ID, 0, pages, bm, false);
		return rc ? rc : s2_slot_dirty_clear(vm, 0, SLOT_ID, 0, pages, bm);
	}
	struct scan_ctx c = {.vm = vm, .bm = bm};
	memset(bm, 0, pages / 8);
	s2_mmu_lock(vm, S2_LOCK_WRITE);
	int rc = s2_walk(vm, root, 0, size, 0, S2_WALK_LEAF, scan_visit, &c);
	s2_mmu_unlock(vm, S2_LOCK_WRITE);
	return rc;
}

// A logging slot of `size` bytes on one EPT VM, every page mapped and
// write-protected (written once, harvested once): the same start for the
// three harvest modes of one point.
struct harvest_vm {
	struct machine m;
	struct s2_vm *vm;
	struct s2_root *root;
	uint64_t size, pages, words, *bm;
};

static void harvest_vm_init(struct harvest_vm *h, const struct host_costs *costs, uint64_t size)
{
	machine_init(&h->m, costs);
	h->m.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	h->vm = machine_vm_create(&h->m, &s2_fmt_ept4, s2_fmt_ept4.caps, S2_ZAP_SLOT);
	h->root = get_root(h->vm);
	h->size = size;
	h->pages = size / PAGE;
	h->words = h->pages / 64;
	h->bm = calloc(h->words, sizeof(*h->bm));
	if (!h->bm || s2_slot_add(h->vm, 0, SLOT_ID, 0, size, HPA, S2_SLOT_DIRTY_LOG))
		bench_die("b7: slot");
	write_pages(h->vm, h->root, h->pages, 1, 0);
	if (s2_slot_dirty_get(h->vm, 0, SLOT_ID, 0, h->pages, h->bm, true))
		bench_die("b7: first harvest");
}

static void harvest_vm_exit(struct harvest_vm *h)
{
	free(h->bm);
	s2_root_put(h->vm, h->root);
	machine_vm_destroy(&h->m);
}

// `reps` rounds of: write every 1000/permille-th page, harvest the slot in
// `mode`. Every mode leaves the slot as it found it: every page read-only
// (the bitmap is not read again after SCAN, which runs last).
static void harvest_series(struct bench_json *j, struct harvest_vm *h, uint64_t permille,
			   enum harvest_mode mode, unsigned reps)
{
	uint64_t stride = permille ? 1000 / permille : 0;
	struct bench_samples lat = {0}, fault = {0};
	uint64_t flushes = 0, reported = 0, written = 0;
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = bench_now_ns();
		uint64_t n = stride ? write_pages(h->vm, h->root, h->pages, stride, r) : 0;
		if (n)
			bench_samples_add(&fault, (bench_now_ns() - t0) / n);
		written += n;
		machine_counts_reset(&h->m);
		t0 = bench_now_ns();
		int rc = harvest(h->vm, h->root, mode, h->size, h->bm);
		bench_samples_add(&lat, bench_now_ns() - t0);
		if (rc)
			bench_die("b7: harvest %d", rc);
		struct host_counts c = machine_counts(&h->m);
		flushes += c.inval_context + c.inval_range;
		reported += popcount(h->bm, h->words);
		machine_reclaim(&h->m);
		bench_progress("b7", "%s %llu MiB %llu permille: %u/%u", mode_names[mode],
			       (unsigned long long)(h->size / BENCH_MIB),
			       (unsigned long long)permille, r + 1, reps);
	}
	bench_progress_done();
	if (reported != written)
		bench_die("b7: %s: %llu pages reported, %llu written", mode_names[mode],
			  (unsigned long long)reported, (unsigned long long)written);
	bj_obj(j, NULL);
	bj_str(j, "test", "harvest");
	bj_str(j, "mode", mode_names[mode]);
	bj_u64(j, "slot_bytes", h->size);
	bj_u64(j, "dirty_permille", permille);
	bj_u64(j, "reps", reps);
	bj_latency(j, "harvest", &lat);
	bj_f64(j, "harvest_ns_per_dirty_page",
	       written ? bench_samples_mean(&lat) * reps / (double)written : 0);
	if (fault.n)
		bj_latency(j, "write_fault_per_page", &fault);
	bj_f64(j, "dirty_pages_per_harvest", (double)written / reps);
	bj_f64(j, "flushes_per_harvest", (double)flushes / reps);
	bj_obj_end(j);
	bench_samples_free(&lat);
	bench_samples_free(&fault);
}

static void harvest_point(struct bench_json *j, const struct host_costs *costs, uint64_t size,
			  uint64_t permille, unsigned reps)
{
	struct harvest_vm h;
	harvest_vm_init(&h, costs, size);
	for (enum harvest_mode mode = GET_AND_CLEAR; mode <= SCAN; mode++)
		harvest_series(j, &h, permille, mode, reps);
	harvest_vm_exit(&h);
}

// Logging turned on over a slot mapped with `leaf` leaves: the flag change,
// then the first write of every page (4 KiB leaves from then on).
static void enable_one(struct bench_json *j, const struct host_costs *costs, uint64_t size,
		       uint64_t leaf)
{
	struct machine m;
	machine_init(&m, costs);
	m.be->ops.cmo_clean_inval = NULL;
	struct s2_vm *vm = machine_vm_create(&m, &s2_fmt_ept4, s2_fmt_ept4.caps, S2_ZAP_SLOT);
	struct s2_root *root = get_root(vm);
	uint64_t pages = size / PAGE;
	// 4 KiB leaves where the backing is only 4 KiB aligned, 2 MiB where it
	// is 2 MiB (but not 1 GiB) aligned.
	uint64_t hpa = HPA + (leaf == PAGE ? PAGE : 2 * BENCH_MIB);
	if (s2_slot_add(vm, 0, SLOT_ID, 0, size, hpa, 0))
		bench_die("b7: slot");
	for (uint64_t g = 0; g < size; g += leaf)
		write_fault(vm, root, g);
	struct s2_stats st0, st1;
	s2_vm_stats(vm, &st0);
	uint64_t t0 = bench_now_ns();
	if (s2_slot_set_flags(vm, 0, SLOT_ID, S2_SLOT_DIRTY_LOG))
		bench_die("b7: set_flags");
	uint64_t enable_ns = bench_now_ns() - t0;
	s2_vm_stats(vm, &st1);
	if (s2_root_is_invalid(root)) {
		s2_root_put(vm, root);
		root = get_root(vm);
	}
	t0 = bench_now_ns();
	write_pages(vm, root, pages, 1, 0);
	uint64_t refault_ns = bench_now_ns() - t0;
	bj_obj(j, NULL);
	bj_str(j, "test", "enable");
	bj_u64(j, "slot_bytes", size);
	bj_u64(j, "leaf_bytes_before", leaf);
	bj_u64(j, "enable_ns", enable_ns);
	bj_u64(j, "leaves_zapped", st1.leaves_zapped - st0.leaves_zapped);
	bj_f64(j, "first_write_ns_per_page", (double)refault_ns / (double)pages);
	bj_obj_end(j);
	s2_root_put(vm, root);
	machine_vm_destroy(&m);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	uint64_t max = bench_arg_u64(argc, argv, "max", quick ? 256 * BENCH_MIB : BENCH_GIB);
	// QUICK: 2 rounds per mode (3 modes on one set-up per point: no more work
	// than the 3 rounds of 2 modes on two set-ups before the baseline came).
	unsigned reps = bench_arg_u64(argc, argv, "reps", quick ? 2 : 7);
	static const uint64_t permille[] = {0, 1, 10, 100, 500, 1000};
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);

	struct bench_json j;
	bench_begin(&j, "b7_dirty_harvest", "ok");
	bj_obj(&j, "params");
	bj_str(&j, "format", "EPT 4-level");
	bj_u64(&j, "max_slot_bytes", max);
	bj_u64(&j, "reps", reps);
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	for (uint64_t size = 64 * BENCH_MIB; size <= max; size *= 4)
		for (unsigned i = 0; i < sizeof(permille) / sizeof(permille[0]); i++)
			harvest_point(&j, &costs, size, permille[i], reps);
	for (uint64_t size = 64 * BENCH_MIB; size <= max; size *= 4) {
		enable_one(&j, &costs, size, PAGE);
		enable_one(&j, &costs, size, 2 * BENCH_MIB);
	}
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
