#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 QEMU virt -cpu cortex-a72 (Armv8.0): entered at EL2 under edk2, no VHE,
# no FWB, no TLB range ops, 44-bit PA, 8-bit VMID, GICv3 from ACPI.
. "$(dirname "$0")/lib.sh"
boot_qemu_arm64 cortex-a72
expect_slat_report aarch64 EFI_SUCCESS
expect_literal 'MIDR_EL1 0x410fd083 (Cortex-A72)' \
	'arm64: CurrentEL EL2, EL2 implemented yes' \
	'(E2H 0, TGE 1, RW 0)' \
	'arm64: PARange 44 bits (ID_AA64MMFR0_EL1 0x1124), stage-2 4K granule yes' \
	'arm64: VHE no, VMID bits 8 (ID_AA64MMFR1_EL1 0x0)' \
	'arm64: stage-2 FWB no (ID_AA64MMFR2_EL1 0x0)' \
	'arm64: TLB range ops no (ID_AA64ISAR0_EL1 0x11120)' \
	'arm64: GIC system registers GICv3/v4' \
	'arm64: GIC from firmware: GICv3 (ACPI MADT)' \
	'firmware: console UART PL011 at 0x9000000 (from ACPI SPCR)' \
	'slat: virtualization usable'
expect '^memmap: [0-9]+ entries, RAM 1024 MiB'
boot_done
