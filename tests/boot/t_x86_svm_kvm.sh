#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KVM API on Slat, AMD SVM (QEMU -cpu max, 2 CPUs, 2 GiB): the primary's
# Linux loads slat.ko, which offers /dev/kvm with ABI 1.3 (the VMM's CPUID,
# SREGS, MSRs); slat-kvm-check runs a long-mode guest set up through the API,
# and Linux's own KVM selftests run unmodified: those that need no in-kernel
# irqchip pass, the others stop cleanly at KVM_CREATE_IRQCHIP (issue 18).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
. "$(dirname "$0")/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 x86_svm_primary_boot kvm
kvm_expect_x86
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception'
boot_done
