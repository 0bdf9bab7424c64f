#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One VM's life under Debian's QEMU 7.2, timed, with its exits per reason
# (slat.test=qemu_bench, tools/bench-qemu-vmm.sh, issue 34's benchmark): on
# Slat's /dev/kvm (slat.ko) or, with slat.qemu_kvm=linux, on Linux's own KVM
# in a kernel booted without Slat. The VM is tests/guest/qemu_slat.sh's
# (the same machine, -smp 2 -m 256, the virtio disk, /vm/'s kernel and
# initramfs): it boots, checks its CPUs, timer and disk and starts its shell;
# then QEMU's monitor prints the VM's and each vCPU's statistics (`info
# stats`: KVM_GET_STATS_FD on both systems) and the shell powers the VM off.
# Printed, one line each (SLAT-BENCH-QEMU):
#   boot_s      QEMU's start to the VM's "shell ready" line
#   off_s       "poweroff -f" typed to QEMU's exit
#   exit_s      QEMU's start to its exit (the monitor's pause included)
# (QEMU's output, with the monitor's statistics, is on the serial line,
# prefixed "qemu: ": tools/bench_qemu_log.py reads them) and, on Linux's
# KVM, the histograms of the kvm_exit and kvm_userspace_exit tracepoints over
# the whole run (hardware exit reasons; exits that went out to QEMU).
echo "SLAT-GUEST: qemu_bench on $(uname -m), kernel $(uname -r)"
. /tests/qemu_lib.sh
echo "SLAT-GUEST: $($q --version | head -1)"
sys=slat
if [ "$(cmdline_value 'slat\.qemu_kvm')" = linux ]; then
	sys=kvm
	if ! sh /tests/linux_kvm.sh; then
		echo "SLAT-GUEST: MARKER qemu_bench-refused"
		exit 1
	fi
	echo "SLAT-GUEST: /dev/kvm from Linux's KVM"
else
	load_slat_ko qemu_bench || exit 1
fi
disk=/tmp/disk1.img
dd if=/dev/urandom of=$disk bs=1M count=4 2>/dev/null
case "$(uname -m)" in
aarch64) machine="-M ${qm:-virt,gic-version=3,its=off} -cpu host" con=ttyAMA0 ;;
*) machine="-M ${qm:-pc,hpet=off} -cpu host -vga none" con=ttyS0 ;;
esac

# KVM's exits per hardware reason and its exits to QEMU, counted in the
# kernel by histogram triggers (they outlive the VM; the per-VM debugfs
# files do not).
tr_dir=/sys/kernel/tracing
hist_on() {
	mount -t tracefs nodev $tr_dir 2>/dev/null
	case "$(uname -m)" in
	aarch64) key='ret,esr_ec' ;;
	*) key='exit_reason' ;;
	esac
	echo "hist:keys=$key:sort=hitcount.descending:size=256" >$tr_dir/events/kvm/kvm_exit/trigger &&
		echo 'hist:keys=reason:sort=hitcount.descending' >$tr_dir/events/kvm/kvm_userspace_exit/trigger ||
		echo "SLAT-GUEST: bench: no kvm tracepoint histograms"
}
hist_show() {
	for ev in kvm_exit kvm_userspace_exit; do
		grep -E '^\{|^Totals|^ *Hits' $tr_dir/events/kvm/$ev/hist 2>/dev/null |
			sed "s/^/SLAT-GUEST: hist $ev: /"
	done
}
[ $sys = kvm ] && hist_on

rm -f /tmp/qemu.in /tmp/qemu.out /tmp/qemu.done /tmp/bench.*
mkfifo /tmp/qemu.in
# stamp NAME: the primary's uptime now, in /tmp/bench.NAME
stamp() { cut -d' ' -f1 /proc/uptime >"/tmp/bench.$1"; }
# QEMU's stdin: at the shell, the monitor (Ctrl-A c) for the statistics of
# the VM and of both vCPUs, back to the console, and a power-off.
feed() {
	wait_for 'VMM-GUEST: shell ready' 1 || return
	stamp ready
	printf '\001c'
	sleep 1
	printf '%s\n' 'info stats vm' 'info stats vcpu' 'cpu 1' 'info stats vcpu'
	sleep 3
	printf '\001c'
	sleep 1
	stamp off
	printf '%s\n' 'poweroff -f'
}
feed >/tmp/qemu.in &
stamp start
# shellcheck disable=SC2086 # $machine is words
timeout -s KILL ${qto:-1500} $q -accel kvm $machine -smp 2 -m 256 -nographic -nic none \
	-kernel /vm/vmlinuz -initrd /vm/initrd.img -append "console=$con panic=-1 loglevel=7 vmm.shell" \
	-drive file=$disk,if=virtio,format=raw </tmp/qemu.in >/tmp/qemu.out 2>&1
rc=$?
stamp end
touch /tmp/qemu.done
wait
sed 's/^/SLAT-GUEST: qemu: /' /tmp/qemu.out
echo "SLAT-GUEST: qemu exit $rc"
if [ $rc = 0 ] && [ -f /tmp/bench.ready ] && [ -f /tmp/bench.off ]; then
	awk -v s="$(cat /tmp/bench.start)" -v r="$(cat /tmp/bench.ready)" -v o="$(cat /tmp/bench.off)" \
		-v e="$(cat /tmp/bench.end)" -v sys=$sys -v a="$(uname -m)" 'BEGIN {
		printf "SLAT-BENCH-QEMU {\"arch\":\"%s\",\"system\":\"%s\",\"boot_s\":%.2f,\"off_s\":%.2f,\"exit_s\":%.2f}\n",
			a, sys, r - s, e - o, e - s }'
fi
[ $sys = kvm ] && hist_show
echo "SLAT-GUEST: MARKER qemu_bench-done"
