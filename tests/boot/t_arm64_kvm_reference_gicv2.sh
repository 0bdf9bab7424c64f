#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_arm64_kvm_reference on a GICv2 machine (QEMU virt gic-version=2,
# virtualization=on): slat-kvm-check's GICv2 section (KVM_DEV_TYPE_ARM_VGIC_V2:
# its attributes and refusals, SGI / SPI / virtual-timer delivery through the
# memory-mapped CPU interface, an SGI's source CPU in GICC_IAR, the
# save/restore groups GRP_DIST_REGS / GRP_CPU_REGS) on Linux's own KVM
# (vgic-v2), as t_arm64_primary_gicv2 runs it on Slat.
. "$(dirname "$0")/lib.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
EMU_ARM64_MACHINE=virt,virtualization=on,gic-version=2 EMU_MEM_MB=1024 EMU_SMP=2 \
	boot_qemu_arm64_kernel cortex-a72 "console=ttyAMA0 panic=-1 quiet slat.test=kvm_ref"
expect_in_order '^SLAT-GUEST: kvm_ref on aarch64' \
	"^SLAT-GUEST: /dev/kvm from Linux's KVM: crw" \
	'^SLAT-GUEST: kvmcheck: reference mode: Linux.s KVM' \
	'^SLAT-GUEST: kvmcheck: vgic: no GICv3 here: the GICv2 checks' \
	'^SLAT-GUEST: kvmcheck: vgic2: a ninth vCPU: ok' \
	'^SLAT-GUEST: kvmcheck: vgic2: third GICC_IAR: PPI 27 \(the virtual timer\): ok' \
	'^SLAT-GUEST: kvmcheck: vgic2: \.\.\. GICC_IAR 0x405: SGI 5 from CPU 1: ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: GICD_TYPER 0x22 \(96 IRQs, 2 CPU interfaces: QEMU checks both\): ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: the guest.s GICC_PMR 0xf0: ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: \.\.\. 0x15 \(0xa8 >> 3\): ok' \
	'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
	'^SLAT-GUEST: slat-kvm-check exit 0$' \
	'^SLAT-GUEST: MARKER kvm_ref-done'
expect_absent 'FAIL' 'Kernel panic' 'BUG' 'Oops'
expect_exit
boot_done
