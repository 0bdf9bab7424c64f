#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slat-vmm on Slat's /dev/kvm (slat.test=vmm_slat,
# tests/boot/t_x86_svm_linux_secondary.sh): the primary's Linux under Slat
# loads slat.ko and runs /slat/slat-vmm on the Debian kernel and busybox
# initramfs of initrd-vmm.img (tools/vmm-initrd.sh), as tests/guest/vmm_ref.sh
# does on Linux's own KVM (vmm_lib.sh has what both run): a VM with a disk
# and a shell typed at on its console, a second one after it, then two at
# once (with a third start on a disk in use, refused), then the bad
# arguments. On x86 Slat's KVM has no kvmclock: /vm/run-vm.sh tells each VM
# the TSC frequency and the delay loop this kernel measured (tsc_early_khz=,
# lpj=) and to skip the timer check; arm64's VM needs none of that (its
# timer's frequency is architected). Nothing here depends on the
# architecture: an arm64 Slat test can run it as it is.
. /tests/vmm_lib.sh
echo "SLAT-GUEST: vmm_slat on $(uname -m), kernel $(uname -r)"
if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
	echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
	echo "SLAT-GUEST: MARKER vmm_slat-refused"
	exit 1
fi
dmesg | grep 'slat:' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
# /vm/run-vm.sh tells each VM this kernel's TSC rate and delay loop.
cmdline="loglevel=7 vmm.nmi" # vm1 also takes SysRq l's NMI IPIs (x86)

vm_run vm1 2 /tmp/disk1.img shell "$cmdline"
vm_run vm2 2 /tmp/disk2.img hvc "loglevel=4"

# Two VMs at once, each with its own disk and a shell that is told to power
# off only once both shells are up; a third start on vm3's disk while vm3
# runs is refused (the image is locked), and leaves vm3 alone.
rm -f /tmp/vm3.out /tmp/vm4.out /tmp/vm3.done /tmp/vm4.done
VM_PEER=vm4 vm_run vm3 2 /tmp/disk3.img shell "loglevel=4" &
VM_PEER=vm3 vm_run vm4 2 /tmp/disk4.img shell "loglevel=4" &
n=0
until grep -q '^slat-vmm: disk /tmp/disk3.img' /tmp/vm3.out 2>/dev/null || [ $n -ge 600 ]; do
	sleep 0.1
	n=$((n + 1))
done
bad 2 --kernel /vm/vmlinuz --disk /tmp/disk3.img
wait
vm_bad_args
dmesg | grep 'slat' | tail -20 | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER vmm_slat-done"
