#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# slat-vmm (linux/vmm/) on Linux's own KVM: the Debian kernel, booted by QEMU
# itself (-cpu max: SVM with NPT, 2 CPUs, 2 GiB, no firmware, no Slat), loads
# kvm-amd and runs slat-vmm, which boots the same kernel as a 2-vCPU VM with
# a busybox initramfs (initrd-vmm.img, tools/vmm-initrd.sh). Expected: the
# VM's kernel banner on the VMM's UART, both vCPUs online (ACPI MADT, INIT and
# STARTUP through the in-kernel LAPIC), a clean ACPI power-off (status 0),
# a guest reboot in a second, 1-vCPU run (status 3), then slat-vmm's
# refusals of bad arguments (status 2 each). The VM runs under nested SVM
# emulated by TCG (about 10 s to its power-off).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/vmm_expect.sh"
make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the x86_64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/vmm-initrd.sh" || exit 1
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_x86_kernel max \
	"console=ttyS0 panic=-1 quiet slat.test=vmm_ref" "$BOOT_TOP/build/guest/x86_64/initrd-vmm.img"
vmm_arch x86_64
expect_in_order '^SLAT-GUEST: vmm_ref on x86_64' \
	'^SLAT-GUEST: vm1: slat-vmm: [^ ]+ \(boot protocol 2\.[0-9]+\), 256 MiB, 2 vCPUs' \
	'^SLAT-GUEST: vm1: .*Linux version [0-9]' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: VMM-GUEST: NMI backtraces from CPUs 0 1; [1-9][0-9]* NMIs$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: [1-9][0-9]* reads \([0-9]+ KiB\), [1-9][0-9]* writes \([0-9]+ KiB\), [1-9][0-9]* flushes, 0 errors$' \
	'^SLAT-GUEST: vm1: vmm exit 0 after [0-9]+\.[0-9] s$' \
	'^SLAT-GUEST: vm2: slat-vmm: console: virtio-mmio at 0xd0000200, GSI 17 \(hvc0\)$' \
	'^SLAT-GUEST: vm: slat-vmm: [^ ]+ \(boot protocol 2\.[0-9]+\), 128 MiB, 1 vCPU,' \
	'^SLAT-GUEST: vm: VMM-GUEST: up, 1 CPUs online \(0\)' \
	'^SLAT-GUEST: vm: VMM-GUEST: rebooting' \
	'^SLAT-GUEST: vm: slat-vmm: guest reset \(i8042 0xfe\), exit 3$' \
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
