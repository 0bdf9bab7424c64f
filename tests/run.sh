#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tests/run.sh [STAGE...] - run Slat's test stages and print one summary line.
#
# Stages: unit (cmocka under ASan+UBSan, *_mt tests also under TSan; mm/'s
#         call graph has no loop: tools/mm_callgraph.py),
#         boot (emulator boot tests, tests/boot/t_*.sh),
#         bench (the quick benchmark run produces valid JSON; no timings judged),
#         slow (tests/slow/t_*.sh: boot tests too slow for CI, `make test-slow`).
# Without arguments unit, boot and bench run. The last line is "N passed, N failed".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/test
mkdir -p "$out"
passed=0
failed=0
failures=()

note_pass() { passed=$((passed + $1)); }
note_fail() {
	failed=$((failed + $1))
	failures+=("$2")
}

# Whole-binary limit (seconds); each cmocka test also has its own watchdog
# (tests/unit/unit_watchdog.h, UNIT_TEST_TIMEOUT).
UNIT_BINARY_TIMEOUT=${UNIT_BINARY_TIMEOUT:-600}

# Run one cmocka binary; count its tests from cmocka's own closing lines.
run_cmocka() {
	local bin=$1 tag=$2 log p f
	log="$out/unit/$tag-$(basename "$bin").log"
	mkdir -p "$out/unit"
	local start=$SECONDS
	timeout -k 10 "$UNIT_BINARY_TIMEOUT" "$bin" >"$log" 2>&1
	local rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "[  FAILED  ] $(basename "$bin"): TIMEOUT after ${UNIT_BINARY_TIMEOUT}s (binary killed)" >>"$log"
	fi
	p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$log" | tail -1)
	# No summary (killed by a watchdog or `timeout`): count the tests that ended OK.
	[ -n "$p" ] || p=$(grep -c '^\[       OK \]' "$log")
	p=${p:-0}
	f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # crashed or sanitizer abort
	note_pass "$p"
	[ "$f" -gt 0 ] && note_fail "$f" "$tag $(basename "$bin") (log: $log)"
	printf '  %-5s %-36s %3d passed %3d failed  %4ds\n' "$tag" "$(basename "$bin")" \
		"$p" "$f" $((SECONDS - start))
	if [ "$f" -gt 0 ]; then
		grep -E '^\[  (FAILED|  ERROR) \]|ERROR|TIMEOUT|Sanitizer|runtime error' "$log" | head -20 | sed 's/^/      /'
	fi
}

stage_unit() {
	echo "== unit tests (cmocka; ASan+UBSan, concurrency tests also TSan)"
	make -s unit-build || { note_fail 1 "unit build"; return; }
	# mm/'s file-level call graph has no loop (docs/mm.md, "Layers").
	if python3 tools/mm_callgraph.py >"$out/mm_callgraph.log" 2>&1; then
		note_pass 1
		printf '  check %-36s passed\n' mm_callgraph
	else
		note_fail 1 "mm_callgraph (log: $out/mm_callgraph.log)"
		sed 's/^/      /' "$out/mm_callgraph.log"
	fi
	local b
	for b in build/hosted/asan/bin/test_*; do [ -x "$b" ] && run_cmocka "$b" asan; done
	for b in build/hosted/tsan/bin/test_*; do [ -x "$b" ] && run_cmocka "$b" tsan; done
}

# run_boot_tests DIR: every DIR/t_*.sh (each bounded by its own BOOT_TIMEOUT).
run_boot_tests() {
	local t name start
	for t in "$1"/t_*.sh; do
		[ -e "$t" ] || continue
		name=$(basename "$t" .sh)
		start=$SECONDS
		if bash "$t" >"$out/boot-$name.out" 2>&1; then
			note_pass 1
			printf '  boot  %-36s passed  %4ds\n' "$name" $((SECONDS - start))
		else
			note_fail 1 "boot $name (output: $out/boot-$name.out)"
			printf '  boot  %-36s FAILED  %4ds\n' "$name" $((SECONDS - start))
			tail -n 40 "$out/boot-$name.out" | sed 's/^/      /'
		fi
	done
}

stage_boot() {
	echo "== emulator boot tests"
	run_boot_tests tests/boot
}

# Not in the default stages: boot tests too slow for CI (`make test-slow`).
stage_slow() {
	echo "== slow emulator boot tests (tests/slow: Bochs runs of the full suites)"
	run_boot_tests tests/slow
}

stage_bench() {
	echo "== benchmark smoke (quick run must produce valid JSON; timings not judged)"
	[ -f tools/bench_check.py ] || { echo "  (no benchmarks yet)"; return; }
	if make -s bench QUICK=1 >"$out/bench.out" 2>&1 &&
		python3 tools/bench_check.py build/bench/latest.json >>"$out/bench.out" 2>&1; then
		note_pass 1
		echo "  bench quick-json                                passed"
	else
		note_fail 1 "bench (output: $out/bench.out)"
		tail -n 30 "$out/bench.out" | sed 's/^/      /'
	fi
}

stages=("$@")
[ "${#stages[@]}" -eq 0 ] && stages=(unit boot bench)
for s in "${stages[@]}"; do
	case "$s" in
	unit | boot | bench | slow) "stage_$s" ;;
	*) echo "run.sh: unknown stage '$s'" >&2; exit 2 ;;
	esac
done

if [ "${#failures[@]}" -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
