#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_arm64_qemu on a GICv2 machine (issue 34): the outer QEMU virt at EL2 with
# gic-version=2 (memory-mapped CPU interface, Slat's GICv2 virtual one), and
# Debian's unmodified QEMU 7.2 in the primary with -M virt,gic-version=2
# -accel kvm -cpu host -smp 2: QEMU's kvm-arm-gic is slat.ko's GICv2, whose
# state QEMU writes at every machine reset through GRP_DIST_REGS /
# GRP_CPU_REGS (docs/kvm-api.md). The same VM and verdicts as t_arm64_qemu:
# both vCPUs, the timer, the disk's checksum and a write read back, a typed
# command, info registers, the monitor's system_reset, power-off, and every
# deposited page back (tests/boot/qemu_vmm.sh, arm64_qemu_test).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/qemu_vmm.sh"
arm64_qemu_test 2
