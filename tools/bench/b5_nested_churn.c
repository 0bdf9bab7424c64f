// SPDX-License-Identifier: Apache-2.0
//
// B5 nested churn: an L1 hypervisor with `l1` bytes of memory boots
// `contexts` L2 guests of `l2` bytes each, lets each touch all its memory,
// destroys them, for `cycles` cycles; then L1's memslot 0 is deleted. Run
// with recursive orphan reclaim (the mechanism) and without (the baseline),
// switched per shadow MMU (sh_set_recursive). The L1/L2 simulation is the
// nested helper's (tests/unit/shadow_sim.h, built into libslat.a): L1 tears
// each EPT12 down bottom-up with 4 KiB writes, as KVM does as an L1.
// Reported per cycle: time, used shadow pages (peak and after destroy), the
// longest hash chain; and the final slot-0 delete time.
//
// Scale: the design figure is 10 L2 x 2 GiB under a 64 GiB L1. The simulation
// touches every L2 page through the shadow walk each cycle (about 12 s a cycle
// at 2 GiB on a 2-core machine, 80 minutes for both modes), so the full run
// keeps 200 cycles, 10 contexts and the 64 GiB L1 but gives each L2 64 MiB;
// `l2=2G` runs the design size.
#include <stdlib.h>

#include "tests/unit/shadow_sim.h"
#include "tools/bench/bench.h"

static void one(struct bench_json *j, bool recursive, uint64_t l1, uint64_t l2, unsigned contexts,
		unsigned cycles)
{
	struct shsim_config cfg = {
	    .l1_pages = l1 / 4096,
	    .contexts = contexts,
	    .l2_pages = l2 / 4096,
	    .batch = 512,
	    .non_recursive = !recursive,
	    .teardown = SHSIM_TEARDOWN_WRITES,
	};
	struct shsim *s = shsim_create(&cfg);
	if (!s)
		bench_die("shsim_create");
	bj_obj(j, NULL);
	bj_str(j, "mode", recursive ? "recursive" : "non_recursive");
	bj_u64(j, "cycles", cycles);
	bj_u64(j, "l1_bytes", l1);
	bj_u64(j, "l2_bytes", l2);
	bj_u64(j, "contexts", contexts);
	bj_arr(j, "per_cycle");
	uint64_t total = 0;
	for (unsigned i = 0; i < cycles; i++) {
		struct shsim_cycle c = {0};
		uint64_t t0 = bench_now_ns();
		int r = shsim_cycle(s, &c);
		uint64_t dt = bench_now_ns() - t0;
		if (r)
			bench_die("shsim_cycle %u: %d", i, r);
		total += dt;
		bj_obj(j, NULL);
		bj_u64(j, "cycle_ns", dt);
		bj_u64(j, "used_pages", c.used_peak);
		bj_u64(j, "used_end", c.used_end);
		bj_u64(j, "longest_chain", c.chain_peak);
		bj_u64(j, "orphans_end", c.orphans_end);
		bj_u64(j, "zapped", c.zapped);
		bj_u64(j, "faults", c.faults);
		bj_obj_end(j);
		bench_progress("b5", "%s: cycle %u/%u, used %llu, chain %llu",
			       recursive ? "recursive" : "non_recursive", i + 1, cycles,
			       (unsigned long long)c.used_peak, (unsigned long long)c.chain_peak);
	}
	bj_arr_end(j);
	uint64_t t0 = bench_now_ns();
	int r = shsim_delete_slot0(s);
	uint64_t del = bench_now_ns() - t0;
	bench_progress_done();
	if (r)
		bench_die("shsim_delete_slot0: %d", r);
	bj_u64(j, "final_slot0_delete_ns", del);
	bj_u64(j, "total_cycle_ns", total);
	bj_i64(j, "leaked_pages", shsim_destroy(s));
	bj_obj_end(j);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	uint64_t l1 = bench_arg_u64(argc, argv, "l1", quick ? BENCH_GIB : 64 * BENCH_GIB);
	uint64_t l2 = bench_arg_u64(argc, argv, "l2", quick ? 16 * BENCH_MIB : 64 * BENCH_MIB);
	unsigned contexts = bench_arg_u64(argc, argv, "contexts", quick ? 4 : 10);
	unsigned cycles = bench_arg_u64(argc, argv, "cycles", quick ? 50 : 200);

	struct bench_json j;
	bench_begin(&j, "b5_nested_churn", "ok");
	bj_obj(&j, "params");
	bj_u64(&j, "l1_bytes", l1);
	bj_u64(&j, "l2_bytes", l2);
	bj_u64(&j, "contexts", contexts);
	bj_u64(&j, "cycles", cycles);
	bj_str(&j, "l1_teardown", "bottom-up 4 KiB writes (trapped)");
	bj_str(&j, "simulation", "tests/unit/shadow_sim.c");
	bj_obj_end(&j);
	bj_arr(&j, "results");
	one(&j, true, l1, l2, contexts, cycles);
	one(&j, false, l1, l2, contexts, cycles);
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
