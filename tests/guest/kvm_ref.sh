#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The reference run (slat.test=kvm_ref, tests/boot/t_x86_kvm_reference.sh):
# this kernel booted by QEMU itself, without firmware or Slat, on an SVM CPU,
# loads Linux's own KVM (Debian's irqbypass, kvm and kvm-amd modules) and
# runs slat-kvm-check against it in its reference mode: the checks of KVM's
# documented behaviour must pass on KVM itself, as they pass on slat.ko.
echo "SLAT-GUEST: kvm_ref on $(uname -m), kernel $(uname -r)"
if ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER kvm_ref-refused"
	exit 1
fi
echo "SLAT-GUEST: /dev/kvm from Linux's KVM: $(ls -l /dev/kvm | cut -c1-10)"
timeout -s KILL 300 /slat/slat-kvm-check --reference # a hang is a failure (exit 137)
echo "SLAT-GUEST: slat-kvm-check exit $?"
echo "SLAT-GUEST: MARKER kvm_ref-done"
