#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# slat-vmm (linux/vmm/) on Linux's own arm64 KVM: the Debian arm64 kernel,
# booted by QEMU itself at EL2 (virt, virtualization=on, GICv3, cortex-a72,
# 2 CPUs, 2 GiB, no firmware, no Slat), where its built-in KVM initializes
# (nVHE), runs slat-vmm, which boots the same kernel's Image as a 2-vCPU VM
# with a device tree (vGICv3, PSCI, ns16550a, virtio-mmio disk) and a busybox
# initramfs (initrd-vmm.img, tools/vmm-initrd.sh aarch64). Expected: the VM's
# banner on the VMM's UART, both vCPUs online (PSCI CPU_ON), its architected
# timer's interrupts counted, the disk's checksum and write-back, a shell
# answering on the console, a clean PSCI SYSTEM_OFF (status 0), a reboot in
# a 1-vCPU run (PSCI SYSTEM_RESET, status 3), then slat-vmm's refusals of bad
# arguments (status 2 each). The VM runs under KVM at EL2 emulated by TCG.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/vmm_expect.sh"
make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the aarch64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/vmm-initrd.sh" aarch64 || exit 1
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64_kernel cortex-a72 \
	"console=ttyAMA0 panic=-1 quiet slat.test=vmm_ref" "$BOOT_TOP/build/guest/aarch64/initrd-vmm.img"
vmm_arch aarch64
expect_in_order '^SLAT-GUEST: vmm_ref on aarch64' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: 8192 sectors \(4096 KiB\), virtio-mmio at 0xa000000, SPI INTID 48$' \
	'^SLAT-GUEST: vm1: slat-vmm: [^ ]+ \(arm64 Image\), 256 MiB, 2 vCPUs' \
	'^SLAT-GUEST: vm1: slat-vmm: device tree [0-9]+ bytes at 0x' \
	'^SLAT-GUEST: vm1: .*Linux version [0-9]' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: [1-9][0-9]* reads \([0-9]+ KiB\), [1-9][0-9]* writes \([0-9]+ KiB\), [1-9][0-9]* flushes, 0 errors$' \
	'^SLAT-GUEST: vm1: vmm exit 0 after [0-9]+\.[0-9] s$' \
	'^SLAT-GUEST: vm2: slat-vmm: console: virtio-mmio at 0xa000200, SPI INTID 49 \(hvc0\)$' \
	'^SLAT-GUEST: vm: slat-vmm: [^ ]+ \(arm64 Image\), 128 MiB, 1 vCPU,' \
	'^SLAT-GUEST: vm: VMM-GUEST: up, 1 CPUs online \(0\)' \
	'^SLAT-GUEST: vm: VMM-GUEST: rebooting' \
	'^SLAT-GUEST: vm: slat-vmm: guest reset \(PSCI SYSTEM_RESET\), exit 3$' \
	'^SLAT-GUEST: vmm reboot-run exit 3$' \
	'^SLAT-GUEST: MARKER vmm_ref-done'
vmm_expect_end vm1
vmm_expect_hvc vm2
vmm_expect_bad_args
expect_count 16 '^SLAT-GUEST: vmm bad-arg ok: exit 2: '
expect_absent 'bad-arg WRONG' 'Kernel panic' 'BUG' 'Oops' 'slat-vmm: vcpu [0-9]' 'MISMATCH' \
	'virtio-blk: guest error' 'virtio-console: guest error'
expect_exit
boot_done
