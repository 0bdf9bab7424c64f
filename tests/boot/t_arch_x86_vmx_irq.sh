#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential interrupt and NMI payloads on Intel VT-x (Bochs corei7_skylake_x,
# 1 CPU): NMI blocking across the handler's IRET and the IOAPIC level-triggered
# re-fire after EOI give the same verdicts bare and under Slat. Lean: the two
# payloads only.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
arch_diff_x86_bochs corei7_skylake_x nmi ioapic
boot_done
