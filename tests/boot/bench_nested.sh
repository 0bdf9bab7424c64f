#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One boot of the live nested churn benchmark (tools/bench-nested-churn.sh,
# not a test of make test): QEMU -cpu max, 2 CPUs, 2 GiB, slat.cfg's
# nested_reclaim = $NESTED_RECLAIM (recursive | none), the primary runs
# tests/guest/nested_bench.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
EMU_MEM_MB=2048 x86_svm_primary_boot nested_bench "nested_reclaim = ${NESTED_RECLAIM:-recursive}"
expect_in_order "^slat: nested SVM offered to the primary" \
	'^SLAT-GUEST: bench: churn: cycle 1: ' \
	'^SLAT-GUEST: MARKER nested_bench-done'
boot_done
