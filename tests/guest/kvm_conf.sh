#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The conformance run (tools/kvm-conformance.sh): every KVM selftest of
# Debian's linux-source-6.1 for this arch (/kvm-all/, appended to the
# initramfs by the runner: tools/kvm-selftests.sh ARCH all), each once with
# its default arguments and a time limit, on slat.ko's /dev/kvm
# (slat.test=kvm_conf) or on Linux's own KVM (slat.test=kvm_conf_ref, the
# same kernel booted without Slat: KVM_CONF_SIDE=kvm). The verdicts are read
# from the exit status on the host (0 pass, 4 skip, 137 time limit, else
# fail). Kernel command line: slat.conf_limit=SECONDS (default 180),
# slat.conf_only=NAME,NAME... (a subset, to try the runner).
side=${KVM_CONF_SIDE:-slat}
echo "SLAT-GUEST: kvm_conf on $(uname -m), kernel $(uname -r), side $side"
ulimit -n 4096
limit=$(sed -n 's/.*slat\.conf_limit=\([0-9]*\).*/\1/p' /proc/cmdline)
only=$(sed -n 's/.*slat\.conf_only=\([A-Za-z0-9_,-]*\).*/\1/p' /proc/cmdline)
limit=${limit:-180}

if [ "$side" = slat ]; then
	if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
		echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
		echo "SLAT-GUEST: MARKER kvm_conf-refused"
		exit 1
	fi
elif ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER kvm_conf-refused"
	exit 1
fi
echo "SLAT-GUEST: conf: /dev/kvm $(ls -l /dev/kvm | cut -c1-10), limit $limit s"

for f in /kvm-all/*; do
	t=${f##*/}
	if [ -n "$only" ] && ! echo ",$only," | grep -q ",$t,"; then
		continue
	fi
	echo "SLAT-GUEST: conf: begin $t"
	start=$(cut -d' ' -f1 /proc/uptime)
	timeout -s KILL "$limit" "$f" >/tmp/out 2>&1
	rc=$?
	# The lines that say why: counts and refusals from anywhere in the
	# output (get-reg-list's), then the last ones (assertions, skips).
	grep -E 'There are [0-9]+ |Failed to (get|set|reject) ' /tmp/out | head -n 8 |
		sed "s/^/SLAT-GUEST: conf: $t: /"
	tail -n 25 /tmp/out | sed "s/^/SLAT-GUEST: conf: $t: /"
	echo "SLAT-GUEST: conf: end $t exit $rc took $(awk -v s="$start" '{ printf "%.1f", $1 - s }' /proc/uptime) s"
done
if [ "$side" = slat ]; then
	rmmod slat
	echo "SLAT-GUEST: conf: rmmod slat status $?"
fi
dmesg | grep -v 'module verification failed' |
	grep -E 'slat: .*(leak|never deposited|failed|refused|stay pinned)|BUG|WARNING|Oops' |
	sed 's/^/SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER kvm_conf-done uptime $(cut -d' ' -f1 /proc/uptime)"
