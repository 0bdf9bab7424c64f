#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The crform payload (tests/arch/x86/crform.c: the instruction forms that reach
# a CR intercept) on Intel VT-x, bare and under Slat (Bochs corei7_skylake_x, 1
# CPU). About 95 s of Bochs, mostly OVMF starting twice: make test runs crform
# on SVM (t_arch_x86_svm_smp2), where Slat decodes LMSW's memory operand
# itself; on VT-x the CPU reads it and puts the data in the exit qualification.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/arch_diff.sh"
arch_diff_x86_bochs corei7_skylake_x crform
boot_done
