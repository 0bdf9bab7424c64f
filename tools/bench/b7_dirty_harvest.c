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
// Then the cost of turning logging on for a slot already mapped, with 4 KiB
// and with 2 MiB leaves: the flag change zaps the slot once and every page
// refaults as a 4 KiB leaf on its first touch (the engine's policy: split on
// demand, not eagerly; docs/mm.md). The guest's pages are plain numbers here
// (the engine never touches guest memory).
#include <stdlib.h>
#include <string.h>

#include "arch/x86/fmt_x86.h"
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

static void harvest_one(struct bench_json *j, const struct host_costs *costs, uint64_t size,
			uint64_t permille, bool manual, unsigned reps)
{
	struct machine m;
	machine_init(&m, costs);
	m.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	struct s2_vm *vm = machine_vm_create(&m, &s2_fmt_ept4, s2_fmt_ept4.caps, S2_ZAP_SLOT);
	struct s2_root *root = get_root(vm);
	uint64_t pages = size / PAGE, words = pages / 64;
	uint64_t *bm = calloc(words, sizeof(*bm));
	if (!bm || s2_slot_add(vm, 0, SLOT_ID, 0, size, HPA, S2_SLOT_DIRTY_LOG))
		bench_die("b7: slot");
	// Every page mapped and write-protected: written once, harvested once.
	write_pages(vm, root, pages, 1, 0);
	if (s2_slot_dirty_get(vm, 0, SLOT_ID, 0, pages, bm, true))
		bench_die("b7: first harvest");
	uint64_t stride = permille ? 1000 / permille : 0;
	struct bench_samples lat = {0}, fault = {0};
	uint64_t flushes = 0, reported = 0, written = 0;
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = bench_now_ns();
		uint64_t n = stride ? write_pages(vm, root, pages, stride, r) : 0;
		if (n)
			bench_samples_add(&fault, (bench_now_ns() - t0) / n);
		written += n;
		machine_counts_reset(&m);
		t0 = bench_now_ns();
		int rc = s2_slot_dirty_get(vm, 0, SLOT_ID, 0, pages, bm, !manual);
		if (!rc && manual)
			rc = s2_slot_dirty_clear(vm, 0, SLOT_ID, 0, pages, bm);
		bench_samples_add(&lat, bench_now_ns() - t0);
		if (rc)
			bench_die("b7: harvest %d", rc);
		struct host_counts c = machine_counts(&m);
		flushes += c.inval_context + c.inval_range;
		reported += popcount(bm, words);
		machine_reclaim(&m);
		bench_progress("b7", "%s %llu MiB %llu permille: %u/%u", manual ? "manual" : "get",
			       (unsigned long long)(size / BENCH_MIB), (unsigned long long)permille,
			       r + 1, reps);
	}
	bench_progress_done();
	if (reported != written)
		bench_die("b7: %llu pages reported, %llu written", (unsigned long long)reported,
			  (unsigned long long)written);
	bj_obj(j, NULL);
	bj_str(j, "test", "harvest");
	bj_str(j, "mode", manual ? "get+clear" : "get-and-clear");
	bj_u64(j, "slot_bytes", size);
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
	free(bm);
	s2_root_put(vm, root);
	machine_vm_destroy(&m);
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
	unsigned reps = bench_arg_u64(argc, argv, "reps", quick ? 3 : 7);
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
		for (unsigned i = 0; i < sizeof(permille) / sizeof(permille[0]); i++) {
			harvest_one(&j, &costs, size, permille[i], false, reps);
			harvest_one(&j, &costs, size, permille[i], true, reps);
		}
	for (uint64_t size = 64 * BENCH_MIB; size <= max; size *= 4) {
		enable_one(&j, &costs, size, PAGE);
		enable_one(&j, &costs, size, 2 * BENCH_MIB);
	}
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
