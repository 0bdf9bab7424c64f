// SPDX-License-Identifier: Apache-2.0
//
// The randomized differential test (tests/unit/mm_diff.c) in two modes:
//
//   test_mm_random                     cmocka: a short fixed-seed pass over all
//                                      four formats (run by `make test`);
//                                      MMT_SEED / MMT_OPS override seed and count
//   test_mm_random --seed S --ops N [--fmt ept4|ept5|npt4|arm64|all]
//                                      one replayable run (what `make fuzz` does
//                                      with fresh seeds); prints the seed of a
//                                      failure and exits 1
#include <stdio.h>
#include <unistd.h>

#include "mm_diff.h"
#include "mm_test.h"

#define UNIT_OPS 5000 // per format: about 1 s under ASan

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static void run_fmt(const char *fmt, uint64_t seed)
{
	char msg[1024];
	struct mm_diff_opts o = {
	    .fmt_name = fmt,
	    .seed = env_u64("MMT_SEED", seed),
	    .ops = env_u64("MMT_OPS", UNIT_OPS),
	    .expect_coverage = true,
	};

	if (mm_diff_run(&o, msg, sizeof(msg)))
		fail_msg("%s", msg);
}

static void test_random_ept4(void **state)
{
	run_fmt("ept4", 0x5eed0001);
}

static void test_random_ept5(void **state)
{
	run_fmt("ept5", 0x5eed0004);
}

static void test_random_npt4(void **state)
{
	run_fmt("npt4", 0x5eed0002);
}

static void test_random_arm64(void **state)
{
	run_fmt("arm64", 0x5eed0003);
}

// ---- command line: one replayable run ------------------------------------------------------

static int usage(void)
{
	fprintf(stderr, "usage: test_mm_random [--seed S] [--ops N] "
			"[--fmt ept4|ept5|npt4|arm64|all]\n");
	return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	*out = strtoull(s, &end, 0);
	return *end ? -1 : 0;
}

static int run_cli(int argc, char **argv)
{
	uint64_t seed = 1, ops = 10000;
	const char *fmt = "all";
	unsigned ia;

	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--seed") && !parse_u64(v, &seed))
			continue;
		if (!strcmp(argv[i], "--ops") && !parse_u64(v, &ops))
			continue;
		if (!strcmp(argv[i], "--fmt") && v && (!strcmp(v, "all") || mm_diff_fmt(v, &ia))) {
			fmt = v;
			continue;
		}
		return usage();
	}
	for (unsigned f = 0; f < 4; f++) {
		const char *name = mm_diff_fmt_names[f];
		struct mm_diff_opts o = {.fmt_name = name, .seed = seed, .ops = ops};
		char msg[1024];

		if (strcmp(fmt, "all") && strcmp(fmt, name))
			continue;
		printf("mm_diff %s seed 0x%llx ops %llu: ", name, (unsigned long long)seed,
		       (unsigned long long)ops);
		fflush(stdout); // the seed is out even if the engine crashes
		if (mm_diff_run(&o, msg, sizeof(msg))) {
			// The failed run's VMs are left as they were: end here, without
			// the leak report they would cause.
			printf("FAILED\n%s\n", msg);
			fflush(stdout);
			_exit(1);
		}
		printf("ok\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_ept4),
	    cmocka_unit_test(test_random_ept5),
	    cmocka_unit_test(test_random_npt4),
	    cmocka_unit_test(test_random_arm64),
	};

	if (argc > 1)
		return run_cli(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
