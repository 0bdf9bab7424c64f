# SPDX-License-Identifier: Apache-2.0
#
# Sourced by tools/bench-*-boot.sh: times one emulator boot to the guest
# marker of tests/guest/*.sh and prints one JSON line.
#
#   bench_boot_run TAG MODE RUN LOG STOP CMD...
#
# runs CMD in the background (it must write the serial console to LOG) and
# prints {TAG,"mode":MODE,"run":RUN,"marker_s":..,"kernel_uptime_s":..,
# "exit_s":..,"status":..}. TAG is the JSON members naming the benchmark, e.g.
# '"bench":"x86_boot","cpu":"max"'. marker_s: wall time from starting CMD to
# the marker line; kernel_uptime_s: the kernel's own uptime printed with the
# marker; exit_s: until CMD exited. STOP=1 stops CMD's children 2 s after the
# marker (a guest with no power-off path). Timings are reported, never judged.

bench_now() { date +%s.%N; }

bench_boot_run() {
	local tag=$1 mode=$2 run=$3 log=$4 stop=$5 start marker="" pid rc end uptime
	shift 5
	rm -f "$log"
	start=$(bench_now)
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ -z "$marker" ] && grep -aq 'SLAT-GUEST: MARKER' "$log" 2>/dev/null; then
			marker=$(bench_now)
			if [ "$stop" = 1 ]; then
				sleep 2
				kill $(pgrep -P "$pid") 2>/dev/null
			fi
		fi
		sleep 0.02
	done
	wait "$pid"
	rc=$?
	end=$(bench_now)
	[ -z "$marker" ] && grep -aq 'SLAT-GUEST: MARKER' "$log" && marker=$end
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^SLAT-GUEST: MARKER .* uptime \([0-9.]*\)$/\1/p')
	awk -v t="$tag" -v m="$mode" -v r="$run" -v s="$start" -v k="$marker" -v e="$end" \
		-v u="${uptime:-null}" -v rc="$rc" 'BEGIN {
		printf "{%s,\"mode\":\"%s\",\"run\":%d,", t, m, r
		printf "\"marker_s\":%s,", (k == "" ? "null" : sprintf("%.3f", k - s))
		printf "\"kernel_uptime_s\":%s,\"exit_s\":%.3f,\"status\":%d}\n", u, e - s, rc }'
}
