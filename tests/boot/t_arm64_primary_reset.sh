#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 primary VM reset: the guest resets the machine (reboot -f); Slat tears
# the stage-2 down, prints the exit summary for a reset and passes the reset
# to the firmware (QEMU -no-reboot then exits).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
arm64_primary_boot cortex-a72 reset
expect_in_order '^slat: firmware dropped to EL1 on cpu 0; vm primary running$' \
	'^SLAT-GUEST: MARKER reset-now uptime' \
	'^slat: exit summary: vm primary reset after [0-9]+\.[0-9]+ s uptime, 2 vCPUs$' \
	'^slat: stage-2 teardown: [0-9]+ table pages freed, 1 invalidations$' \
	'^slat: resetting$'
expect_absent 'power-off after' '^slat: powering off' '^error: (slat|arm64):' 'Kernel panic'
expect_exit
boot_done
