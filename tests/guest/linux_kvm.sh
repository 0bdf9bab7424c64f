#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes Linux's own KVM ready on a kernel that runs without Slat; used by
# kvm_bench.sh, kvm_ref.sh and vmm_ref.sh. x86: loads KVM for AMD (Debian's
# irqbypass, kvm and kvm-amd modules, /lib/modules/kvm/) on an SVM CPU. arm64:
# KVM is built into Debian's kernel and initialized itself when the kernel
# was entered at EL2; only /dev/kvm is checked. Exit status 1, with the
# reason, when it is not there.
if [ "$(uname -m)" = aarch64 ]; then
	[ -e /dev/kvm ] && exit 0
	echo "SLAT-GUEST: no /dev/kvm (KVM did not initialize: $(dmesg | grep -i 'kvm' | tail -1))"
	exit 1
fi
for m in irqbypass kvm kvm-amd; do
	if ! insmod "/lib/modules/kvm/$m.ko" 2>/tmp/insmod.err; then
		echo "SLAT-GUEST: $m.ko refused to load: $(cat /tmp/insmod.err)"
		exit 1
	fi
done
