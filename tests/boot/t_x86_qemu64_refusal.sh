#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 QEMU -cpu qemu64: SVM is advertised but without nested paging, so there
# is no usable virtualization: one clear line, power-off with EFI_UNSUPPORTED.
. "$(dirname "$0")/lib.sh"
boot_qemu_x86 qemu64
expect_slat_report x86_64 EFI_UNSUPPORTED
expect_literal 'svm: SVM yes' 'svm: NPT no' 'vmx: VMX no'
expect_count 1 '^error: no usable virtualization: AMD SVM without nested paging \(NPT\)$'
expect_absent 'virtualization usable'
boot_done
