#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 QEMU -cpu qemu64: SVM is advertised but without nested paging, so there
# is no usable virtualization: one clear line, power-off with EFI_UNSUPPORTED.
# The line is also on the firmware's text console (ConOut, for a box with only
# a screen), which OVMF's terminal driver sends to the same COM1: so it is in
# the serial log twice, and an info line (never mirrored) once.
. "$(dirname "$0")/lib.sh"
boot_qemu_x86 qemu64
expect_slat_report x86_64 EFI_UNSUPPORTED
expect_literal 'svm: SVM yes' 'svm: NPT no' 'vmx: VMX no'
expect_count 2 '^error: no usable virtualization: AMD SVM without nested paging \(NPT\)$'
expect_count 1 '^slat: powering off \(EFI_UNSUPPORTED\)$'
expect_absent 'virtualization usable'
boot_done
