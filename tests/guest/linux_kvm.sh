#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Loads Linux's own KVM for AMD (Debian's irqbypass, kvm and kvm-amd modules,
# /lib/modules/kvm/) on a kernel that runs without Slat on an SVM CPU; used by
# kvm_bench.sh and kvm_ref.sh. Exit status 1, with the reason, if one refuses.
for m in irqbypass kvm kvm-amd; do
	if ! insmod "/lib/modules/kvm/$m.ko" 2>/tmp/insmod.err; then
		echo "SLAT-GUEST: $m.ko refused to load: $(cat /tmp/insmod.err)"
		exit 1
	fi
done
