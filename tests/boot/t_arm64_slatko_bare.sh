#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# slat.ko without Slat (arm64): Debian's kernel straight under QEMU (PSCI by
# QEMU at EL1 without a hypervisor: no SMCCC 1.1 conduit or a foreign UID): the module refuses to load
# with one dmesg line and /dev/slat never appears.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/secondary.sh"
secondary_bare aarch64
secondary_expect_refused '(vendor hypervisor UID [0-9a-f-]+ is not Slat.s|no SMCCC 1.1 conduit \(no hypervisor answers\)): not loading$'
boot_done
