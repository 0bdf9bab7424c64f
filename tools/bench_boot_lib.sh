# SPDX-License-Identifier: Apache-2.0
#
# Sourced by tools/bench-*-boot.sh: times one emulator boot to the guest
# marker of tests/guest/*.sh and prints one JSON line.
#
#   bench_boot_run TAG MODE RUN LOG STOP CMD...
#
# runs CMD in the background (it must write the serial console to LOG) and
# prints {TAG,"mode":MODE,"run":RUN,"marker_s":..,"kernel_uptime_s":..,
# "exit_s":..,"status":..,"exits_total":..,"exits":{..},"io_exits_by_port":{..},
# "slat_uptime_s":..}. TAG is the JSON members naming the benchmark, e.g.
# '"bench":"x86_boot","cpu":"max"'. marker_s: wall time from starting CMD to
# the marker line; kernel_uptime_s: the kernel's own uptime printed with the
# marker; exit_s: until CMD exited. STOP=1 stops CMD's children 2 s after the
# marker (a guest with no power-off path). The exit figures are Slat's exit
# summary at power-off (bench_exit_json); a run without Slat (hypervisor =
# off) has none: exits {} and exits_total null. Timings are reported, never
# judged.
#
# The modes of every boot script: "slat" (slat.efi takes the virtualization
# mode and boots the kernel in its primary VM) and "hv_off" (the same ESP,
# firmware, slat.efi, kernel and initramfs, with `hypervisor = off` in
# slat.cfg: slat.efi starts the kernel through the same hand-off without
# taking the virtualization mode).

bench_now() { date +%s.%N; }

# bench_exit_json LOG: the JSON members of Slat's exit summary in LOG:
#   slat: exit summary: vm primary power-off after 2.737477 s uptime, 2 vCPUs
#   slat: exits: 12 total
#   slat: exits: firmware-call  11 (vcpu0 10, vcpu1 1)
#   slat: io exits by port: 0xcf8 23176, 0x64 229
bench_exit_json() {
	tr -d '\r' <"$1" | awk '
	/^slat: exit summary: vm [^ ]+ .* after [0-9.]+ s uptime/ {
		for (i = 1; i < NF; i++) if ($i == "after") up = $(i + 1)
	}
	/^slat: exits: [0-9]+ total$/ { total = $3 }
	/^slat: exits: [a-z0-9-]+ +[0-9]+ \(/ { reasons = reasons sep "\"" $3 "\":" $4; sep = "," }
	/^slat: io exits by port: / {
		line = $0
		sub(/^slat: io exits by port: /, "", line)
		n = split(line, parts, /, /)
		for (i = 1; i <= n; i++) {
			split(parts[i], kv, " ")
			ports = ports psep "\"" kv[1] "\":" kv[2]; psep = ","
		}
	}
	END {
		printf "\"exits_total\":%s,\"exits\":{%s},\"io_exits_by_port\":{%s},\"slat_uptime_s\":%s",
			(total == "" ? "null" : total), reasons, ports, (up == "" ? "null" : up)
	}'
}

bench_boot_run() {
	local tag=$1 mode=$2 run=$3 log=$4 stop=$5 start marker="" pid rc end uptime exits
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
	exits=$(bench_exit_json "$log")
	awk -v t="$tag" -v m="$mode" -v r="$run" -v s="$start" -v k="$marker" -v e="$end" \
		-v u="${uptime:-null}" -v rc="$rc" -v x="$exits" 'BEGIN {
		printf "{%s,\"mode\":\"%s\",\"run\":%d,", t, m, r
		printf "\"marker_s\":%s,", (k == "" ? "null" : sprintf("%.3f", k - s))
		printf "\"kernel_uptime_s\":%s,\"exit_s\":%.3f,\"status\":%d,%s}\n", u, e - s, rc, x }'
}

# bench_cfg FILE CMDLINE [EXTRA LINE...]: the slat.cfg of a boot benchmark.
bench_cfg() {
	local f=$1 cmdline=$2
	shift 2
	printf '%s\n' '# written by tools/bench_boot_lib.sh' 'loader  = \slat\vmlinuz' \
		'initrd  = \slat\initrd.img' "cmdline = $cmdline" "$@" >"$f"
}
