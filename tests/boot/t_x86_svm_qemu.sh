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
# of its own); the split irqchip stays covered by t_x86_svm_qemu_migrate.
# EMU_QEMU_MACHINE picks another -M value (the IRQ 0 check is for -M pc).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu_vmm.sh"
machine=${EMU_QEMU_MACHINE:-pc,hpet=off}
qemu_vmm_boot_x86 "console=ttyS0 panic=-1 quiet slat.test=qemu_slat slat.qemu_machine=$machine${EMU_QEMU_EXTRA:+ $EMU_QEMU_EXTRA}"
expect_in_order '^SLAT-GUEST: qemu_slat on x86_64' \
	'^SLAT-GUEST: QEMU emulator version 7\.2' \
	'^SLAT-GUEST: qemu: .*Linux version [0-9]' \
	'^SLAT-GUEST: qemu: .*\.\.TIMER: vector=0x[0-9a-fA-F]+ apic1=0 pin1=2 ' \
	'^SLAT-GUEST: qemu: .*smp: Brought up 1 node, 2 CPUs' \
	'^SLAT-GUEST: qemu: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: qemu: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: qemu: VMM-GUEST: irq0: 0: [1-9][0-9]* [0-9]+ IO-APIC 2-edge timer' \
	'^SLAT-GUEST: qemu: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+' \
	'^SLAT-GUEST: qemu exit 0 after' \
	'^SLAT-GUEST: disk checksum matches the image.s' \
	'^SLAT-GUEST: the VM.s write is in the image' \
	'^SLAT-GUEST: MARKER qemu_slat-done' \
	'^slat: secondary VMs: 1 created, 1 destroyed, 0 alive' \
	'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86|hv):' 'host exception' \
	'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'insmod .* failed' 'VMM-GUEST: no disk' \
	'MP-BIOS bug' 'trying to set up timer' 'timer doesn.t work' 'spurious 8259A interrupt'
expect_exit
boot_done
