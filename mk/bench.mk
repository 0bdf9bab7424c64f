# SPDX-License-Identifier: Apache-2.0
#
# `make bench`: the hosted benchmark programs of tools/bench/ (b<N>_*.c, one per
# scenario, each measuring a mechanism beside its baseline through an engine
# mode switch), linked against the optimised hosted library
# build/hosted/bench/libslat.a (-O2 -DNDEBUG, no sanitizer, no cmocka), run by
# tools/bench_run.py, which writes build/bench/<timestamp>.json, latest.json and
# the PNG plots (tools/bench_plot.py).
#
#   make bench              full run (all scenarios at the design sizes + boot times:
#                           Slat vs hypervisor = off, exits per reason)
#   make bench QUICK=1      reduced sizes, every scenario, one arm64 boot per mode (< 2 min)
#   make bench ONLY=b4,b6   only some scenarios (the others are recorded as skipped)
#   make bench-build        only build the programs

BENCH_OUT      := $(BUILD)/bench
BENCH_BINDIR   := $(BUILD)/hosted/bench/bin/bench
BENCH_SRCS     := $(sort $(wildcard tools/bench/b[0-9]_*.c))
BENCH_SUPPORT  := $(filter-out $(BENCH_SRCS),$(wildcard tools/bench/*.c))
BENCH_BINS     := $(patsubst tools/bench/%.c,$(BENCH_BINDIR)/%,$(BENCH_SRCS))
BENCH_SUP_OBJS := $(call hosted_objs,bench,$(BENCH_SUPPORT))
# Debian's python3 has python3-matplotlib; a python3 earlier on PATH may not.
BENCH_PY       := $(firstword $(wildcard /usr/bin/python3) python3)
QUICK ?= 0
ONLY  ?=

$(BENCH_BINDIR)/%: $(BUILD)/hosted/bench/tools/bench/%.o $(BENCH_SUP_OBJS) \
		$(BUILD)/hosted/bench/libslat.a
	@mkdir -p $(@D)
	$(Q)$(HOSTED_CC) $(SAN_bench) $^ -lpthread -lm -o $@

.PHONY: bench-build
bench-build: $(BENCH_BINS)

# The driver builds each program itself, once the engine functions it needs
# are in libslat.a (a scenario whose API has not landed is "unavailable").
bench: $(DEPS_STAMP)
	$(Q)$(BENCH_PY) tools/bench_run.py --bindir $(BENCH_BINDIR) --out $(BENCH_OUT) \
		--lib $(BUILD)/hosted/bench/libslat.a --make "$(MAKE)" \
		$(if $(filter 1,$(QUICK)),--quick) $(if $(ONLY),--only $(ONLY))
