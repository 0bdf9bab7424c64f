// SPDX-License-Identifier: Apache-2.0
//
// Randomized differential test of the SLAT engine (tests/unit/mm_diff.c):
// one operation language (slot add / delete / move / flag changes, faults,
// explicit map / unmap / protect, injected allocation failures and yields,
// zap-mode switches) run against a reference model that says, for every page,
// whether it must be mapped (and to what, by a leaf of which size) or must
// not be. Driven by a seed (test_mm_random, `make fuzz`) or by a fuzzer's
// bytes (fuzz_mm_diff.c): both decode operations the same way.
#ifndef SLAT_TESTS_MM_DIFF_H
#define SLAT_TESTS_MM_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/s2_fmt.h"

struct mm_diff_opts {
	const char *fmt_name; // "ept4", "ept5", "npt4", "arm64"
	uint64_t seed;	      // xorshift seed (ignored with data)
	uint64_t ops;	      // operations to run (with data: at most this many)
	const uint8_t *data;  // fuzzer input: operations decoded from these bytes
	size_t len;
	bool expect_coverage; // assert failures and yields were injected (long runs)
};

// Runs one sequence; 0 when the engine matched the model at every step, else
// 1 with a message (format, seed, step, what differed, how to replay) in msg.
int mm_diff_run(const struct mm_diff_opts *o, char *msg, size_t msg_len);

// The formats the differential test knows, by name (NULL: unknown).
const struct s2_fmt *mm_diff_fmt(const char *name, unsigned *ia_bits);
extern const char *const mm_diff_fmt_names[4];

#endif
