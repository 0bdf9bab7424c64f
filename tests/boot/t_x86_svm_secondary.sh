#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on AMD SVM (QEMU -cpu max, TCG, 2 CPUs): the primary's Linux
# loads slat.ko (VMMCALL) and runs slat-vmtest, slat-killtest and slat-fuzz
# as on arm64 (tests/boot/t_arm64_secondary.sh), then unloads the module.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
. "$(dirname "$0")/secondary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-420}
x86_svm_primary_boot secondary
secondary_expect_pass
secondary_expect_log_read 2
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception'
boot_done
