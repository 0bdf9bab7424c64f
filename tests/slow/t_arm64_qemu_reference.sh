#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_arm64_qemu's run on Linux's own arm64 KVM (issue 34's reference): the
# Debian arm64 kernel, booted by QEMU itself at EL2 (virt, virtualization=on,
# GICv3, cortex-a72, 2 CPUs, 2 GiB, no firmware, no Slat), where its built-in
# KVM initializes, runs the same unmodified qemu-system-aarch64 7.2 with the
# same command line as on Slat (tests/guest/qemu_slat.sh with
# slat.qemu_kvm=linux): the VM's boot, its two vCPUs, timer, disk and shell,
# the monitor's info registers and system_reset, and a power-off that ends
# QEMU with status 0 (tests/boot/qemu_vmm.sh, qemu_expect_arm64). KVM 6.1
# answers PSCI 1.1 where slat.ko answers 1.0.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/qemu_vmm.sh"
make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the aarch64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/qemu-guest.sh" aarch64 || exit 1
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1800}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64_kernel cortex-a72 \
	"console=ttyAMA0 panic=-1 quiet slat.test=qemu_slat slat.qemu_kvm=linux" \
	"$BOOT_TOP/build/guest/aarch64/initrd-qemu.img"
qemu_expect_arm64 "^SLAT-GUEST: /dev/kvm from Linux's KVM" \
	'^SLAT-GUEST: qemu: .*psci: PSCIv1\.1 detected in firmware' \
	'^SLAT-GUEST: qemu: .*GICv3: CPU0: found redistributor 0 region 0:0x0*80a0000$'
expect_exit
boot_done
