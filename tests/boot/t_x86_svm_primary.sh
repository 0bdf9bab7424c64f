#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 primary VM under AMD SVM (QEMU -cpu max, TCG, 2 CPUs): OVMF continues in
# guest mode under Slat's NPT on both CPUs and boots Debian's kernel, which
# brings its AP up through Slat's INIT/SIPI mailbox, sees Slat's CPUID vendor
# leaf on both CPUs and no SVM, cannot read Slat's memory (#GP -> SIGSEGV),
# and powers off through Slat's exit summary.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
x86_svm_primary_boot
x86_svm_primary_expect
boot_done
