#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Guest side of the arm64 reset test: reset the machine from the OS (PSCI
# SYSTEM_RESET, possibly through the firmware's ResetSystem) instead of the
# usual power-off.
echo "SLAT-GUEST: MARKER reset-now uptime $(cut -d' ' -f1 /proc/uptime)"
sync
reboot -f
