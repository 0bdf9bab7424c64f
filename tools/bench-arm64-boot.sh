#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-arm64-boot.sh [RUNS] [CPU...] - boot cost of Slat on arm64: the
# same edk2 (QEMU_EFI.fd) boots the same Debian arm64 kernel and initramfs to
# the guest marker of tests/guest/primary.sh, through slat.efi, twice per run:
#
#   slat    slat.efi takes EL2, drops edk2 to EL1, the kernel runs in the primary VM
#   hv_off  the same ESP with `hypervisor = off` in slat.cfg: slat.efi starts the
#           kernel through the same hand-off without taking EL2 (the baseline)
#
# in the same emulator (QEMU virt, virtualization=on, GICv3, 2 CPUs; the
# kernel of the hv_off run is entered at EL2, as edk2 runs there). One JSON
# object per boot (tools/bench_boot_lib.sh):
#
#   {"bench":"arm64_boot","cpu":"cortex-a72","mode":"slat","run":1,"marker_s":4.21,
#    "kernel_uptime_s":2.03,"exit_s":4.6,"status":0,"exits_total":12,
#    "exits":{"firmware-call":11,...},"io_exits_by_port":{},"slat_uptime_s":2.7}
#
# marker_s: wall time from starting the emulator to the marker line on the
# serial console; kernel_uptime_s: the kernel's own uptime at the marker;
# exit_s: until the emulator exited (power-off). Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
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
cmdline="console=ttyAMA0 panic=-1 slat.test=primary"
for mode in slat hv_off; do
	bench_cfg "$out/$mode.cfg" "$cmdline" "hypervisor = $([ "$mode" = slat ] && echo on || echo off)"
	EMU_ESP_CYL=128 emu_esp "$out/$mode.img" aarch64 "$top/build/aarch64/slat.efi" \
		"$out/$mode.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" ||
		exit 1
done

boot_arm64() { # MODE CPU LOG: edk2 -> slat.efi -> the kernel
	EMU_SMP=2 EMU_TIMEOUT=180 emu_qemu_arm64 batch "$3" "$out/$1.img" "$2"
}

# time_run MODE CPU RUN: boots once, prints the JSON line.
time_run() {
	local log="$out/serial-$1-${2%%,*}-$3.log"

	bench_boot_run "\"bench\":\"arm64_boot\",\"cpu\":\"$2\"" "$1" "$3" "$log" 0 \
		boot_arm64 "$1" "$2" "$log"
}

for cpu in "${cpus[@]}"; do
	for ((i = 1; i <= runs; i++)); do
		time_run slat "$cpu" "$i"
		time_run hv_off "$cpu" "$i"
	done
done
