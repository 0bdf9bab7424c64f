#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GICv2 reference (issue 18): t_arm64_vmm_reference's run on a GICv2
# machine (QEMU virt gic-version=2, virtualization=on: GICH/GICV for KVM's
# vgic-v2), where slat-vmm's --gic auto finds no vGICv3 in Linux's own KVM
# and gives the VM a GICv2, as t_arm64_primary_gicv2 does on Slat. Expected:
# the GICv2 chosen, the VM's vCPUs, timer, disk and shell, a clean power-off.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/vmm_expect.sh"
make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the aarch64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/vmm-initrd.sh" aarch64 || exit 1
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
EMU_ARM64_MACHINE=virt,virtualization=on,gic-version=2 EMU_MEM_MB=2048 EMU_SMP=2 \
	boot_qemu_arm64_kernel cortex-a72 \
	"console=ttyAMA0 panic=-1 quiet slat.test=vmm_ref" "$BOOT_TOP/build/guest/aarch64/initrd-vmm.img"
vmm_arch aarch64
expect_in_order '^SLAT-GUEST: vmm_ref on aarch64' \
	'^SLAT-GUEST: vm1: slat-vmm: GICv2: distributor 0x8000000, CPU interface 0x8010000 \(--gic auto: the KVM has no vGICv3\)$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vm1: vmm exit 0 after [0-9]+\.[0-9] s$' \
	'^SLAT-GUEST: MARKER vmm_ref-done'
vmm_expect_end vm1
vmm_expect_hvc vm2
expect_absent 'bad-arg WRONG' 'Kernel panic' 'BUG' 'Oops' 'slat-vmm: vcpu [0-9]' 'MISMATCH' \
	'virtio-blk: guest error' 'virtio-console: guest error'
expect_exit
boot_done
