#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench's live secondary-VM benchmark (slat.test=bench_secondary, run by
# tools/bench-live-secondary.sh): load slat.ko, run slat-bench.
# slat.bench=RUNS,SIZES on the kernel command line.
set -- $(sed -n 's/.*slat\.bench=\([0-9]*\),\([0-9]*\).*/\1 \2/p' /proc/cmdline)
if ! insmod /lib/modules/slat.ko; then
	echo "SLAT-GUEST: slat.ko refused to load"
	exit 1
fi
/slat/slat-bench "${1:-3}" "${2:-4}"
rc=$?
rmmod slat
exit $rc
