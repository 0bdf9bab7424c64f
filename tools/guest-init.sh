#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# /init of Slat's guest initramfs (built by tools/guest.sh).
# Kernel command line:
#   slat.test=NAME   run /tests/NAME.sh, print its exit status, power off
#   slat.test=A+B    run /tests/A.sh, then /tests/B.sh (each says its status)
#   (none)           interactive busybox shell on the console; power off on exit
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo "SLAT-GUEST: init up on $(uname -m), kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"

tests=$(sed -n 's/.*slat\.test=\([A-Za-z0-9_+-]*\).*/\1/p' /proc/cmdline)
if [ -n "$tests" ]; then
	for test in $(echo "$tests" | tr '+' ' '); do
		if [ -f "/tests/$test.sh" ]; then
			sh "/tests/$test.sh"
			echo "SLAT-GUEST: test $test exit $?"
		else
			echo "SLAT-GUEST: no test named '$test' in /tests"
		fi
	done
else
	echo "SLAT-GUEST: interactive shell; 'exit' or Ctrl-D powers the machine off"
	echo "SLAT-GUEST: Slat's own log: insmod /lib/modules/slat.ko; cat /dev/slat_log" \
		"(docs/real-hardware.md, section 5)"
	setsid cttyhack sh -l
fi
# Let the serial console send what the test printed last: a write() to the
# console returns once the tty has the bytes, and poweroff -f would drop what
# the UART driver still holds (a test's last lines and marker). The drivers'
# transmit counters (/proc/tty/driver/*) stop moving when it is sent; the wait
# is bounded in guest time (at most 100 polls of 50 ms).
drain_console() {
	last= i=0
	while [ $i -lt 100 ]; do
		now=$(cat /proc/tty/driver/* 2>/dev/null | grep -o 'tx:[0-9]*' | tr '\n' ' ')
		[ -n "$last" ] && [ "$now" = "$last" ] && return
		last=$now
		i=$((i + 1))
		sleep 0.05
	done
}
sync
drain_console
poweroff -f
