#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-x86-vmx-boot.sh [RUNS] [CPUS] - boot time of Debian's amd64
# kernel to the guest marker of tests/guest/x86_primary.sh under Bochs
# corei7_skylake_x with OVMF, through slat.efi (VT-x primary VM). With
# DIRECT=1 also the same kernel started by OVMF's shell (startup.nsh, no
# Slat; includes the shell's 5 s startup countdown). One JSON object per run:
#
#   {"bench":"x86_vmx_boot","cpus":1,"mode":"slat","run":1,
#    "marker_s":141.2,"kernel_uptime_s":0.91,"exit_s":143.0,"status":1}
#
# marker_s: wall time from starting Bochs to the marker on the serial
# console; kernel_uptime_s: the kernel's own uptime there; exit_s: until Bochs
# exited (ACPI power-off exits with status 1; the direct run has no power-off
# path, its emulator is stopped 2 s after the marker). Timings are not judged.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
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
printf '%s\n' 'loader  = \slat\vmlinuz' 'initrd  = \slat\initrd.img' \
	"cmdline = $cmdline" >"$out/slat.cfg"
export EMU_ESP_CYL=128
emu_esp "$out/slat.img" x86_64 "$top/build/x86_64/slat.efi" "$out/slat.cfg=slat.cfg" \
	"$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1
if [ "${DIRECT:-0}" = 1 ]; then
	printf '%s\r\n' "fs0:\\slat\\vmlinuz initrd=\\slat\\initrd.img $cmdline" >"$out/startup.nsh"
	# an ESP without BOOTX64.EFI: OVMF falls back to its shell, which runs startup.nsh
	emu_esp "$out/direct.img" x86_64 "$top/build/x86_64/slat.efi" "$out/startup.nsh=startup.nsh" \
		"$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1
	MTOOLS_SKIP_CHECK=1 mdel -i "$out/direct.img" ::/EFI/BOOT/BOOTX64.EFI
fi

# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"

bochs_run() { # MODE LOG: Bochs with the slat or direct ESP
	rm -f "$out/$1.img.lock"
	EMU_SMP=$cpus EMU_TIMEOUT=${BENCH_TIMEOUT:-900} emu_bochs batch "$2" "$out/$1.img" \
		corei7_skylake_x
}

# time_run MODE RUN: boots once, prints the JSON line. Without Slat's ACPI
# tables OVMF under Bochs gives Linux no power-off path: the direct run is
# stopped once the guest is done.
time_run() {
	local dir="$out/$1"

	mkdir -p "$dir"
	bench_boot_run "\"bench\":\"x86_vmx_boot\",\"cpus\":$cpus" "$1" "$2" "$dir/serial.log" \
		"$([ "$1" = direct ] && echo 1 || echo 0)" bochs_run "$1" "$dir/serial.log"
}

for ((i = 1; i <= runs; i++)); do
	time_run slat "$i"
	[ "${DIRECT:-0}" = 1 ] && time_run direct "$i"
done
