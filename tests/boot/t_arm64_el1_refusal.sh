#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 QEMU virt without virtualization=on: the firmware runs at EL1, so Slat
# refuses in one line and powers off with EFI_UNSUPPORTED.
. "$(dirname "$0")/lib.sh"
boot_qemu_arm64 cortex-a72 -M virt,virtualization=off,gic-version=3
expect_slat_report aarch64 EFI_UNSUPPORTED
expect_literal 'arm64: CurrentEL EL1, EL2 implemented no'
# Twice: Slat's UART and the firmware's ConOut (the screen mirror) on the same port.
expect_count 2 '^error: no usable virtualization: not entered at EL2 \(the firmware runs at EL1\)$'
expect_absent 'HCR_EL2' 'virtualization usable'
boot_done
