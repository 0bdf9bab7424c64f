#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slat-vmm on Linux's own KVM (slat.test=vmm_ref, tests/slow/t_x86_vmm_reference.sh,
# tests/slow/t_arm64_vmm_reference.sh): this kernel, booted by QEMU without
# firmware or Slat (x86: on an SVM CPU, loading kvm-amd; arm64: at EL2, KVM
# built in) readies Linux's KVM (linux_kvm.sh) and runs /slat/slat-vmm on the same Debian kernel
# (/vm/vmlinuz) with a tiny busybox initramfs (/vm/initrd.img), both from
# initrd-vmm.img (tools/vmm-initrd.sh), as vmm_slat.sh does on Slat, with
# the disk and shell checks of vmm_lib.sh; then a reboot, then slat-vmm's
# refusals of bad arguments (status 2).
. /tests/vmm_lib.sh
echo "SLAT-GUEST: vmm_ref on $(uname -m), kernel $(uname -r)"
if ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER vmm_ref-refused"
	exit 1
fi
if [ ! -f /vm/vmlinuz ] || [ ! -f /vm/initrd.img ]; then
	echo "SLAT-GUEST: no /vm/vmlinuz or /vm/initrd.img (boot initrd-vmm.img: tools/vmm-initrd.sh)"
	exit 1
fi
# The VM of vmm_slat.sh's first run (vmm_lib.sh): 2 vCPUs, a disk, a shell
# typed at on its console. Few kernel messages (loglevel 6 still shows its
# banner); reboot at once on a panic.
vm_run vm1 2 /tmp/disk1.img shell "loglevel=6 vmm.nmi"
# The same with slat-vmm's virtio console (--console virtio): the shell on
# the VM's /dev/hvc0, typed at through slat-vmm's stdin.
vm_run vm2 2 /tmp/disk2.img hvc "loglevel=4"

# A guest reboot ends slat-vmm with status 3 (x86: Linux, hardware-reduced
# and without EFI, jumps to the real-mode reset vector, where slat-vmm's stub
# writes 0xfe to the i8042's port 0x64; arm64: PSCI SYSTEM_RESET); one vCPU
# this time, no disk.
{
	timeout -s KILL 2400 $VMM --kernel /vm/vmlinuz --initrd /vm/initrd.img --mem 128M --cpus 1 \
		--cmdline "console=ttyS0 loglevel=4 panic=-1 vmm.reboot" </dev/null 2>&1
	echo $? >/tmp/vmm.rc
} | sed 's/^/SLAT-GUEST: vm: /'
echo "SLAT-GUEST: vmm reboot-run exit $(cat /tmp/vmm.rc)"
vm_bad_args
echo "SLAT-GUEST: MARKER vmm_ref-done"
