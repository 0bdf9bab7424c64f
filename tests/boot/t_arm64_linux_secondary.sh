#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Linux secondary VM on arm64 (issue 18): slat-vmm (linux/vmm/) on Slat's
# /dev/kvm (QEMU virt at EL2 with GICv3, -cpu cortex-a72, 2 CPUs, 2 GiB,
# edk2 + slat.efi). The primary's Linux loads slat.ko and slat-vmm boots
# the same Debian kernel as a 2-vCPU secondary with a device tree, the
# in-kernel GICv3 (slat.ko's distributor and redistributors, Slat's list
# registers) and a busybox initramfs (tests/guest/vmm_slat.sh), as
# t_arm64_vmm_reference does on Linux's own KVM: the VM's kernel banner, its
# arch timer, both vCPUs online (PSCI CPU_ON), the disk, the shell on the
# console, a clean PSCI power-off; twice, then two VMs at once; then Slat's
# summary accounts every page.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/vmm_expect.sh"
g="$BOOT_TOP/build/guest/aarch64"
make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the arm64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/vmm-initrd.sh" aarch64 || exit 1
cfg="$BOOT_DIR/slat.cfg"
{
	echo '# written by tests/boot/t_arm64_linux_secondary.sh'
	echo 'loader  = \slat\vmlinuz'
	echo 'initrd  = \slat\initrd.img'
	echo 'cmdline = console=ttyAMA0 panic=-1 quiet slat.test=vmm_slat'
} >"$cfg"
EMU_ESP_CYL=128 # the kernel and the initramfs need a 63 MiB ESP
boot_esp aarch64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-vmm.img=slat/initrd.img"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64 cortex-a72
vmm_arch aarch64
expect_in_order '^SLAT-GUEST: vmm_slat on aarch64' \
	"^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE," \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: 8192 sectors \(4096 KiB\), virtio-mmio at 0xa000000, SPI INTID 48$' \
	'^SLAT-GUEST: vm1: slat-vmm: [^ ]+ \(arm64 Image\), 256 MiB, 2 vCPUs' \
	'^SLAT-GUEST: vm1: slat-vmm: device tree [0-9]+ bytes at 0x' \
	'^SLAT-GUEST: vm1: .*Linux version [0-9]' \
	'^SLAT-GUEST: vm1: .*GICv3: 64 SPIs implemented' \
	'^SLAT-GUEST: vm1: .*GICv3: CPU0: found redistributor 0 region 0:0x0*80a0000$' \
	'^SLAT-GUEST: vm1: .*arch_timer: cp15 timer\(s\) running at' \
	'^SLAT-GUEST: vm1: .*GICv3: CPU1: found redistributor 1 region 0:0x0*80c0000$' \
	'^SLAT-GUEST: vm1: .*smp: Brought up 1 node, 2 CPUs' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: .*virtio_blk virtio0: \[vda\] 8192 512-byte logical blocks' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: shell ready' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: [1-9][0-9]* reads \([0-9]+ KiB\), [1-9][0-9]* writes \([0-9]+ KiB\), [1-9][0-9]* flushes, 0 errors$' \
	'^SLAT-GUEST: vm1: vmm exit 0 after [0-9]+\.[0-9] s$' \
	'^SLAT-GUEST: vm2: slat-vmm: console: virtio-mmio at 0xa000200, SPI INTID 49 \(hvc0\)$' \
	'^SLAT-GUEST: vmm bad-arg ok: exit 2: slat-vmm: error: --disk /tmp/disk3\.img: in use by another VM' \
	'^SLAT-GUEST: vmm bad-arg ok: exit 2: slat-vmm: error: --kernel /vm/missing: No such file' \
	'^SLAT-GUEST: MARKER vmm_slat-done' \
	'^slat: secondary VMs: 4 created, 4 destroyed, 0 alive' \
	'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
vmm_expect_end vm1
vmm_expect_hvc vm2
vmm_expect_pair vm3 vm4
vmm_expect_bad_args
expect_count 3 '^SLAT-GUEST: vm[134]: VMM-SHELL: 42 from the console of a VM with 2 CPUs$'
expect_count 17 '^SLAT-GUEST: vmm bad-arg ok: exit 2: '
expect_count 4 '^SLAT-GUEST: vm[1-4]: vmm exit 0 after'
expect_absent 'Synchronous Exception' '^error: (slat|arm64|hv):' 'exception at EL2' \
	'slat-vmm: vcpu [0-9]' 'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'bad-arg WRONG' \
	'virtio-blk: guest error' 'virtio-console: guest error' 'insmod .* failed' 'VMM-GUEST: no disk' 'failed to come online' \
	'rcu_sched detected stalls' 'Unknown SGI' 'spurious' 'WARNING:'
expect_exit
boot_done
