#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_arm64_kvm with every run of tests/guest/kvm.sh (slat.test=kvm_full): also
# dirty_log_test's 64 KiB-page guest mode (-m 7: one guest page is 16 pages of
# Slat's 4 KiB stage-2 and 16 bits of the log), 44-57 s of QEMU TCG, which
# `make test` leaves out for time.
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/arm64_primary.sh"
. "$(dirname "$0")/../boot/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
EMU_MEM_MB=2048 arm64_primary_boot cortex-a72 kvm_full
kvm_expect_pass aarch64 full
expect_absent 'Synchronous Exception' '^error: (slat|arm64):' 'exception at EL2'
boot_done
