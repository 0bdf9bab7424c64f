#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 QEMU -cpu qemu64,-svm: neither SVM nor VMX. Slat must not read VM_CR or
# any VMX MSR (a #GP would show as an OVMF exception dump), says so in one
# line and powers off with EFI_UNSUPPORTED.
. "$(dirname "$0")/lib.sh"
boot_qemu_x86 qemu64,-svm
expect_slat_report x86_64 EFI_UNSUPPORTED
expect_literal 'svm: SVM no' 'vmx: VMX no'
# Twice: Slat's UART and the firmware's ConOut (the screen mirror) on the same port.
expect_count 2 '^error: no usable virtualization: this CPU offers neither AMD SVM nor Intel VMX$'
expect_absent 'svm: revision' 'IA32_FEATURE_CONTROL' 'virtualization usable'
boot_done
