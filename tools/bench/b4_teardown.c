// SPDX-License-Identifier: Apache-2.0
//
// B4 teardown: a VM with `mapped` bytes of arm64 stage-2 leaves (all 4 KiB or
// all 2 MiB) is torn down under three policies, each in a fresh VM of the same
// engine:
//   per_leaf  the pre-2019 way: one walk over the tree (s2_unmap_per_leaf,
//             mm/s2_testhooks.h) that zaps leaf by leaf, each with its own
//             range invalidation and a clean+invalidate to PoC of the leaf as
//             it goes (no FWB, normal cacheable memory), and removes each
//             emptied table with its own invalidation;
//   no_cmo    the same with FWB enabled (the engine's CMO policy skips them);
//   batched   the teardown path: detach, one context invalidation, free the
//             tree with no per-leaf invalidation and no CMO.
// Beside it, the physical floor: reading the same table bytes once.
// Per-operation costs are modelled (machine.h; cost_*=NS arguments).
#include <string.h>

#include "arch/arm64/fmt_s2.h"
#include "tools/bench/bench.h"
#include "tools/bench/floor.h"
#include "tools/bench/machine.h"

#include "mm/s2_testhooks.h"

struct policy {
	const char *name;
	bool fwb;
	bool batched;
};

static const struct policy policies[] = {
    {"per_leaf", false, false},
    {"no_cmo", true, false},
    {"batched", false, true},
};

static void one(struct bench_json *j, const struct host_costs *costs, uint64_t mapped, uint64_t ps,
		const struct policy *p)
{
	struct machine s;
	machine_init(&s, costs);
	unsigned caps = s2_fmt_arm64_4k.caps & ~(unsigned)S2_CAP_FWB;
	if (p->fwb)
		caps |= S2_CAP_FWB & s2_fmt_arm64_4k.caps;
	struct s2_vm *vm = machine_vm_create(&s, &s2_fmt_arm64_4k, caps, S2_ZAP_SLOT);
	struct s2_root *root;
	if (s2_root_get(vm, (struct s2_role){0, 0}, &root))
		bench_die("s2_root_get");
	// The host side is never dereferenced here (CMOs are modelled), so the
	// output addresses only need the alignment that forces this leaf size:
	// congruent modulo ps, never modulo the next level's size.
	uint64_t hpa = (1ull << 40) + ps;
	uint64_t t0 = bench_now_ns();
	int r = s2_map(vm, root, 0, mapped, hpa, S2_PROT_R | S2_PROT_W, S2_MT_WB);
	uint64_t map_ns = bench_now_ns() - t0;
	if (r)
		bench_die("s2_map %llu bytes: %d", (unsigned long long)mapped, r);
	struct s2_stats st0, st1;
	s2_vm_stats(vm, &st0);
	machine_counts_reset(&s);

	t0 = bench_now_ns();
	if (p->batched) {
		s2_root_teardown(vm, root, NULL);
	} else {
		bench_progress("b4", "%s %s: %llu GiB", ps == 4096 ? "4K" : "2M", p->name,
			       (unsigned long long)(mapped / BENCH_GIB));
		if (s2_unmap_per_leaf(vm, root, 0, mapped))
			bench_die("s2_unmap_per_leaf");
	}
	uint64_t ns = bench_now_ns() - t0;
	bench_progress_done();
	s2_vm_stats(vm, &st1);

	bj_obj(j, NULL);
	bj_u64(j, "page_size", ps);
	bj_str(j, "policy", p->name);
	bj_u64(j, "mapped_bytes", mapped);
	bj_u64(j, "leaves", mapped / ps);
	bj_u64(j, "map_ns", map_ns);
	bj_u64(j, "teardown_ns", ns);
	bj_f64(j, "ns_per_leaf", (double)ns / (double)(mapped / ps));
	struct host_counts n = machine_counts(&s);
	bj_u64(j, "range_invalidations", n.inval_range);
	bj_u64(j, "cmos", n.cmo_calls);
	bj_u64(j, "cmo_bytes", n.cmo_bytes);
	bj_u64(j, "context_invalidations", n.inval_context);
	bj_u64(j, "tables_freed", st1.tables_freed - st0.tables_freed);
	bj_u64(j, "leaves_zapped", st1.leaves_zapped - st0.leaves_zapped);
	bj_obj_end(j);

	s2_root_put(vm, root);
	machine_vm_destroy(&s);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	uint64_t mapped = bench_arg_u64(argc, argv, "mapped", quick ? BENCH_GIB : 64 * BENCH_GIB);
	uint64_t mapped_4k = bench_arg_u64(argc, argv, "mapped_4k", mapped);
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);

	struct bench_json j;
	bench_begin(&j, "b4_teardown", "ok");
	bj_obj(&j, "params");
	bj_u64(&j, "mapped_bytes", mapped);
	bj_u64(&j, "mapped_bytes_4k", mapped_4k);
	bj_str(&j, "format", "arm64 stage-2, 4 KiB granule");
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	static const uint64_t sizes[] = {4096, 2 * BENCH_MIB};
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < sizeof(policies) / sizeof(policies[0]); k++)
			one(&j, &costs, sizes[i] == 4096 ? mapped_4k : mapped, sizes[i],
			    &policies[k]);
	bj_arr_end(&j);
	bj_arr(&j, "floor");
	floor_emit(&j, mapped_4k, 4096, 4);
	floor_emit(&j, mapped, 2 * BENCH_MIB, 4);
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
