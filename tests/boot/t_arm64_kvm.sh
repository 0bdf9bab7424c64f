#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KVM API on Slat, arm64 (QEMU -cpu cortex-a72, 2 CPUs, 2 GiB): the
# primary's Linux loads slat.ko, which offers /dev/kvm, and runs Linux's own
# KVM selftests, built unmodified from Debian's linux-source-6.1
# (tools/kvm-selftests.sh), each judged by its own exit status; then the
# same binaries without /dev/kvm and with a one-vCPU limit fail cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
. "$(dirname "$0")/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 arm64_primary_boot cortex-a72 kvm
kvm_expect_pass aarch64
expect_absent 'Synchronous Exception' '^error: (slat|arm64):' 'exception at EL2'
boot_done
