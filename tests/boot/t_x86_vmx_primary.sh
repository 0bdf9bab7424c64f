#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# VT-x primary VM on Bochs corei7_skylake_x, one CPU: Slat installs a MADT
# (+ FADT) for OVMF, takes VMX root, OVMF boots Debian's kernel under Slat's
# EPT; the guest sees the hypervisor bit and Slat's vendor leaf, no VMX, and
# a /dev/mem read of Slat's region fails with SIGSEGV; power-off goes through
# Slat's exit summary. Bochs runs ~50 MIPS: about 2.5 minutes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_vmx.sh"
x86_vmx_boot 1
x86_vmx_expect 1
expect_count 1 '^slat: cpu [0-9] \(APIC ID [0-9]\) enters VMX guest mode$'
boot_done
