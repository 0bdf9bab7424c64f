#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural tests on arm64 (QEMU virt, -cpu max with MTE
# (mte=on) and QEMU's fast pointer authentication, GICv2): every payload of
# tests/arch/arm64 gives the same verdicts bare and under Slat.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
ARCH_MACHINE_EXTRA=,mte=on EMU_SMP=2 arch_diff_arm64 max,pauth-impdef=on 2 ${ARCH_PAYLOADS:-smoke exc timer gic psci mte_pac vec}
boot_done
