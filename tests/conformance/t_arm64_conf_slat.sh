#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance run's Slat side, arm64 (tools/kvm-conformance.sh): the
# primary's Linux on Slat (QEMU -cpu cortex-a72, 2 CPUs, 2 GiB, as
# t_arm64_kvm) loads slat.ko and runs every KVM selftest in /kvm-all/
# (tests/guest/kvm_conf.sh). Passes when the run reached its end; the
# verdicts per test are the table's (tools/kvm_conformance.py).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/arm64_primary.sh"
: "${KVM_CONF_LIMIT:=180}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-$((KVM_CONF_LIMIT * 25 + 300))}
# The test name carries the guest's options onto the kernel command line.
opts="slat.conf_limit=$KVM_CONF_LIMIT${KVM_CONF_ONLY:+ slat.conf_only=$KVM_CONF_ONLY}"
ARM64_INITRD=initrd-conf.img EMU_MEM_MB=2048 arm64_primary_boot cortex-a72 "kvm_conf $opts"
expect_in_order '^SLAT-GUEST: kvm_conf on aarch64' '^SLAT-GUEST: conf: /dev/kvm crw' \
	'^SLAT-GUEST: conf: rmmod slat status 0$' '^SLAT-GUEST: MARKER kvm_conf-done'
expect_absent 'Kernel panic' 'Synchronous Exception' '^error: (slat|arm64):' 'exception at EL2' \
	'^SLAT-GUEST: dmesg: .*(leak|never deposited|BUG|WARNING|Oops)'
boot_done
