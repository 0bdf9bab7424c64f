#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 primary VM on -cpu max,pauth=off (Armv8.x with VHE, PAN, SVE, no
# pointer auth), 2 CPUs: the same guarantees as on cortex-a72.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
arm64_primary_boot max,pauth=off
arm64_primary_expect
# RW, TSC, VM and EnSCXT (max has FEAT_CSV2_2: SCXTNUM_EL1 must not trap);
# no ATA (MTE needs the machine's mte=on), no API/APK (pauth=off).
expect_literal 'slat: HCR_EL2 0x20000080080001,'
boot_done
