#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Debian's own QEMU on Slat's /dev/kvm, AMD SVM (issue 34; QEMU -cpu max, 2
# CPUs, 2 GiB, OVMF + slat.efi): the primary's Linux loads slat.ko and runs
# Debian 12's unmodified qemu-system-x86_64 7.2 (tools/qemu-guest.sh) with
# -accel kvm -cpu host -M pc,hpet=off -smp 2 on the VM kernel and initramfs
# of /vm/ (tools/vmm-initrd.sh) and a virtio-blk-pci disk
# (tests/guest/qemu_slat.sh). QEMU's default irqchip is the in-kernel one:
# slat.ko's local APICs, I/O APIC, 8259 pair and 8254 PIT (KVM_CREATE_PIT2).
# Without the HPET (hpet=off) the VM's Linux takes the PIT as its timer
# until the local APIC timers are calibrated against it, so IRQ 0 counts
# ticks of slat.ko's PIT through its I/O APIC (QEMU's kvm-i8254 has no timer
# of its own). A command is typed at the VM's shell, the monitor shows
# info registers and its system_reset reboots the VM (QEMU writes its reset
# state into the in-kernel 8259s, PIT, I/O APIC and LAPICs), which does it
# all again and powers off from its shell. Then a short QEMU run per
# machine of EMU_QEMU_MORE, each to the VM's checks and its own power-off:
# none by default, for make test's time; -M q35 and -M pc,kernel-irqchip=split
# in make test-slow (tests/slow/t_x86_svm_qemu_q35.sh; the split irqchip also
# runs in make test's t_x86_svm_qemu_migrate).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu_vmm.sh"
x86_svm_qemu_test
