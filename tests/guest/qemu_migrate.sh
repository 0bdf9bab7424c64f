#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A running VM migrates between two of Debian's QEMU processes on Slat's
# /dev/kvm (slat.test=qemu_migrate, issue 36; tests/boot/t_x86_svm_qemu_migrate.sh,
# and after qemu_slat.sh in the same boot in tests/boot/t_arm64_qemu.sh).
# QEMU B is started with -incoming on a unix socket, then QEMU A boots the VM
# of /vm/ (tools/vmm-initrd.sh) with vmm.migrate: the VM keeps rewriting
# buffers in its RAM and checking their checksums, one line a round. After two
# rounds A's monitor is told to migrate to B; QEMU copies the RAM while the VM
# runs, then again the pages the dirty log (KVM_GET_DIRTY_LOG /
# KVM_CLEAR_DIRTY_LOG) reports written, until what is left fits in the
# downtime. Once A's info migrate says completed, A quits; the VM goes on in B,
# and after three rounds there "stop" is typed on its console: it prints its
# count of mismatched rounds and powers off. A page the dirty log lost is a
# checksum mismatch (or a crash) in B.
echo "SLAT-GUEST: qemu_migrate on $(uname -m), kernel $(uname -r)"
. /tests/qemu_lib.sh
echo "SLAT-GUEST: $($q --version | head -1)"
load_slat_ko qemu_migrate || exit 1
case "$(uname -m)" in
aarch64) machine="-M virt,gic-version=3,its=off -cpu host" con=ttyAMA0 ;;
*) machine="-M ${qm:-q35,kernel-irqchip=split} -cpu host -vga none -no-reboot" con=ttyS0 ;;
esac
sock=/tmp/mig.sock
rm -f /tmp/a.* /tmp/b.* /tmp/mig.*
mkfifo /tmp/a.in /tmp/b.in

# run_qemu NAME ARGS...: one QEMU with the VM, its console and monitor
# (-nographic: Ctrl-A c switches) on /tmp/NAME.in and /tmp/NAME.out, each
# output line shown with "qemu NAME:" before it; /tmp/NAME.done once it ended.
run_qemu() {
	name=$1
	shift
	{
		# shellcheck disable=SC2086 # $machine is words
		timeout -s KILL ${qto:-600} $q ${QEMU_TRACE:+-trace "$QEMU_TRACE"} -accel kvm $machine \
			-smp 2 -m 128 -nographic -nic none -kernel /vm/vmlinuz -initrd /vm/initrd.img \
			-append "console=$con panic=-1 quiet vmm.migrate" -pidfile /tmp/$name.pid "$@" \
			</tmp/$name.in 2>&1
		echo $? >/tmp/$name.rc
	} | tee /tmp/$name.out | sed "s/^/SLAT-GUEST: qemu $name: /"
	touch /tmp/$name.done
}

# A's monitor (its stdout is A's stdin; fd 3 the console): after two rounds,
# migrate (detached), then info migrate every 2 s until completed or failed
# (at most 5 minutes), the statistics, quit.
exec 3>&1
drive_a() {
	wait_for 'VMM-GUEST: migrate round' 2 /tmp/a.out /tmp/a.done || return
	printf '\001c'
	sleep 1
	printf 'migrate_set_parameter downtime-limit 1000\n'
	cut -d' ' -f1 /proc/uptime >/tmp/mig.start
	printf 'migrate -d unix:%s\n' $sock
	n=0
	until grep -Eq 'Migration status: (completed|failed|cancelled)' /tmp/a.out; do
		[ $n -lt 150 ] && [ ! -e /tmp/a.done ] || break
		sleep 2
		printf 'info migrate\n'
		n=$((n + 1))
	done
	echo "SLAT-GUEST: migration took $(elapsed "$(cat /tmp/mig.start)") s (A's monitor polled $n times)" >&3
	grep -q 'Migration status: completed' /tmp/a.out || touch /tmp/mig.failed
	printf 'info migrate\n'
	sleep 1
	printf 'quit\n'
}

# B's console: once A has ended, three rounds within 5 minutes (or
# slat.qemu_b_wait tenths of a second), then "stop"; the VM powers off. If the
# migration failed or B's VM did not go on (a lost page can crash or hang
# it), where B's threads wait in the kernel is shown, and B's monitor is told
# to show its vCPUs' registers and quit.
drive_b() {
	until [ -e /tmp/a.done ] || [ -e /tmp/b.done ]; do sleep 0.5; done
	wait_ticks=$(cmdline_value 'slat\.qemu_b_wait')
	wait_ticks=${wait_ticks:-3000}
	if [ ! -e /tmp/mig.failed ] &&
		wait_for 'VMM-GUEST: migrate round' 3 /tmp/b.out /tmp/b.done; then
		printf 'stop\n'
	else
		for t in /proc/"$(cat /tmp/b.pid 2>/dev/null)"/task/*; do
			echo "SLAT-GUEST: qemu B thread $(cat "$t/comm" 2>/dev/null) waits in $(cat "$t/wchan" 2>/dev/null)" >&3
		done
		printf '\001c'
		sleep 1
		printf 'info registers -a\n'
		sleep 2
		printf 'quit\n'
	fi
	until [ -e /tmp/b.done ]; do sleep 0.5; done # the fifo stays open until B ends
}

start=$(cut -d' ' -f1 /proc/uptime)
drive_b >/tmp/b.in &
run_qemu b -incoming unix:$sock &
n=0
until [ -S $sock ] || [ -e /tmp/b.done ] || [ $n -ge 600 ]; do
	sleep 0.1
	n=$((n + 1))
done
echo "SLAT-GUEST: QEMU B listens on $sock: $([ -S $sock ] && echo yes || echo no)"
drive_a >/tmp/a.in &
run_qemu a
wait
echo "SLAT-GUEST: qemu A exit $(cat /tmp/a.rc), qemu B exit $(cat /tmp/b.rc), after $(elapsed "$start") s"

# What B's VM said: rounds that go on from A's (the same VM, not a new boot),
# none with a mismatch, and its own count of mismatched rounds.
last_a=$(sed -n 's/.*VMM-GUEST: migrate round \([0-9]*\) .*/\1/p' /tmp/a.out | tail -1)
first_b=$(sed -n 's/.*VMM-GUEST: migrate round \([0-9]*\) .*/\1/p' /tmp/b.out | head -1)
rounds_b=$(grep -c 'VMM-GUEST: migrate round [0-9]* ok' /tmp/b.out)
booted_b=$(grep -c 'Linux version' /tmp/b.out)
if [ -n "$last_a" ] && [ -n "$first_b" ] && [ "$first_b" -gt "$last_a" ] && [ "$booted_b" -eq 0 ]; then
	echo "SLAT-GUEST: the VM went on in B: A's last round $last_a, B's first $first_b, $rounds_b rounds ok in B"
else
	echo "SLAT-GUEST: the VM did NOT go on in B: A's last round '$last_a', B's first '$first_b', B booted $booted_b times"
fi
# The statistics of A's last info migrate.
tr -d '\r' </tmp/a.out | tac | sed '/Migration status: completed/q' | tac |
	grep -Eo '(total time|downtime|transferred ram|normal|duplicate|dirty sync count): .*' |
	sed 's/^/SLAT-GUEST: migration stats: /'
dmesg | grep 'slat' | tail -${trace:-10} | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER qemu_migrate-done"
