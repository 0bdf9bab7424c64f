#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# VT-x primary VM on Bochs corei7_skylake_x, one CPU: Slat installs a MADT
# (+ FADT) for OVMF, takes VMX root, OVMF boots Debian's kernel under Slat's
# EPT; the guest sees the hypervisor bit and Slat's vendor leaf, no VMX, and
# a /dev/mem read of Slat's region fails with SIGSEGV; power-off goes through
# Slat's exit summary. Bochs runs ~50 MIPS: about 2.5 minutes. make test-slow:
# make test's t_x86_vmx_smp2 boots the same way with two CPUs and checks the
# same (x86_vmx_expect).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/x86_vmx.sh"
x86_vmx_boot 1
x86_vmx_expect 1
expect_count 1 '^slat: cpu [0-9] \(APIC ID [0-9]\) enters VMX guest mode$'
boot_done
