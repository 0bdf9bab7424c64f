#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on arm64 (QEMU -cpu cortex-a72, 2 CPUs): the primary's Linux
# loads slat.ko and runs slat-vmtest (64 slots, 2 vCPUs, delete and move
# while they run, engine counters, 20 rounds, no page leaked), slat-killtest
# (SIGKILL mid-run leaves nothing) and slat-fuzz (10^5 raw hypercalls leave
# Slat and the victim VM intact), then unloads the module.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
. "$(dirname "$0")/secondary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-420}
arm64_primary_boot cortex-a72 secondary
secondary_expect_pass
secondary_expect_log_read 1
expect_absent 'Synchronous Exception' '^error: (slat|arm64):' 'exception at EL2'
boot_done
