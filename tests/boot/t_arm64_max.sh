#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 QEMU virt -cpu max,pauth=off: VHE, stage-2 FWB, TLB range ops,
# 52-bit PA, 16-bit VMID, GICv3.
. "$(dirname "$0")/lib.sh"
boot_qemu_arm64 max,pauth=off
expect_slat_report aarch64 EFI_SUCCESS
expect_literal 'MIDR_EL1 0x000f0510' \
	'arm64: CurrentEL EL2, EL2 implemented yes' \
	'(E2H 0, TGE 1, RW 0)' \
	'arm64: PARange 52 bits' 'stage-2 4K granule yes' \
	'arm64: VHE yes, VMID bits 16' \
	'arm64: stage-2 FWB yes' \
	'arm64: TLB range ops yes (outer-shareable + range)' \
	'arm64: GIC system registers GICv3/v4' \
	'arm64: GIC from firmware: GICv3 (ACPI MADT)' \
	'slat: virtualization usable'
boot_done
