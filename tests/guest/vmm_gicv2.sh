#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The arm64 primary on a GICv2 machine, then a Linux secondary with a GICv2
# (slat.test=vmm_gicv2, tests/boot/t_arm64_primary_gicv2.sh): first the
# primary's own checks (primary.sh), then slat.ko and slat-vmm, whose --gic
# auto finds no GICv3 here and gives the VM slat.ko's GICv2 distributor and
# the CPU interface Slat serves (ABI 1.7): a 2-vCPU VM with a disk and a
# shell (vmm_lib.sh), then a VM asked for a GICv3, refused; then
# slat-kvm-check, whose GICv2 section runs here.
. /tests/vmm_lib.sh
sh /tests/primary.sh
echo "SLAT-GUEST: vmm_gicv2 on $(uname -m), kernel $(uname -r)"
if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
	echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
	exit 1
fi
dmesg | grep 'slat:' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
vm_run vm1 2 /tmp/disk1.img shell "loglevel=4"
bad 2 --kernel /vm/vmlinuz --gic v3
# The KVM API's GICv2 checks (t_arm64_kvm_reference_gicv2 runs them on KVM).
timeout -s KILL 300 /slat/slat-kvm-check >/tmp/kvmcheck.out 2>&1
rc=$?
grep -E 'vgic|PASS|FAIL' /tmp/kvmcheck.out
echo "SLAT-GUEST: slat-kvm-check exit $rc"
echo "SLAT-GUEST: MARKER vmm_gicv2-done"
