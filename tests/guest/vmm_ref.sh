#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slat-vmm on Linux's own KVM (slat.test=vmm_ref, tests/slow/t_x86_vmm_reference.sh):
# this kernel, booted by QEMU without firmware or Slat on an SVM CPU, loads
# Linux's KVM (kvm-amd) and runs /slat/slat-vmm on the same Debian kernel
# (/vm/vmlinuz) with a tiny busybox initramfs (/vm/initrd.img), both from
# initrd-vmm.img (tools/vmm-initrd.sh). The VM's console lines are prefixed
# "SLAT-GUEST: vm: ". Then slat-vmm's refusals of bad arguments (status 2).
echo "SLAT-GUEST: vmm_ref on $(uname -m), kernel $(uname -r)"
if ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: MARKER vmm_ref-refused"
	exit 1
fi
if [ ! -f /vm/vmlinuz ] || [ ! -f /vm/initrd.img ]; then
	echo "SLAT-GUEST: no /vm/vmlinuz or /vm/initrd.img (boot initrd-vmm.img: tools/vmm-initrd.sh)"
	exit 1
fi
vmm=/slat/slat-vmm
start=$(cut -d' ' -f1 /proc/uptime)
# A hang is a failure (137). The VM's kernel: serial console, few messages
# (loglevel 6 still shows its banner), reboot at once on a panic (status 3).
{
	timeout -s KILL 2400 $vmm --kernel /vm/vmlinuz --initrd /vm/initrd.img --mem 256M --cpus 2 \
		--cmdline "console=ttyS0 loglevel=6 panic=-1" -v 2>&1
	echo $? >/tmp/vmm.rc
} | sed 's/^/SLAT-GUEST: vm: /'
end=$(cut -d' ' -f1 /proc/uptime)
echo "SLAT-GUEST: vmm exit $(cat /tmp/vmm.rc) after $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"

# A guest reboot ends slat-vmm with status 3 (Linux, hardware-reduced and
# without EFI, jumps to the real-mode reset vector, where slat-vmm's stub
# writes 0xfe to the i8042's port 0x64); one vCPU this time.
{
	timeout -s KILL 2400 $vmm --kernel /vm/vmlinuz --initrd /vm/initrd.img --mem 128M --cpus 1 \
		--cmdline "console=ttyS0 loglevel=4 panic=-1 vmm.reboot" 2>&1
	echo $? >/tmp/vmm.rc
} | sed 's/^/SLAT-GUEST: vm: /'
echo "SLAT-GUEST: vmm reboot-run exit $(cat /tmp/vmm.rc)"

# bad EXPECTED ARGS...: one refused run, its status and its one-line message.
bad() {
	want=$1
	shift
	$vmm "$@" >/tmp/bad.out 2>&1
	rc=$?
	verdict=ok
	[ "$rc" -eq "$want" ] && [ "$(wc -l </tmp/bad.out)" -eq 1 ] || verdict=WRONG
	echo "SLAT-GUEST: vmm bad-arg $verdict: exit $rc: $(head -1 /tmp/bad.out)"
}
k=/vm/vmlinuz
bad 2 --kernel /vm/missing
bad 2 --kernel /vm/initrd.img
bad 2 --kernel $k --mem 16M
bad 2 --kernel $k --mem 64M
bad 2 --kernel $k --initrd /vm/vmlinuz --mem 80M
bad 2 --kernel $k --initrd /vm/missing
bad 2 --kernel $k --cpus 0
bad 2 --kernel $k --cpus 5
bad 2 --kernel $k --mem lots
bad 2 --kernel $k --bogus
bad 2 --initrd /vm/initrd.img
echo "SLAT-GUEST: MARKER vmm_ref-done"
