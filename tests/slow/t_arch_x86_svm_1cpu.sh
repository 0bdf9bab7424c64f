#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural tests on AMD SVM (QEMU -cpu max, 1 CPU): every
# payload of tests/arch/x86 gives the same verdicts bare and under Slat. make
# test runs them on 2 CPUs (t_arch_x86_svm_smp2) and svm on 1 (t_arch_x86_svm).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/arch_diff.sh"
arch_diff_x86_qemu max smoke exc step crval loader nmi ioapic apictimer svm
boot_done
