#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 QEMU virt with acpi=off: edk2 hands over a device tree instead of ACPI;
# the console UART and the GIC version come from it.
. "$(dirname "$0")/lib.sh"
boot_qemu_arm64 cortex-a72 -M virt,virtualization=on,gic-version=3,acpi=off
expect_slat_report aarch64 EFI_SUCCESS
expect_literal 'ACPI no, device tree yes' \
	'firmware: console UART PL011 at 0x9000000 (from device tree)' \
	'arm64: GIC from firmware: GICv3 (device tree)' \
	'slat: virtualization usable'
boot_done
