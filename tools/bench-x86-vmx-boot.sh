#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-x86-vmx-boot.sh [RUNS] [CPUS] - boot cost of Slat on Intel VT-x:
# Bochs corei7_skylake_x with OVMF boots Debian's amd64 kernel and initramfs
# to the guest marker of tests/guest/x86_primary.sh through slat.efi, twice
# per run:
#
#   slat    the VT-x primary VM under Slat's EPT
#   hv_off  the same ESP with `hypervisor = off` in slat.cfg: slat.efi starts the
#           kernel through the same hand-off without VMXON (the baseline)
#
# One JSON object per boot (tools/bench_boot_lib.sh):
#
#   {"bench":"x86_vmx_boot","cpus":1,"mode":"slat","run":1,"marker_s":141.2,
#    "kernel_uptime_s":0.91,"exit_s":143.0,"status":1,"exits_total":...}
#
# marker_s: wall time from starting Bochs to the marker on the serial
# console; kernel_uptime_s: the kernel's own uptime there; exit_s: until Bochs
# exited (ACPI power-off exits with status 1). Without Slat, OVMF under Bochs
# gives Linux no power-off path: the hv_off run's emulator is stopped 2 s
# after the marker, so its exit_s is not a power-off. Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
runs=${1:-1}
cpus=${2:-1}
out="$top/build/bench/x86-vmx-boot"
g="$top/build/guest/x86_64"
cmdline="console=ttyS0,115200 panic=-1 quiet slat.test=x86_primary"
mkdir -p "$out"
make -s -C "$top" build/x86_64/slat.efi guest-x86_64 >"$out/make.out" 2>&1 || {
	cat "$out/make.out" >&2
	exit 1
}
export EMU_ESP_CYL=128
for mode in slat hv_off; do
	bench_cfg "$out/$mode.cfg" "$cmdline" "hypervisor = $([ "$mode" = slat ] && echo on || echo off)"
	emu_esp "$out/$mode.img" x86_64 "$top/build/x86_64/slat.efi" "$out/$mode.cfg=slat.cfg" \
		"$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1
done

bochs_run() { # MODE LOG: Bochs with the mode's ESP
	rm -f "$out/$1.img.lock"
	EMU_SMP=$cpus EMU_TIMEOUT=${BENCH_TIMEOUT:-900} emu_bochs batch "$2" "$out/$1.img" \
		corei7_skylake_x
}

# time_run MODE RUN: boots once, prints the JSON line.
time_run() {
	local dir="$out/$1"

	mkdir -p "$dir"
	bench_boot_run "\"bench\":\"x86_vmx_boot\",\"cpus\":$cpus" "$1" "$2" "$dir/serial.log" \
		"$([ "$1" = hv_off ] && echo 1 || echo 0)" bochs_run "$1" "$dir/serial.log"
}

for ((i = 1; i <= runs; i++)); do
	time_run slat "$i"
	time_run hv_off "$i"
done
