#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# VT-x primary VM on Bochs corei7_skylake_x with two CPUs: the AP enters VMX
# guest mode through OVMF's MP services, OVMF's and Linux's INIT/SIPI go
# through the ICR-trapping mailbox (Bochs 2.7's wait-for-SIPI is broken),
# Linux brings CPU 1 up itself, takes it offline and back (an NMI kick makes
# the halted CPU see its INIT) and both CPUs show Slat's vendor leaf.
# About 4-5 minutes of Bochs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_vmx.sh"
x86_vmx_boot 2
x86_vmx_expect 2
expect_in_order '^slat: cpu 1 \(APIC ID 1\) enters VMX guest mode$' \
	'^slat: cpu 0 \(APIC ID 0\) enters VMX guest mode$'
expect '^slat: exits: mmio +[0-9]+ \(vcpu0 [1-9][0-9]*, vcpu1 [1-9][0-9]*\)$' \
	'^slat: exits: interrupt +[0-9]+ \(vcpu0 [0-9]+, vcpu1 [1-9][0-9]*\)$'
boot_done
