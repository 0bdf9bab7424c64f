#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural test on AMD SVM (QEMU -cpu max, 1 CPU): svm,
# VMRUN's checks, answered by the CPU bare and by Slat's nested SVM, give the
# same verdicts. The other payloads of tests/arch/x86 run on 2 CPUs in
# t_arch_x86_svm_smp2 and on 1 CPU in make test-slow (t_arch_x86_svm_1cpu).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
arch_diff_x86_qemu max svm
boot_done
