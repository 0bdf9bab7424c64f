#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-x86-boot.sh [RUNS] - boot cost of Slat on AMD SVM: the same OVMF
# boots the same Debian amd64 kernel and initramfs (EFI stub) to the guest
# marker of tests/guest/x86_primary.sh, through slat.efi, twice per run:
#
#   slat    both CPUs in SVM guest mode under Slat's NPT
#   hv_off  the same ESP with `hypervisor = off` in slat.cfg: slat.efi starts the
#           kernel through the same hand-off without VMRUN (the baseline)
#
# in the same emulator (-accel tcg -cpu max -smp 2). One JSON object per boot
# (tools/bench_boot_lib.sh; exits and io_exits_by_port from Slat's exit
# summary). marker_s: wall time from starting the emulator to the marker on
# the serial console; kernel_uptime_s: the kernel's own uptime at the marker;
# exit_s: until the emulator exited (power-off). Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
runs=${1:-1}
out="$top/build/bench/x86-boot"
g="$top/build/guest/x86_64"
mkdir -p "$out"
make -s -C "$top" build/x86_64/slat.efi guest-x86_64 >"$out/make.out" 2>&1 || {
	cat "$out/make.out" >&2
	exit 1
}
cmdline="console=ttyS0 panic=-1 slat.test=x86_primary"
for mode in slat hv_off; do
	bench_cfg "$out/$mode.cfg" "$cmdline" "hypervisor = $([ "$mode" = slat ] && echo on || echo off)"
	EMU_ESP_CYL=128 emu_esp "$out/$mode.img" x86_64 "$top/build/x86_64/slat.efi" \
		"$out/$mode.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" ||
		exit 1
done

boot_x86() { # MODE LOG: OVMF -> slat.efi -> the kernel
	EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_x86 batch "$2" "$out/$1.img" max
}

# time_run MODE RUN: boots once, prints the JSON line.
time_run() {
	local log="$out/serial-$1-$2.log"

	bench_boot_run '"bench":"x86_boot","cpu":"max"' "$1" "$2" "$log" 0 boot_x86 "$1" "$log"
}

for ((i = 1; i <= runs; i++)); do
	time_run slat "$i"
	time_run hv_off "$i"
done
