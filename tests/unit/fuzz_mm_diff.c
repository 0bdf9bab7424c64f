// SPDX-License-Identifier: Apache-2.0
//
// Coverage-guided fuzzing of the SLAT engine (libFuzzer, `make fuzz`): the
// same operation language and reference model as test_mm_random
// (tests/unit/mm_diff.c), with the operations decoded from the fuzzer's bytes
// instead of a seed. Byte 0 picks the format; a mismatch prints what differed
// and aborts, so libFuzzer keeps the input as a crash file (replay: run this
// binary with the file as its argument).
#include <stdio.h>
#include <stdlib.h>

#include "mm_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[1024];

	if (size < 1)
		return 0;
	struct mm_diff_opts o = {
	    .fmt_name = mm_diff_fmt_names[data[0] % 4],
	    .data = data + 1,
	    .len = size - 1,
	    .ops = 1u << 20, // the input's length bounds the run
	};
	if (mm_diff_run(&o, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		abort();
	}
	return 0;
}
