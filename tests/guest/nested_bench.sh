#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The live nested churn benchmark (slat.test=nested_bench,
# tools/bench-nested-churn.sh): Linux's own kvm-amd in the primary, then
# slat-nested-churn's cycles of small L2 VMs with Slat's shadow figures after
# each. Slat's reclaim mode comes from slat.cfg (nested_reclaim).
echo "SLAT-GUEST: nested_bench on $(uname -m)"
if ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER nested_bench-refused"
	exit 1
fi
timeout -s KILL 600 /slat/slat-nested-churn 60 2>&1 | sed 's/^/SLAT-GUEST: bench: /'
echo "SLAT-GUEST: MARKER nested_bench-done"
