#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Nested SVM (slat.test=nested, tests/boot/t_x86_svm_nested.sh): the primary's
# Linux, on the SVM CPU Slat shows it, loads Linux's own KVM (Debian's
# irqbypass, kvm and kvm-amd modules) and runs Linux's KVM selftests, built
# unmodified from Debian's linux-source, as L1 user space: every L2 guest
# they create runs under Slat, its nested page tables in Slat's shadow engine.
# Then slat-nested-churn: 50 cycles of small VMs, with Slat's shadow figures.
echo "SLAT-GUEST: nested on $(uname -m), kernel $(uname -r)"
echo "SLAT-GUEST: svm flag on $(grep -c -w svm /proc/cpuinfo) CPUs"
dmesg -c >/dev/null
if ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER nested-refused"
	exit 1
fi
dmesg | grep -i 'kvm' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: /dev/kvm from Linux's KVM: $(ls -l /dev/kvm | cut -c1-10)"
echo "SLAT-GUEST: npt=$(cat /sys/module/kvm_amd/parameters/npt) nested=$(cat /sys/module/kvm_amd/parameters/nested)"

# run NAME ARGS...: one selftest with a time limit; prints its exit status.
run() {
	name=$1
	shift
	echo "SLAT-GUEST: nested: running $name $*"
	timeout -s KILL "${NESTED_LIMIT:-300}" "/kvm/$name" "$@" >/tmp/out 2>&1
	rc=$?
	sed "s/^/SLAT-GUEST: nested: $name: /" /tmp/out | tail -n 60
	echo "SLAT-GUEST: nested: $name exit $rc"
}
# First a working set larger than Slat's shadow quota (the boot test sets
# nested_quota = 16; 32 MiB of L2 memory touched in every stage needs some 20
# shadow pages): Slat evicts its oldest shadow pages and L2 refaults them,
# and every L2 guest after it must still work. kvm_page_table_test with
# 256 MiB was the workload that once left L1 without L2 guests for good.
run kvm_page_table_test -b 32M -v 2
run memslot_modification_stress_test -i 20 -v 2 -b 8M
run set_memory_region_test
# The churn of small L2 VMs (slat-nested-churn): Slat's shadow pages back at
# their floor after every cycle, the hash chains flat, then a slot deletion.
echo "SLAT-GUEST: nested: running slat-nested-churn 50"
timeout -s KILL 300 /slat/slat-nested-churn 50 2>&1 | sed 's/^/SLAT-GUEST: nested: /'
echo "SLAT-GUEST: nested: slat-nested-churn done"
dmesg | grep -E 'BUG|WARNING|Oops|kvm' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /' | tail -20
echo "SLAT-GUEST: MARKER nested-done uptime $(cut -d' ' -f1 /proc/uptime)"
