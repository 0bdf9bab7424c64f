#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_x86_svm_kvm with every run of tests/guest/kvm.sh (slat.test=kvm_full):
# also dirty_log_test (about 65 s of QEMU TCG: its 1 GiB slot written and
# read whole) and memslot_perf_test at the most slots, which `make test`
# runs on arm64 only (t_arm64_kvm) to save time.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/x86_primary.sh"
. "$(dirname "$0")/../boot/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
EMU_MEM_MB=2048 x86_svm_primary_boot kvm_full
kvm_expect_pass x86_64 full
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception'
boot_done
