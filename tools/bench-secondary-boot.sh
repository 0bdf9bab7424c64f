#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-secondary-boot.sh [RUNS] [ARCHES] - issue 18's benchmark: how
# long slat-vmm (docs/vmm.md) takes to boot Debian's kernel as a 2-vCPU VM to
# its power-off, as a Slat secondary and on Linux's own KVM in the same
# emulator, RUNS times each, alternating, for each of ARCHES (default
# "x86_64 aarch64"):
#   x86_64   slat: tests/boot/t_x86_svm_linux_secondary.sh (Slat on QEMU
#            -cpu max, the VM on slat.ko's /dev/kvm); kvm:
#            tests/slow/t_x86_vmm_reference.sh (the same kernel booted by
#            QEMU, kvm-amd on the emulated SVM)
#   aarch64  slat: tests/boot/t_arm64_linux_secondary.sh (Slat on QEMU virt
#            at EL2, cortex-a72, GICv3); kvm: tests/slow/t_arm64_vmm_reference.sh
#            (the same kernel booted by QEMU at EL2: Linux's KVM, nVHE)
# The time is the primary's /proc/uptime around slat-vmm (the VM's whole life:
# loading, boot, power-off). One JSON line per run on stdout:
#   {"bench":"secondary_boot","arch":A,"system":"slat"|"kvm","run":N,"boot_s":S,"exit":RC}
# (boot_s null unless the VM powered off cleanly: slat-vmm's status 0). Exit
# status 1 if a run failed (its test's verdict).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
arches=${2:-x86_64 aarch64}
status=0

# run_one ARCH SYSTEM TEST_SCRIPT RUN: one boot; the first clean "vmm exit 0" line.
run_one() {
	local arch=$1 system=$2 script=$3 i=$4 rc line secs log
	log="$top/build/test/boot/$(basename "${script%.sh}")/serial.log"
	bash "$top/$script" >&2
	rc=$?
	line=$(tr -d '\r' <"$log" 2>/dev/null | grep -a -m1 '^SLAT-GUEST: vm1: vmm exit 0 after [0-9.]* s$' || true)
	secs=$(sed -n 's/.* after \([0-9.]*\) s$/\1/p' <<<"$line")
	[ "$rc" -eq 0 ] || status=1
	printf '{"bench":"secondary_boot","arch":"%s","system":"%s","run":%d,"boot_s":%s,"exit":%d}\n' \
		"$arch" "$system" "$i" "${secs:-null}" "$rc"
}

for arch in $arches; do
	case "$arch" in
	x86_64) slat=tests/boot/t_x86_svm_linux_secondary.sh kvm=tests/slow/t_x86_vmm_reference.sh ;;
	aarch64) slat=tests/boot/t_arm64_linux_secondary.sh kvm=tests/slow/t_arm64_vmm_reference.sh ;;
	*)
		echo "bench-secondary-boot: unknown architecture '$arch'" >&2
		exit 2
		;;
	esac
	for i in $(seq 1 "$runs"); do
		run_one "$arch" slat "$slat" "$i"
		run_one "$arch" kvm "$kvm" "$i"
	done
done
exit "$status"
