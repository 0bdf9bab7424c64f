#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential architectural tests on arm64 (QEMU virt, cortex-a72, GICv3):
# every payload of tests/arch/arm64 gives the same verdicts bare and under Slat.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
EMU_SMP=2 arch_diff_arm64 cortex-a72 3 ${ARCH_PAYLOADS:-smoke exc timer gic psci mte_pac vec loader}
boot_done
