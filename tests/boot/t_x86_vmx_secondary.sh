#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on Intel VT-x (Bochs corei7_skylake_x, one CPU): the primary's
# Linux loads slat.ko (VMCALL, chosen by the CPU vendor) and runs the same
# programs as on SVM and arm64, lean for Bochs' ~50 MIPS: 3 vmtest rounds and
# 20000 fuzz calls (the full counts run on QEMU); and slat-kvm-check's x86
# checks on the VT-x back end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_vmx.sh"
. "$(dirname "$0")/secondary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
x86_vmx_boot 1 secondary
secondary_expect_pass
# The KVM API's x86 checker on the VMX back end (SREGS, CPUID, MSRs, injection).
expect_in_order '^SLAT-GUEST: slat-killtest exit 0$' \
	'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
	'^SLAT-GUEST: slat-kvm-check exit 0$'
expect_absent 'X64 Exception Type' '^error: (slat|vmx|x86):' 'host exception'
boot_done
