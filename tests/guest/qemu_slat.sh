#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Debian's own QEMU on Slat's /dev/kvm (slat.test=qemu_slat, issue 34,
# tests/boot/t_arm64_qemu.sh, t_x86_svm_qemu.sh; on Linux's KVM
# tests/slow/t_arm64_qemu_reference.sh, t_x86_qemu_reference.sh): the primary's Linux loads slat.ko and runs
# Debian 12's unmodified qemu-system-ARCH 7.2 (tools/qemu-guest.sh) with
# -accel kvm on the VM kernel and initramfs of /vm/ (tools/vmm-initrd.sh),
# two vCPUs and a virtio disk. The VM's init checks its CPUs, its timer and
# the disk. It starts a shell on the console, where a command is typed; the
# monitor's system_reset reboots the VM, which does it all again and is then
# powered off from its shell (arm64: tests/boot/t_arm64_qemu.sh; x86:
# tests/boot/t_x86_svm_qemu.sh). This side compares the disk's checksum (the
# first boot's) and reads back the line the VM wrote last. x86 with
# slat.qemu_more=M2+M3...: then a shorter QEMU run on each -M M (other
# machines or irqchips) whose VM does its checks and powers itself off, its
# console prefixed "qemu2: ", "qemu3: "...
echo "SLAT-GUEST: qemu_slat on $(uname -m), kernel $(uname -r)"
. /tests/qemu_lib.sh
echo "SLAT-GUEST: $($q --version | head -1)"
# slat.qemu_kvm=linux (tests/slow/t_*_qemu_reference.sh): the same run on
# Linux's own KVM, in a kernel booted without Slat.
if [ "$(cmdline_value 'slat\.qemu_kvm')" = linux ]; then
	if ! sh /tests/linux_kvm.sh; then
		echo "SLAT-GUEST: MARKER qemu_slat-refused"
		exit 1
	fi
	echo "SLAT-GUEST: /dev/kvm from Linux's KVM"
else
	load_slat_ko qemu_slat || exit 1
fi
disk=/tmp/disk1.img
dd if=/dev/urandom of=$disk bs=1M count=4 2>/dev/null
want=$(sha256sum $disk | cut -d' ' -f1)
# The machine and irqchip from slat.qemu_machine= (arm64's default
# virt,gic-version=3,its=off; x86's q35 with the split irqchip: the LAPICs in
# slat.ko, the PIC, PIT and I/O APIC in QEMU); x86 without VGA, and with
# -no-reboot only on the second run (it would turn the monitor's
# system_reset into a power-off).
case "$(uname -m)" in
aarch64) machine="-M ${qm:-virt,gic-version=3,its=off} -cpu host" con=ttyAMA0 ;;
*) machine="-M ${qm:-q35,kernel-irqchip=split} -cpu host -vga none" con=ttyS0 ;;
esac
# QEMU's stdin (-nographic: the serial console and, after Ctrl-A c, the
# monitor): a command typed at the VM's shell, the monitor's info registers
# and system_reset,
# then the same once the VM is up again, and a power-off.
feed() {
	wait_for 'VMM-GUEST: shell ready' 1 || return
	printf '%s\n' 'echo "VMM-SHELL: $((6 * 7)) from the console of a VM with $(nproc) CPUs"'
	wait_for '^VMM-SHELL: 42 from .* CPUs' 1 || return
	sleep 1 # the line and the prompt out before the monitor's banner
	printf '\001c'
	sleep 1
	printf 'info registers\n' # vCPU 0's state through KVM_GET_ONE_REG
	sleep 3
	printf 'system_reset\n'
	sleep 1
	printf '\001c'
	wait_for 'VMM-GUEST: shell ready' 2 || return
	printf '%s\n' 'echo "VMM-SHELL: $((6 * 7)) again after system_reset"' 'poweroff -f'
}
rm -f /tmp/qemu.in /tmp/qemu.out /tmp/qemu.done
mkfifo /tmp/qemu.in
feed >/tmp/qemu.in &
# run_vm NAME MACHINE-ARGS APPEND: one QEMU run, its console and monitor in
# /tmp/NAME.out and on the serial line prefixed "NAME: ", its input
# /tmp/qemu.in; says its exit status and time.
run_vm() {
	start=$(cut -d' ' -f1 /proc/uptime)
	# shellcheck disable=SC2086 # $2 is words
	{
		timeout -s KILL ${qto:-900} $q ${QEMU_TRACE:+-trace "$QEMU_TRACE"} -accel kvm $2 -smp 2 -m 256 -nographic -nic none \
			-kernel /vm/vmlinuz -initrd /vm/initrd.img -append "console=$con panic=-1 loglevel=7 $3" \
			-drive file=$disk,if=virtio,format=raw </tmp/qemu.in 2>&1
		echo $? >"/tmp/$1.rc"
	} | tee "/tmp/$1.out" | sed "s/^/SLAT-GUEST: $1: /"
	echo "SLAT-GUEST: $1 exit $(cat "/tmp/$1.rc") after $(elapsed "$start") s"
}
run_vm qemu "$machine" vmm.shell
touch /tmp/qemu.done
wait
got=$(sed -n 's/.*VMM-GUEST: disk vda [0-9]* sectors sha256 \([0-9a-f]*\).*/\1/p' /tmp/qemu.out | head -1)
if [ -n "$got" ] && [ "$got" = "$want" ]; then
	echo "SLAT-GUEST: disk checksum matches the image's"
else
	echo "SLAT-GUEST: disk checksum MISMATCH: VM '$got', image '$want'"
fi
wrote=$(sed -n 's/.*VMM-GUEST: disk wrote \(vm-wrote-[0-9a-f-]*\) at sector 8.*/\1/p' /tmp/qemu.out | tail -1)
back=$(dd if=$disk bs=512 skip=8 count=1 2>/dev/null | head -1 | tr -d '\000')
if [ -n "$wrote" ] && [ "$back" = "$wrote" ]; then
	echo "SLAT-GUEST: the VM's write is in the image"
else
	echo "SLAT-GUEST: disk write MISMATCH: VM '$wrote', image '$back'"
fi
# slat.qemu_more=M1+M2...: one more short run per machine, qemu2, qemu3, ...
n=2
for m in $(cmdline_value 'slat\.qemu_more' | tr '+' ' '); do
	: >/tmp/qemu.in & # no input: the fifo's writer closes at once
	run_vm qemu$n "-M $m -cpu host -vga none -no-reboot" ""
	wait
	n=$((n + 1))
done
dmesg | grep 'slat' | tail -${trace:-20} | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER qemu_slat-done"
