#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/fuzz.sh RANDOM_BIN FUZZER_BIN - `make fuzz` (see mk/fuzz.mk).
#
# 1. The randomized differential test (RANDOM_BIN = test_mm_random, ASan+UBSan)
#    on fresh seeds: FUZZ_OPS operations in all (default 10^7), in runs of
#    FUZZ_CHUNK operations (default 10^5) cycling over the four formats,
#    FUZZ_JOBS runs at once (default 2). Each run's format and seed are listed
#    in build/fuzz/seeds.txt before it starts; a failure prints its replay
#    command.
# 2. The libFuzzer harness (FUZZER_BIN) over the same operation language,
#    FUZZ_JOBS processes for FUZZ_SECONDS each (default 300), corpus in
#    build/fuzz/corpus, crash inputs in build/fuzz/crashes (replay: run
#    FUZZER_BIN with the file as argument).
# Exits non-zero when anything failed.
set -uo pipefail

rand=${1:?usage: fuzz.sh RANDOM_BIN FUZZER_BIN}
fuzzer=${2:?usage: fuzz.sh RANDOM_BIN FUZZER_BIN}
ops=${FUZZ_OPS:-10000000}
chunk=${FUZZ_CHUNK:-100000}
jobs=${FUZZ_JOBS:-2}
secs=${FUZZ_SECONDS:-300}
out=build/fuzz
fmts=(ept4 ept5 npt4 arm64)

for v in "$ops" "$chunk" "$jobs" "$secs"; do
	[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || {
		echo "fuzz.sh: FUZZ_OPS, FUZZ_CHUNK, FUZZ_JOBS and FUZZ_SECONDS must be positive integers" >&2
		exit 2
	}
done
[ -x "$rand" ] && [ -x "$fuzzer" ] || { echo "fuzz.sh: build first (make fuzz-build)" >&2; exit 2; }
rm -rf "$out/runs"
mkdir -p "$out/runs" "$out/corpus" "$out/crashes"

runs=$(((ops + chunk - 1) / chunk))
: >"$out/seeds.txt"
for ((i = 0; i < runs; i++)); do
	echo "$i ${fmts[i % 4]} 0x$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')" >>"$out/seeds.txt"
done
echo "== differential test: $((runs * chunk)) operations, $runs runs of $chunk on fresh seeds," \
	"$jobs at a time (seeds: $out/seeds.txt)"

# One run: index, format, seed. Prints one progress line.
fuzz_run_one() {
	local i=$1 fmt=$2 seed=$3 start=$SECONDS res=ok
	"$FUZZ_RAND" --fmt "$fmt" --seed "$seed" --ops "$FUZZ_CHUNK" >"$FUZZ_OUT/runs/$i.log" 2>&1 ||
		res=FAILED
	printf '  [%3d/%d] %-5s seed %s: %s (%ds)\n' $((i + 1)) "$FUZZ_RUNS" "$fmt" "$seed" "$res" \
		$((SECONDS - start))
}
export -f fuzz_run_one
export FUZZ_RAND=$rand FUZZ_CHUNK=$chunk FUZZ_OUT=$out FUZZ_RUNS=$runs
start=$SECONDS
xargs -P "$jobs" -L 1 bash -c 'fuzz_run_one "$@"' _ <"$out/seeds.txt"
failed_runs=$(grep -L ': ok$' "$out"/runs/*.log 2>/dev/null | wc -l)
echo "  $runs runs in $((SECONDS - start))s, $failed_runs failed"
for log in $(grep -L ': ok$' "$out"/runs/*.log 2>/dev/null); do
	echo "  --- $log"
	grep -E 'FAILED|mm_diff|replay|ERROR|SUMMARY' "$log" | head -8 | sed 's/^/    /'
done

echo "== libFuzzer: $jobs jobs x ${secs}s (corpus $out/corpus, crashes $out/crashes)"
crashes_before=$(find "$out/crashes" -type f | wc -l)
pids=()
for ((j = 0; j < jobs; j++)); do
	"$fuzzer" -max_total_time="$secs" -max_len=4096 -len_control=0 -print_final_stats=1 \
		-artifact_prefix="$out/crashes/" "$out/corpus" >"$out/libfuzzer-$j.log" 2>&1 &
	pids+=($!)
done
fuzz_failed=0
for j in "${!pids[@]}"; do
	wait "${pids[$j]}" || fuzz_failed=$((fuzz_failed + 1))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/libfuzzer-$j.log")
	cov=$(grep -o 'cov: [0-9]*' "$out/libfuzzer-$j.log" | tail -1)
	echo "  job $j: ${execs:-?} inputs, $cov (log: $out/libfuzzer-$j.log)"
done
new_crashes=$(($(find "$out/crashes" -type f | wc -l) - crashes_before))
if [ "$fuzz_failed" -gt 0 ] || [ "$new_crashes" -gt 0 ]; then
	echo "  libFuzzer found failures; replay with: $fuzzer $out/crashes/<file>"
	grep -h -E 'mm_diff|ERROR' "$out"/libfuzzer-*.log | head -8 | sed 's/^/    /'
fi
echo "fuzz: $failed_runs of $runs seeded runs failed; libFuzzer: $fuzz_failed jobs failed, $new_crashes new crash inputs"
[ "$failed_runs" -eq 0 ] && [ "$fuzz_failed" -eq 0 ] && [ "$new_crashes" -eq 0 ]
