#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural tests on AMD SVM (QEMU -cpu max, 1 CPU): every
# payload of tests/arch/x86 gives the same verdicts bare and under Slat
# (svm: VMRUN's checks, answered by the CPU bare and by Slat's nested SVM).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
arch_diff_x86_qemu max smoke exc step crval loader nmi ioapic apictimer svm
boot_done
