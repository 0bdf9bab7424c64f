#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Linux secondary VM (issue 18): slat-vmm (linux/vmm/) on Slat's /dev/kvm,
# AMD SVM (QEMU -cpu max, 2 CPUs, 2 GiB, OVMF + slat.efi): the primary's
# Linux loads slat.ko and slat-vmm boots the same Debian kernel as a 2-vCPU
# secondary with a busybox initramfs (tests/guest/vmm_slat.sh), as
# t_x86_vmm_reference does on Linux's own KVM: the VM's kernel banner, the
# TSC-deadline timer, both vCPUs online (INIT/STARTUP through slat.ko's
# LAPIC), a clean ACPI power-off; then Slat's summary accounts every page
# (the VM destroyed, every deposited page withdrawn). Slat's KVM has no
# kvmclock: the VM gets its TSC frequency and delay loop on the command line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/vmm_expect.sh"
g="$BOOT_TOP/build/guest/x86_64"
make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
	cat "$BOOT_DIR/guest.out" >&2
	echo "boot: building the x86_64 guest failed" >&2
	exit 1
}
bash "$BOOT_TOP/tools/vmm-initrd.sh" || exit 1
cfg="$BOOT_DIR/slat.cfg"
{
	echo '# written by tests/boot/t_x86_svm_linux_secondary.sh'
	echo 'loader  = \slat\vmlinuz'
	echo 'initrd  = \slat\initrd.img'
	echo 'cmdline = console=ttyS0 panic=-1 quiet slat.test=vmm_slat'
} >"$cfg"
EMU_ESP_CYL=128 # the kernel and the 20 MiB initramfs need a 63 MiB ESP
boot_esp x86_64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-vmm.img=slat/initrd.img"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_x86 max
vmm_arch x86_64
expect_in_order '^SLAT-GUEST: vmm_slat on x86_64' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: 8192 sectors \(4096 KiB\), virtio-mmio at 0xd0000000, GSI 16$' \
	'^SLAT-GUEST: vm1: slat-vmm: [^ ]+ \(boot protocol 2\.[0-9]+\), 256 MiB, 2 vCPUs' \
	'^SLAT-GUEST: vm1: .*Linux version [0-9]' \
	'^SLAT-GUEST: vm1: .*TSC deadline timer available' \
	'^SLAT-GUEST: vm1: .*smp: Brought up 1 node, 2 CPUs' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: VMM-GUEST: NMI backtraces from CPUs 0 1; [1-9][0-9]* NMIs$' \
	'^SLAT-GUEST: vm1: .*virtio_blk virtio0: \[vda\] 8192 512-byte logical blocks' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$' \
	'^SLAT-GUEST: vm1: VMM-GUEST: shell ready' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vm1: slat-vmm: disk /tmp/disk1\.img: [1-9][0-9]* reads \([0-9]+ KiB\), [1-9][0-9]* writes \([0-9]+ KiB\), [1-9][0-9]* flushes, 0 errors$' \
	'^SLAT-GUEST: vm1: vmm exit 0 after [0-9]+\.[0-9] s$' \
	'^SLAT-GUEST: vm2: slat-vmm: console: virtio-mmio at 0xd0000200, GSI 17 \(hvc0\)$' \
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
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86|hv):' 'host exception' \
	'slat-vmm: vcpu [0-9]' 'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'bad-arg WRONG' \
	'virtio-blk: guest error' 'virtio-console: guest error' 'insmod .* failed' 'VMM-GUEST: no disk' 'unchecked MSR access'
expect_exit
boot_done
