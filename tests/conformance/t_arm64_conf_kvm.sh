#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance run's reference side, arm64 (tools/kvm-conformance.sh):
# the same kernel and initramfs booted by QEMU itself at EL2 (virt, GICv3,
# cortex-a72, 2 CPUs, 2 GiB, no firmware, no Slat), where Linux's built-in
# KVM initializes, runs the same selftests (tests/guest/kvm_conf_ref.sh).
. "$(dirname "$0")/../boot/lib.sh"
: "${KVM_CONF_LIMIT:=180}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-$((KVM_CONF_LIMIT * 25 + 300))}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64_kernel cortex-a72 \
	"console=ttyAMA0 panic=-1 quiet slat.test=kvm_conf_ref slat.conf_limit=$KVM_CONF_LIMIT${KVM_CONF_ONLY:+ slat.conf_only=$KVM_CONF_ONLY}" \
	"$BOOT_TOP/build/guest/aarch64/initrd-conf.img"
expect_in_order '^SLAT-GUEST: kvm_conf on aarch64' '^SLAT-GUEST: conf: /dev/kvm crw' \
	'^SLAT-GUEST: MARKER kvm_conf-done'
expect_absent 'Kernel panic' 'BUG' 'Oops'
boot_done
