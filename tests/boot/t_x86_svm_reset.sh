#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 primary VM reset under AMD SVM (QEMU -cpu max, 2 CPUs): the guest resets
# the machine (reboot -f: Linux writes the ACPI reset register, 0xCF9); Slat
# tears the NPT down, prints the exit summary for a reset and performs the
# reset (QEMU -no-reboot then exits). A bad slat.cfg line is reported with its
# line number and ignored.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
x86_svm_primary_boot reset 'colour = blue'
expect_in_order '^slat: firmware continues as the primary VM on 2 CPU\(s\) \(SVM, NPT\)$' \
	'^SLAT-GUEST: MARKER reset-now uptime' \
	'^slat: exit summary: vm primary reset after [0-9]+\.[0-9]+ s uptime, 2 vCPUs$' \
	'^slat: NPT teardown: [0-9]+ table pages freed, 1 invalidations$' \
	'^slat: resetting$'
expect_count 2 '^error: slat\.cfg:5: ' # Slat's UART and the firmware's ConOut
expect_absent 'power-off after' '^slat: powering off' '^error: (slat|svm|x86):' 'Kernel panic' \
	'X64 Exception Type' 'host exception'
expect_exit
boot_done
