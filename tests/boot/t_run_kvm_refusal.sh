#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make run ACCEL=kvm` refuses, before installing or building anything, with
# the reason: /dev/kvm missing, no vmx/svm in the host CPU flags, nested
# virtualization off, or a host of another architecture; on a host that can,
# tools/emu.sh kvm-check picks VT-x (Intel) or SVM (AMD). This machine has no
# /dev/kvm, so the real refusal runs here; the other cases run against fake
# /dev/kvm, sysfs and cpuinfo files (EMU_KVM_DEV, EMU_SYSFS, EMU_CPUINFO), and
# with every check passing a stand-in qemu-system-x86_64 records the command
# line (-accel kvm -cpu host). A nested boot cannot run here and is not
# tested. Without ACCEL, `make run` stays on TCG.
. "$(dirname "$0")/lib.sh"
fake="$BOOT_DIR/fake"
rm -rf "$fake" "$BOOT_LOG"
mkdir -p "$fake/sys/module/kvm_intel/parameters" "$fake/sys/module/kvm_amd/parameters"
: >"$fake/kvm" # stands for /dev/kvm (read/write for us)

# kvm_case NAME CPU_FLAGS DEV INTEL_NESTED AMD_NESTED COMMAND...: one line in the log.
kvm_case() {
	local name=$1 flags=$2 dev=$3 out rc
	printf 'flags\t\t: fpu %s sse2\n' "$flags" >"$fake/cpuinfo"
	printf '%s\n' "$4" >"$fake/sys/module/kvm_intel/parameters/nested"
	printf '%s\n' "$5" >"$fake/sys/module/kvm_amd/parameters/nested"
	shift 5
	out=$(EMU_KVM_DEV=$dev EMU_SYSFS="$fake/sys" EMU_CPUINFO="$fake/cpuinfo" \
		EMU_HOST_ARCH=x86_64 "$@" 2>&1)
	rc=$?
	echo "case $name rc=$rc: $(echo "$out" | tr '\n' ' ')" | tee -a "$BOOT_LOG"
}

{
	echo "boot: make run ACCEL=kvm on this host:"
	if [ -e /dev/kvm ]; then
		echo "host has /dev/kvm: the real refusal is not exercised"
	else
		out=$(make -s -C "$BOOT_TOP" run ACCEL=kvm ARCH=x86_64 2>&1)
		echo "case real rc=$?: $(echo "$out" | tr '\n' ' ')"
	fi
} | tee -a "$BOOT_LOG"
make_run=(make -s -C "$BOOT_TOP" run ACCEL=kvm ARCH=x86_64)
kvm_case no-dev vmx "$fake/none" Y 1 "${make_run[@]}"
kvm_case no-flags "" "$fake/kvm" Y 1 "${make_run[@]}"
kvm_case intel-nested-off vmx "$fake/kvm" N 1 "${make_run[@]}"
kvm_case amd-nested-off svm "$fake/kvm" Y 0 "${make_run[@]}"
kvm_case arm64-host vmx "$fake/kvm" Y 1 make -s -C "$BOOT_TOP" run ACCEL=kvm ARCH=aarch64
kvm_case bad-accel vmx "$fake/kvm" Y 1 make -s -C "$BOOT_TOP" run ACCEL=hvf ARCH=x86_64
kvm_case pick-intel vmx "$fake/kvm" Y 0 bash "$BOOT_TOP/tools/emu.sh" kvm-check x86_64
kvm_case pick-amd svm "$fake/kvm" N 1 bash "$BOOT_TOP/tools/emu.sh" kvm-check x86_64
# With every check passing, the QEMU command line (a stand-in qemu records it):
mkdir -p "$fake/bin"
printf '#!/bin/sh\necho "qemu-args: $*"\n' >"$fake/bin/qemu-system-x86_64"
chmod +x "$fake/bin/qemu-system-x86_64"
make -s -C "$BOOT_TOP" build/x86_64/slat.efi >/dev/null 2>&1
kvm_case qemu-cmdline vmx "$fake/kvm" Y 1 env PATH="$fake/bin:$PATH" EMU_ACCEL=kvm \
	bash "$BOOT_TOP/tools/emu.sh" run x86_64 amd
kvm_case default-tcg vmx "$fake/kvm" Y 1 bash -c \
	"make -n -s -C '$BOOT_TOP' run ARCH=x86_64 | grep -A1 'tools/emu.sh run'"

if [ ! -e /dev/kvm ]; then
	expect '^case real rc=2: .*ACCEL=kvm: /dev/kvm does not exist, KVM is not available on this host'
	expect_absent '^emu: booting'
fi
expect '^case no-dev rc=2: .*/none does not exist, KVM is not available .*modprobe kvm_intel' \
	'^case no-flags rc=2: .*the host CPU flags .* show neither vmx nor svm' \
	"^case intel-nested-off rc=2: .*nested virtualization is off \\(.*/kvm_intel/parameters/nested is 'N'\\).*no VMX" \
	"^case amd-nested-off rc=2: .*nested virtualization is off \\(.*/kvm_amd/parameters/nested is '0'\\).*no SVM" \
	'^case arm64-host rc=2: .*x86_64 image on an x86_64 host only \(host x86_64, ARCH=aarch64\)' \
	'^case bad-accel rc=2: .*ACCEL=hvf: use tcg \(the default\) or kvm' \
	'^case pick-intel rc=0: intel $' \
	'^case pick-amd rc=0: amd $' \
	'^case default-tcg rc=0: .*EMU_ACCEL=tcg bash tools/emu.sh run x86_64' \
	'^case qemu-cmdline rc=0: emu: ACCEL=kvm on an Intel host: Slat takes its VT-x path .*qemu-args: -accel kvm -cpu host '
expect_absent '^case default-tcg.*kvm'
boot_done
