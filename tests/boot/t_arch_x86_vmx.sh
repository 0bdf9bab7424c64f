#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural tests on Intel VT-x (Bochs corei7_skylake_x, 1
# CPU): a lean subset of tests/arch/x86 (Bochs runs at ~50 MIPS), bare and
# under Slat. step: single-stepping over instructions Slat emulates; crval:
# CR0/CR3/CR4/EFER/XCR0 values, including the reserved bits QEMU cannot try.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
arch_diff_x86_bochs corei7_skylake_x step crval
boot_done
