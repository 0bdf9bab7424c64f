#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nested SVM (QEMU -cpu max, 2 CPUs, 2 GiB): the primary's Linux sees an SVM
# CPU with nested paging, loads Linux's own kvm-amd and runs Linux's KVM
# selftests as L1 user space; their L2 guests run under Slat, with NPT02
# built and reclaimed by Slat's shadow engine (docs/nested-svm.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 x86_svm_primary_boot nested
expect_in_order '^slat: nested SVM offered to the primary' \
	'^SLAT-GUEST: nested on x86_64' \
	'^SLAT-GUEST: svm flag on 2 CPUs' \
	"^SLAT-GUEST: /dev/kvm from Linux's KVM: crw" \
	'^SLAT-GUEST: nested: kvm_create_max_vcpus exit 0$' \
	'^SLAT-GUEST: nested: memslot_modification_stress_test exit 0$' \
	'^SLAT-GUEST: nested: set_memory_region_test exit 0$' \
	'^SLAT-GUEST: MARKER nested-done'
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception' 'Kernel panic' 'BUG' 'Oops'
boot_done
