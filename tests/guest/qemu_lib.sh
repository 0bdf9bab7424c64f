# SPDX-License-Identifier: Apache-2.0
# tests/guest/qemu_lib.sh - sourced by the tests that run Debian's own QEMU on
# Slat's /dev/kvm (qemu_slat.sh, qemu_migrate.sh): the QEMU binary, the
# kernel-command-line switches they share, loading slat.ko, and waiting for a
# line of a VM's console.
q=/usr/bin/qemu-system-$(uname -m)
# cmdline_value NAME: the value of NAME=VALUE on the kernel command line.
cmdline_value() {
	sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline
}
# slat.qemu_trace=PATTERN: QEMU trace events (-trace), e.g. kvm_*
QEMU_TRACE=$(cmdline_value 'slat\.qemu_trace')
# slat.irq_trace=N: slat.ko's irq_trace (its last N dmesg lines are shown)
trace=$(cmdline_value 'slat\.irq_trace')
# slat.qemu_timeout=S: the limit of each QEMU's run
qto=$(cmdline_value 'slat\.qemu_timeout')
# slat.qemu_machine=M: QEMU's -M
qm=$(cmdline_value 'slat\.qemu_machine')

# load_slat_ko TEST: insmod slat.ko (unless an earlier test of the same boot
# loaded it: slat.test=A+B); on refusal says so and returns 1.
load_slat_ko() {
	if [ ! -d /sys/module/slat ] && ! insmod /lib/modules/slat.ko ${trace:+irq_trace=$trace} 2>/tmp/insmod.err; then
		echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
		echo "SLAT-GUEST: MARKER $1-refused"
		return 1
	fi
	dmesg | grep 'slat:' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
}

# wait_for PATTERN N [OUT [STOP...]]: N lines of OUT (a VM's console, by
# default /tmp/qemu.out) match PATTERN; gives up (status 1) once a STOP file
# exists (default /tmp/qemu.done: QEMU has ended) or after $wait_ticks tenths
# of a second (default 6000: 10 minutes).
wait_for() {
	pat=$1 want=$2 out=/tmp/qemu.out
	shift 2
	if [ $# -gt 0 ]; then
		out=$1
		shift
	fi
	[ $# -gt 0 ] || set -- /tmp/qemu.done
	n=0
	until [ "$(grep -c "$pat" "$out" 2>/dev/null)" -ge "$want" ]; do
		for f in "$@"; do [ ! -e "$f" ] || return 1; done
		[ $n -lt "${wait_ticks:-6000}" ] || return 1
		sleep 0.1
		n=$((n + 1))
	done
}

# elapsed START: seconds since START (a /proc/uptime reading), one decimal.
elapsed() {
	awk -v a="$1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }'
}
