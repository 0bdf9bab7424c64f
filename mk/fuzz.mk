# SPDX-License-Identifier: Apache-2.0
#
# `make fuzz`: the randomized differential test at scale (tools/fuzz.sh).
#  1. test_mm_random on fresh seeds, FUZZ_OPS operations in all (default 10^7)
#     over the four formats, FUZZ_JOBS processes at once (default 2);
#  2. fuzz_mm_diff, a coverage-guided libFuzzer harness over the same
#     operation language (clang -fsanitize=fuzzer, libclang-rt-14-dev), for
#     FUZZ_SECONDS (default 300) per job.
# The seeded runs use the unit tests' ASan+UBSan binary; the harness is built
# in the `fuzz` variant (-O2, ASan+UBSan, the fuzzer's coverage
# instrumentation). Any failure prints its seed (or crash file) and a replay
# command; docs/mm.md says how to replay.

SAN_fuzz := -O2 -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all
$(eval $(call hosted_variant,fuzz))

FUZZ_RANDOM := $(BUILD)/hosted/asan/bin/test_mm_random
FUZZ_HARNESS := $(BUILD)/hosted/fuzz/bin/fuzz_mm_diff

$(FUZZ_HARNESS): $(BUILD)/hosted/fuzz/tests/unit/fuzz_mm_diff.o $(BUILD)/hosted/fuzz/libslat.a
	@mkdir -p $(@D)
	$(Q)$(HOSTED_CC) -fsanitize=address,undefined,fuzzer $^ -lpthread -lm -o $@

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_RANDOM) $(FUZZ_HARNESS)
fuzz: deps
	$(Q)$(MAKE) -s fuzz-build
	$(Q)bash tools/fuzz.sh $(FUZZ_RANDOM) $(FUZZ_HARNESS)
