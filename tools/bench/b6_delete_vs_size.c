// SPDX-License-Identifier: Apache-2.0
//
// Slot delete cost vs VM size: a VM has one large slot fully mapped with 4 KiB
// leaves (1 GiB .. 64 GiB) and a small 2 MiB slot elsewhere, mapped too; the
// small slot is deleted (timed) and added back, repeatedly. In SLOT mode the
// delete walks only the small slot's range, so its cost should not grow with
// the VM; in ALL mode (the baseline) every root is invalidated and zapped, so
// it grows with what is mapped (and every vCPU would then refault it all).
#include "arch/x86/fmt_x86.h"
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#define BIG_ID	  1
#define SMALL_ID  2
#define SMALL_GPA (1ull << 42) // far above any big slot
#define SMALL_SZ  (2 * BENCH_MIB)

static struct s2_root *get_root(struct s2_vm *vm)
{
	struct s2_root *r;
	if (s2_root_get(vm, (struct s2_role){0, 0}, &r))
		bench_die("s2_root_get");
	return r;
}

static void map_all(struct s2_vm *vm, struct s2_root *root, uint64_t size, bool small_too)
{
	// Output addresses congruent modulo 4 KiB only: 4 KiB leaves throughout.
	if (size && s2_map(vm, root, 0, size, (1ull << 40) + 4096, S2_PROT_R | S2_PROT_W, S2_MT_WB))
		bench_die("s2_map big");
	if (small_too && s2_map(vm, root, SMALL_GPA, SMALL_SZ, (3ull << 40) + 4096,
				S2_PROT_R | S2_PROT_W, S2_MT_WB))
		bench_die("s2_map small");
}

static void one(struct bench_json *j, const struct host_costs *costs, uint64_t size,
		enum s2_zap_mode mode, unsigned reps)
{
	struct machine s;
	machine_init(&s, costs);
	s.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	struct s2_vm *vm = machine_vm_create(&s, &s2_fmt_ept4, s2_fmt_ept4.caps, mode);
	struct s2_root *root = get_root(vm);
	if (s2_slot_add(vm, 0, BIG_ID, 0, size, (1ull << 40) + 4096, 0))
		bench_die("s2_slot_add big");
	map_all(vm, root, size, false);
	struct bench_samples lat = {0};
	struct s2_stats st0, st1;
	uint64_t zapped = 0, invals = 0, ctx_invals = 0;
	for (unsigned i = 0; i < reps; i++) {
		if (s2_slot_add(vm, 0, SMALL_ID, SMALL_GPA, SMALL_SZ, (3ull << 40) + 4096, 0))
			bench_die("s2_slot_add small");
		if (s2_root_is_invalid(root)) {
			s2_root_put(vm, root);
			root = get_root(vm);
			map_all(vm, root, size, true);
		} else {
			map_all(vm, root, i ? 0 : size, true);
		}
		s2_vm_stats(vm, &st0);
		machine_counts_reset(&s);
		uint64_t t0 = bench_now_ns();
		if (s2_slot_delete(vm, 0, SMALL_ID))
			bench_die("s2_slot_delete");
		bench_samples_add(&lat, bench_now_ns() - t0);
		s2_vm_stats(vm, &st1);
		zapped += st1.leaves_zapped - st0.leaves_zapped;
		struct host_counts n = machine_counts(&s);
		invals += n.inval_range;
		ctx_invals += n.inval_context;
		machine_reclaim(&s);
		bench_progress("b6", "%s %llu GiB: %u/%u", mode == S2_ZAP_ALL ? "all" : "slot",
			       (unsigned long long)(size / BENCH_GIB), i + 1, reps);
	}
	bench_progress_done();
	bj_obj(j, NULL);
	bj_str(j, "mode", mode == S2_ZAP_ALL ? "all" : "slot");
	bj_u64(j, "vm_bytes", size);
	bj_u64(j, "leaf_size", 4096);
	bj_u64(j, "reps", reps);
	bj_latency(j, "delete", &lat);
	bj_f64(j, "leaves_zapped_per_delete", (double)zapped / reps);
	bj_f64(j, "range_invalidations_per_delete", (double)invals / reps);
	bj_f64(j, "context_invalidations_per_delete", (double)ctx_invals / reps);
	bj_obj_end(j);
	bench_samples_free(&lat);
	s2_root_put(vm, root);
	machine_vm_destroy(&s);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	uint64_t max = bench_arg_u64(argc, argv, "max", quick ? 2 * BENCH_GIB : 64 * BENCH_GIB);
	unsigned reps_slot = bench_arg_u64(argc, argv, "reps_slot", quick ? 10 : 30);
	unsigned reps_all = bench_arg_u64(argc, argv, "reps_all", quick ? 2 : 3);
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);

	struct bench_json j;
	bench_begin(&j, "b6_delete_vs_size", "ok");
	bj_obj(&j, "params");
	bj_str(&j, "format", "EPT 4-level");
	bj_u64(&j, "max_vm_bytes", max);
	bj_u64(&j, "small_slot_bytes", SMALL_SZ);
	bj_u64(&j, "reps_slot", reps_slot);
	bj_u64(&j, "reps_all", reps_all);
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	for (uint64_t size = BENCH_GIB; size <= max; size *= 2) {
		one(&j, &costs, size, S2_ZAP_SLOT, reps_slot);
		one(&j, &costs, size, S2_ZAP_ALL, reps_all);
	}
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
