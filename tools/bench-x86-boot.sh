#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-x86-boot.sh [RUNS] - boot time of Debian's amd64 kernel to the
# guest marker of tests/guest/x86_primary.sh, under Slat (OVMF -> slat.efi ->
# EFI stub -> kernel, both CPUs in SVM guest mode) and directly (QEMU
# -kernel, no UEFI firmware, no hypervisor), in the same emulator
# (-accel tcg -cpu max -smp 2). Prints one JSON object per run:
#
#   {"bench":"x86_boot","cpu":"max","mode":"slat","run":1,
#    "marker_s":19.2,"kernel_uptime_s":6.8,"exit_s":19.6,"status":0}
#
# marker_s: wall time from starting the emulator to the marker line on the
# serial console; kernel_uptime_s: the kernel's own uptime at the marker;
# exit_s: until the emulator exited (power-off). Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
runs=${1:-1}
out="$top/build/bench/x86-boot"
g="$top/build/guest/x86_64"
mkdir -p "$out"
make -s -C "$top" build/x86_64/slat.efi guest-x86_64 >"$out/make.out" 2>&1 || {
	cat "$out/make.out" >&2
	exit 1
}
cmdline="console=ttyS0 panic=-1 slat.test=x86_primary"
printf '%s\n' 'loader  = \slat\vmlinuz' 'initrd  = \slat\initrd.img' "cmdline = $cmdline" \
	>"$out/slat.cfg"
EMU_ESP_CYL=128 emu_esp "$out/esp.img" x86_64 "$top/build/x86_64/slat.efi" \
	"$out/slat.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1

# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"

slat_x86() { # LOG: OVMF -> slat.efi -> the kernel in SVM guest mode
	EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_x86 batch "$1" "$out/esp.img" max
}

direct_x86() { # LOG: the same kernel and initramfs with -kernel
	EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_x86_kernel batch "$1" max "$g/vmlinuz" \
		"$g/initrd.img" "$cmdline"
}

# time_run MODE RUN: boots once, prints the JSON line.
time_run() {
	local log="$out/serial-$1-$2.log"

	bench_boot_run '"bench":"x86_boot","cpu":"max"' "$1" "$2" "$log" 0 "${1}_x86" "$log"
}

for ((i = 1; i <= runs; i++)); do
	time_run slat "$i"
	time_run direct "$i"
done
