#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KVM API on Slat, AMD SVM (QEMU -cpu max, 2 CPUs, 2 GiB): the primary's
# Linux loads slat.ko, which offers /dev/kvm with ABI 1.3 (the VMM's CPUID,
# SREGS, MSRs) and 1.4 (interrupt injection, under the module's local and
# I/O APIC); slat-kvm-check runs long-mode guests set up through the API, and
# Linux's own KVM selftests, built unmodified from Debian's linux-source-6.1,
# pass by their own verdicts; the capability-missing runs fail cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
. "$(dirname "$0")/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 x86_svm_primary_boot kvm
kvm_expect_pass x86_64
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception'
boot_done
