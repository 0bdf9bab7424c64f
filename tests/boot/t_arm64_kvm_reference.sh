#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The other side of the arm64 KVM API tests: slat-kvm-check, whose checks of
# KVM's documented behaviour pass on slat.ko (t_arm64_kvm), must pass on
# Linux's own KVM too, so that a check encodes KVM's semantics and not only
# Slat's. The same Debian arm64 kernel and initramfs, booted by QEMU itself
# at EL2 (virt, virtualization=on, GICv3, cortex-a72, 2 CPUs, no firmware, no
# Slat), where its built-in KVM initializes, run it in its reference mode,
# which leaves out the checks of Slat's own choices (docs/kvm-api.md): among
# the rest, the in-kernel GICv3 (KVM_DEV_TYPE_ARM_VGIC_V3) with SGI, SPI and
# virtual-timer delivery.
. "$(dirname "$0")/lib.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
EMU_MEM_MB=1024 EMU_SMP=2 boot_qemu_arm64_kernel cortex-a72 \
	"console=ttyAMA0 panic=-1 quiet slat.test=kvm_ref"
expect_in_order '^SLAT-GUEST: kvm_ref on aarch64' \
	"^SLAT-GUEST: /dev/kvm from Linux's KVM: crw" \
	'^SLAT-GUEST: kvmcheck: reference mode: Linux.s KVM' \
	'^SLAT-GUEST: kvmcheck: vgic: third INTID: PPI 27 \(the virtual timer\): ok' \
	'^SLAT-GUEST: kvmcheck: vgic: \.\.\. SGI 5: ok' \
	'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
	'^SLAT-GUEST: slat-kvm-check exit 0$' \
	'^SLAT-GUEST: MARKER kvm_ref-done'
expect_absent 'FAIL' 'Kernel panic' 'BUG' 'Oops'
expect_exit
boot_done
