#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 primary VM on -cpu cortex-a72 (Armv8.0, no VHE, no PAN), 2 CPUs: edk2
# dropped to EL1 under Slat's stage-2 boots Debian's kernel, which runs at EL1,
# brings CPU 1 up through Slat's PSCI, cannot read Slat's memory, powers off
# through Slat's exit summary. A bad slat.cfg line is reported with its line
# number and ignored.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
arm64_primary_boot cortex-a72 primary 'colour = blue'
arm64_primary_expect
expect_literal 'slat: HCR_EL2 0x80080001,'
expect_count 2 '^error: slat\.cfg:5: ' # Slat's UART and the firmware's ConOut
expect_literal 'slat: slat.cfg read (1 line ignored): loader \slat\vmlinuz, initrd \slat\initrd.img'
boot_done
