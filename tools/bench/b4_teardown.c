// SPDX-License-Identifier: Apache-2.0
//
// B4 teardown (placeholder until mm/ lands): measures only the physical floor.
#include "tools/bench/bench.h"
#include "tools/bench/floor.h"

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	uint64_t mapped = bench_arg_u64(argc, argv, "mapped", quick ? BENCH_GIB : 64 * BENCH_GIB);
	struct bench_json j;
	bench_begin(&j, "b4_teardown", "unavailable");
	bj_str(&j, "reason",
	       "mm/ teardown API not in the tree yet (issue 3); only the floor is measured");
	bj_obj(&j, "params");
	bj_u64(&j, "mapped_bytes", mapped);
	bj_obj_end(&j);
	bj_arr(&j, "floor");
	floor_emit(&j, mapped, 4096, 4);
	floor_emit(&j, mapped, 2 * BENCH_MIB, 4);
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
