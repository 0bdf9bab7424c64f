#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs from the primary (slat.test=secondary): load slat.ko and run
# the /dev/slat programs (linux/tests/): the issue-14 scenario (slat-vmtest),
# a process killed mid-run (slat-killtest), the hypercall fuzzer (slat-fuzz,
# with allow_raw_calls=1); unload. Without Slat (or with a Slat whose ABI is
# not 1.x) the module refuses to load: the refusal is printed and the rest
# skipped. Kernel argument slat.rounds=N: vmtest rounds (default 20),
# slat.fuzz=N: fuzzer calls (default 100000).
arg() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" /proc/cmdline; }
rounds=$(arg slat.rounds)
calls=$(arg slat.fuzz)
echo "SLAT-GUEST: secondary on $(uname -m), kernel $(uname -r)"
dmesg -c >/dev/null
if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
	echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
	echo "SLAT-GUEST: dmesg: $(dmesg | grep 'slat:' | tail -n 1 | sed 's/^\[[^]]*\] //')"
	echo "SLAT-GUEST: MARKER secondary-refused"
	exit 1
fi
echo "SLAT-GUEST: dmesg: $(dmesg | grep 'slat:' | tail -n 1 | sed 's/^\[[^]]*\] //')"
echo "SLAT-GUEST: /dev/slat $(ls -l /dev/slat | cut -c1-10)"
# Slat's own log read back through /dev/slat_log (LOG_READ): its lines from
# the banner to the region's (the boot test compares them with the serial
# port's), and how many lines the resident Slat wrote as it started the CPUs.
if cat /dev/slat_log >/tmp/slat.log; then
	echo "SLAT-GUEST: /dev/slat_log $(ls -l /dev/slat_log | cut -c1-10)," \
		"$(grep -cE 'enters guest mode$|; vm primary running$' /tmp/slat.log)" \
		"CPUs entering the primary"
	sed -n '/a bare-metal hypervisor$/,/^slat: region .* reserved; /p' /tmp/slat.log |
		sed 's/^/SLAT-GUEST: slat-log: /'
fi
/slat/slat-vmtest "${rounds:-20}"
echo "SLAT-GUEST: slat-vmtest exit $?"
/slat/slat-killtest
echo "SLAT-GUEST: slat-killtest exit $?"
# VT-x: the KVM API's x86 checks on the VMX back end (SVM runs them in
# t_x86_svm_kvm, arm64 in t_arm64_kvm).
if grep -q GenuineIntel /proc/cpuinfo && [ -e /dev/kvm ]; then
	timeout -s KILL 300 /slat/slat-kvm-check
	echo "SLAT-GUEST: slat-kvm-check exit $?"
fi
if /slat/slat-fuzz 1 10 >/dev/null 2>&1; then
	echo "SLAT-GUEST: raw calls without allow_raw_calls: allowed (FAILED)"
else
	echo "SLAT-GUEST: raw calls without allow_raw_calls: refused"
fi
rmmod slat
echo "SLAT-GUEST: rmmod slat status $?"
insmod /lib/modules/slat.ko allow_raw_calls=1
/slat/slat-fuzz 1 "${calls:-100000}"
echo "SLAT-GUEST: slat-fuzz exit $?"
rmmod slat
echo "SLAT-GUEST: rmmod slat status $?"
dmesg | grep -v 'module verification failed' |
	grep -E 'slat: .*(leak|never deposited|failed|refused|stay pinned)|BUG|WARNING|Oops' |
	sed 's/^/SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER secondary-done uptime $(cut -d' ' -f1 /proc/uptime)"
