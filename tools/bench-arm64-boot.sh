#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-arm64-boot.sh [RUNS] [CPU...] - boot time of Debian's arm64 kernel
# to the guest marker of tests/guest/primary.sh, under Slat (edk2 -> slat.efi
# -> kernel at EL1) and directly (QEMU -kernel, kernel entered at EL2, no
# firmware), in the same emulator with 2 CPUs. Prints one JSON object per run:
#
#   {"bench":"arm64_boot","cpu":"cortex-a72","mode":"slat","run":1,
#    "marker_s":4.21,"kernel_uptime_s":2.03,"exit_s":4.6}
#
# marker_s: wall time from starting the emulator to the marker line on the
# serial console; kernel_uptime_s: the kernel's own uptime at the marker;
# exit_s: until the emulator exited (power-off). Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
runs=${1:-1}
shift || true
cpus=("$@")
[ "${#cpus[@]}" -eq 0 ] && cpus=(cortex-a72 max,pauth=off)
out="$top/build/bench/arm64-boot"
g="$top/build/guest/aarch64"
mkdir -p "$out"
make -s -C "$top" build/aarch64/slat.efi guest-aarch64 >"$out/make.out" 2>&1 || {
	cat "$out/make.out" >&2
	exit 1
}
printf '%s\n' 'loader  = \slat\vmlinuz' 'initrd  = \slat\initrd.img' \
	'cmdline = console=ttyAMA0 panic=-1 slat.test=primary' >"$out/slat.cfg"
EMU_ESP_CYL=128 emu_esp "$out/esp.img" aarch64 "$top/build/aarch64/slat.efi" \
	"$out/slat.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1

now() { date +%s.%N; }

# time_run MODE CPU RUN: boots once, prints the JSON line.
time_run() {
	local mode=$1 cpu=$2 run=$3 log="$out/serial-$1.log" start marker="" pid
	rm -f "$log"
	start=$(now)
	if [ "$mode" = slat ]; then
		EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_arm64 batch "$log" "$out/esp.img" "$cpu" &
	else
		timeout -k 10 180 qemu-system-aarch64 -accel tcg -M virt,virtualization=on,gic-version=3 \
			-cpu "$cpu" -m "$EMU_MEM_MB" -smp 2 -kernel "$g/vmlinuz" -initrd "$g/initrd.img" \
			-append "console=ttyAMA0 panic=-1 slat.test=primary" \
			-serial "file:$log" -display none -monitor none -no-reboot -net none </dev/null &
	fi
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ -z "$marker" ] && grep -aq 'SLAT-GUEST: MARKER' "$log" 2>/dev/null; then
			marker=$(now)
		fi
		sleep 0.01
	done
	wait "$pid"
	local rc=$? end uptime
	end=$(now)
	[ -z "$marker" ] && grep -aq 'SLAT-GUEST: MARKER' "$log" && marker=$end
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^SLAT-GUEST: MARKER .* uptime \([0-9.]*\)$/\1/p')
	awk -v m="$mode" -v c="$cpu" -v r="$run" -v s="$start" -v k="$marker" -v e="$end" \
		-v u="${uptime:-null}" -v rc="$rc" 'BEGIN {
		printf "{\"bench\":\"arm64_boot\",\"cpu\":\"%s\",\"mode\":\"%s\",\"run\":%d,", c, m, r
		printf "\"marker_s\":%s,", (k == "" ? "null" : sprintf("%.3f", k - s))
		printf "\"kernel_uptime_s\":%s,\"exit_s\":%.3f,\"status\":%d}\n", u, e - s, rc }'
}

for cpu in "${cpus[@]}"; do
	for ((i = 1; i <= runs; i++)); do
		time_run slat "$cpu" "$i"
		time_run direct "$cpu" "$i"
	done
done
