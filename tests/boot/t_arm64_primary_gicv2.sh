#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 primary VM on a GICv2 machine (QEMU virt gic-version=2, like GIC-400
# boards: memory-mapped CPU interface, no ICC_* system registers), cortex-a72,
# 2 CPUs: Slat must not touch the GICv3 system registers at EL2 (boot CPU and
# the CPU started through PSCI), says which GIC it found, and Debian's kernel
# boots as on GICv3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
EMU_ARM64_MACHINE=virt,virtualization=on,gic-version=2 arm64_primary_boot cortex-a72
arm64_primary_expect
expect_literal 'slat: HCR_EL2 0x80080001,' \
	'slat: GIC CPU interface: memory-mapped (GICv2; no GIC system registers), passed through' \
	'arm64: GIC from firmware: GICv2 (ACPI MADT)'
expect_absent 'GIC CPU interface: system registers'
boot_done
