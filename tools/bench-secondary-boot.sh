#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-secondary-boot.sh [RUNS] - issue 18's benchmark: how long
# slat-vmm (docs/vmm.md) takes to boot Debian's kernel as a 2-vCPU VM to its
# ACPI power-off, as a Slat secondary (tests/boot/t_x86_svm_linux_secondary.sh:
# Slat on QEMU -cpu max, the VM on slat.ko's /dev/kvm) and on Linux's own KVM
# in the same emulator (tests/slow/t_x86_vmm_reference.sh: the same kernel
# booted by QEMU, kvm-amd on the emulated SVM), RUNS times each, alternating.
# The time is the primary's /proc/uptime around slat-vmm (the VM's whole life:
# loading, boot, power-off). One JSON line per run on stdout:
#   {"bench":"secondary_boot","system":"slat"|"kvm","run":N,"boot_s":S,"exit":RC}
# (boot_s null unless the VM powered off cleanly: slat-vmm's status 0). Exit
# status 1 if a run failed (its test's verdict).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
status=0

# run_one SYSTEM TEST_SCRIPT LOG RUN: one boot; the first clean "vmm exit 0" line.
run_one() {
	local system=$1 script=$2 log=$3 i=$4 rc line secs
	bash "$top/$script" >&2
	rc=$?
	line=$(tr -d '\r' <"$log" 2>/dev/null | grep -a -m1 '^SLAT-GUEST: vm1: vmm exit 0 after [0-9.]* s$' || true)
	secs=$(sed -n 's/.* after \([0-9.]*\) s$/\1/p' <<<"$line")
	[ "$rc" -eq 0 ] || status=1
	printf '{"bench":"secondary_boot","system":"%s","run":%d,"boot_s":%s,"exit":%d}\n' \
		"$system" "$i" "${secs:-null}" "$rc"
}

for i in $(seq 1 "$runs"); do
	run_one slat tests/boot/t_x86_svm_linux_secondary.sh \
		"$top/build/test/boot/t_x86_svm_linux_secondary/serial.log" "$i"
	run_one kvm tests/slow/t_x86_vmm_reference.sh \
		"$top/build/test/boot/t_x86_vmm_reference/serial.log" "$i"
done
exit "$status"
