#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# /vm/run-vm.sh [slat-vmm options]: boots the VM of this initramfs (/vm/vmlinuz,
# /vm/initrd.img: tools/vmm-initrd.sh) with /slat/slat-vmm, its console on
# this terminal and, unless VM_SHELL=0, a shell in it (type `poweroff -f` to
# end it). On Slat it loads slat.ko first when /dev/kvm is missing, and on
# x86 tells the VM its TSC rate and delay loop (Slat's KVM has no kvmclock:
# the values this kernel measured, from its dmesg; arm64 needs none, its
# timer's frequency is architected). VM_APPEND adds to the VM's command
# line. Options go to slat-vmm (docs/vmm.md), e.g. --cpus 2 --disk FILE;
# with --console virtio the VM's shell is on /dev/hvc0 (slat-vmm's virtio
# console: vmm.console=hvc0 tells the VM's init), the kernel's messages stay
# on the UART.
# Examples (make run ARCH=x86_64):
#   /vm/run-vm.sh --cpus 2
#   dd if=/dev/zero of=/tmp/d.img bs=1M count=16; /vm/run-vm.sh --disk /tmp/d.img
if [ ! -e /dev/kvm ] && ! insmod /lib/modules/slat.ko; then
	echo "run-vm: no /dev/kvm, and slat.ko did not load" >&2
	exit 2
fi
cmdline="console=ttyS0 panic=-1"
# arm64: the 8250 at 0x9000000 (slat-vmm's device tree) from the first line.
[ "$(uname -m)" = aarch64 ] && cmdline="$cmdline earlycon=uart8250,mmio,0x9000000"
if [ "$(uname -m)" = x86_64 ] && dmesg | grep -q 'slat: /dev/kvm ready'; then
	khz=$(dmesg | sed -n 's/.*tsc: Detected \([0-9]*\)\.\([0-9]\{3\}\) MHz.*/\1\2/p' | head -1)
	lpj=$(dmesg | sed -n 's/.*(lpj=\([0-9]*\)).*/\1/p' | head -1)
	cmdline="$cmdline tsc_early_khz=$khz lpj=$lpj no_timer_check"
fi
[ "${VM_SHELL:-1}" = 0 ] || cmdline="$cmdline vmm.shell"
prev=
for a in "$@"; do
	if [ "$a" = --console=virtio ] || { [ "$prev" = --console ] && [ "$a" = virtio ]; }; then
		cmdline="$cmdline vmm.console=hvc0"
	fi
	prev=$a
done
exec /slat/slat-vmm --kernel /vm/vmlinuz --initrd /vm/initrd.img \
	--cmdline "$cmdline ${VM_APPEND:-}" "$@"
