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

# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"

direct_arm64() { # CPU LOG: the same kernel and initramfs with -kernel, entered at EL2
	timeout -k 10 180 qemu-system-aarch64 -accel tcg -M virt,virtualization=on,gic-version=3 \
		-cpu "$1" -m "$EMU_MEM_MB" -smp 2 -kernel "$g/vmlinuz" -initrd "$g/initrd.img" \
		-append "console=ttyAMA0 panic=-1 slat.test=primary" \
		-serial "file:$2" -display none -monitor none -no-reboot -net none </dev/null
}

slat_arm64() { # CPU LOG: edk2 -> slat.efi -> the kernel at EL1
	EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_arm64 batch "$2" "$out/esp.img" "$1"
}

# time_run MODE CPU RUN: boots once, prints the JSON line.
time_run() {
	local log="$out/serial-$1.log"

	bench_boot_run "\"bench\":\"arm64_boot\",\"cpu\":\"$2\"" "$1" "$3" "$log" 0 \
		"${1}_arm64" "$2" "$log"
}

for cpu in "${cpus[@]}"; do
	for ((i = 1; i <= runs; i++)); do
		time_run slat "$cpu" "$i"
		time_run direct "$cpu" "$i"
	done
done
