#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_x86_svm_qemu's run on Linux's own KVM (issue 34's reference): the Debian
# kernel, booted by QEMU itself (-cpu max: SVM with NPT, 2 GiB, no firmware,
# no Slat), loads kvm-amd and runs the same unmodified qemu-system-x86_64
# 7.2 with the same command lines as on Slat (tests/guest/qemu_slat.sh with
# slat.qemu_kvm=linux): -M pc,hpet=off with KVM's in-kernel irqchip, the
# monitor's info registers and system_reset (EMU_QEMU_MORE adds short runs
# on other machines, e.g. q35+pc,kernel-irqchip=split, as in
# t_x86_svm_qemu_q35; tests/boot/qemu_vmm.sh, qemu_expect_x86). One
# emulated CPU: with two, QEMU 7.2's emulated nested SVM hangs KVM's L2
# (issue 34). The VM finds kvm-clock there and never sets up the PIT: no
# IRQ 0 (qemu_expect_x86's kvmclock).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/qemu_vmm.sh"
make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the x86_64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/qemu-guest.sh" x86_64 || exit 1
BOOT_TIMEOUT=${BOOT_TIMEOUT:-2400}
EMU_MEM_MB=2048 EMU_SMP=1 boot_qemu_x86_kernel max \
	"console=ttyS0 panic=-1 quiet slat.test=qemu_slat slat.qemu_kvm=linux $QEMU_X86_MACHINES" \
	"$BOOT_TOP/build/guest/x86_64/initrd-qemu.img"
qemu_expect_x86 "^SLAT-GUEST: /dev/kvm from Linux's KVM" kvmclock
expect_exit
boot_done
