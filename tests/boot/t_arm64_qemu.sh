#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Debian's own QEMU on Slat's /dev/kvm, arm64 (issue 34): QEMU virt at EL2
# with GICv3, -cpu cortex-a72, 2 CPUs, 2 GiB, edk2 + slat.efi. The primary's
# Linux loads slat.ko and runs Debian 12's unmodified qemu-system-aarch64 7.2
# (tools/qemu-guest.sh) with -accel kvm -cpu host -M virt,gic-version=3 on
# the same Debian kernel with the VM initramfs of tools/vmm-initrd.sh, two
# vCPUs and a virtio disk (-drive if=virtio: virtio-blk-pci;
# tests/guest/qemu_slat.sh): the VM's kernel, both vCPUs online (PSCI
# CPU_ON in slat.ko), its timer, the disk's checksum and a write the primary
# reads back, a command typed at its shell on the console;
# then the monitor's info registers and system_reset (Ctrl-A c) and all of it again, and a PSCI
# power-off from the shell that ends QEMU with status 0; then Slat's summary
# accounts every page (two VMs: QEMU's scratch VM for -cpu host, and the
# machine). `its=off`: QEMU 7.2 dereferences NULL without
# KVM_CAP_SIGNAL_MSI (docs/kvm-api.md). QEMU_TRACE=PATTERN passes QEMU's
# -trace PATTERN (e.g. 'kvm_*', slow). The same on a GICv2 machine:
# tests/slow/t_arm64_qemu_gicv2.sh (arm64_qemu_test in qemu_vmm.sh).
#
# Then, in the same primary boot (slat.test=qemu_slat+qemu_migrate, issue 36;
# before 2026-11-29 a second boot in make test-slow, t_arm64_qemu_migrate), a
# running VM migrates between two QEMU processes (tests/guest/qemu_migrate.sh):
# QEMU B waits with -incoming unix:/tmp/mig.sock, QEMU A boots the VM of /vm/
# (-smp 2 -m 128, -M virt,gic-version=3,its=off -cpu host: slat.ko's
# in-kernel GICv3) with vmm.migrate: the VM keeps rewriting buffers in its
# RAM and checking their SHA-256 (tools/vmm-initrd.sh); A's monitor migrates
# it to B while it writes, and it goes on in B with every buffer intact: the
# dirty log, the vGIC's register groups, every ONE_REG register and the VM's
# counter (KVM_REG_ARM_TIMER_CNT) end to end. Slat's summary then accounts
# all six VMs (two per QEMU: its scratch VM for -cpu host and the machine)
# and every page. docs/kvm-api.md, "A live migration between two QEMUs on
# arm64".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu_vmm.sh"
arm64_qemu_test 3
