#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential tests on AMD SVM with 2 CPUs (QEMU -cpu max): every x86 payload
# again (on 1 CPU in make test-slow: t_arch_x86_svm_1cpu.sh), then smp: 20 INIT-SIPI-SIPI
# start-ups of the AP and NMI IPIs to it give the same verdicts bare and under
# Slat (whose INIT/SIPI mailbox replays the start-ups). smp runs last: the
# checks below read its Slat run's log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
export EMU_SMP=2
arch_diff_x86_qemu max smoke exc step crval crform loader nmi ioapic apictimer smp
# The Slat run's exit summary (BOOT_LOG is the last run's log): the parked AP
# halts natively (no HLT exits: an NMI to it is not held in the host), and
# the payload's 32-bit accesses at 0xCF8 are counted by the I/O fast path
# (how many the firmware makes varies with slat.efi's layout: 202 or 394 seen).
expect '^slat: io exits by port: .*0xcf8 [1-9][0-9]*'
expect_absent '^slat: exits: wait ' 'host exception' '^error: (slat|svm|x86):'
boot_done
