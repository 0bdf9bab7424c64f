#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential SMP test on AMD SVM (QEMU -cpu max, 2 CPUs): 20 INIT-SIPI-SIPI
# start-ups of the AP and NMI IPIs to it give the same verdicts bare and under
# Slat (whose INIT/SIPI mailbox replays the start-ups).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
export EMU_SMP=2
arch_diff_x86_qemu max smp
boot_done
