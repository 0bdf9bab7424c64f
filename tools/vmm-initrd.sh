#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/vmm-initrd.sh - the primary's initramfs for the slat-vmm tests
# (tests/boot/t_x86_svm_linux_secondary.sh, tests/slow/t_x86_vmm_reference.sh), x86_64:
#
#   build/guest/x86_64/initrd-vmm.img = initrd.img (tools/guest.sh, unchanged)
#       followed by a second gzip'd newc archive with
#         /vm/vmlinuz      the same Debian bzImage, the VM's kernel
#         /vm/initrd.img   the VM's own initramfs: busybox and an /init that
#                          prints "VMM-GUEST: up, N CPUs online ...", counts
#                          its local timer interrupts across a 1 s sleep and
#                          powers the VM off (reboots it with vmm.reboot
#                          on its command line)
#
# The kernel unpacks concatenated archives in order, so the normal initramfs
# every other test boots stays as small as it is. Needs build/guest/x86_64/
# from `make guest-x86_64` (tools/guest.sh); uses only cpio and gzip. Rebuilds
# only when an input is newer than the result.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/guest/x86_64"
busybox=/bin/busybox
result="$out/initrd-vmm.img"

for f in "$out/initrd.img" "$out/vmlinuz" "$busybox"; do
	[ -f "$f" ] || {
		echo "vmm-initrd.sh: $f missing (run 'make guest-x86_64' first)" >&2
		exit 1
	}
done
if [ -f "$result" ]; then
	newer=0
	for f in "$0" "$out/initrd.img" "$out/vmlinuz" "$busybox"; do
		[ "$f" -nt "$result" ] && newer=1
	done
	[ "$newer" -eq 0 ] && exit 0
fi

tmp=$(mktemp -d "$out/vmm-initrd.XXXX")
trap 'rm -rf "$tmp"' EXIT

# The VM's initramfs.
inner="$tmp/inner"
mkdir -p "$inner"/{bin,dev,proc,sys}
cp "$busybox" "$inner/bin/busybox"
ln -s busybox "$inner/bin/sh"
cat >"$inner/init" <<'INIT'
#!/bin/sh
# /init of the VM slat-vmm boots (tools/vmm-initrd.sh): one line, then off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "VMM-GUEST: up, $(nproc) CPUs online ($(cat /sys/devices/system/cpu/online)), kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"
# Local APIC timer interrupts (all CPUs) across a one-second sleep, which
# itself only ends through a timer interrupt.
loc() { awk '/LOC:/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' /proc/interrupts; }
t0=$(loc)
sleep 1
echo "VMM-GUEST: timer: $(($(loc) - t0)) local timer interrupts in a 1 s sleep"
if grep -q 'vmm\.reboot' /proc/cmdline; then
	echo "VMM-GUEST: rebooting"
	reboot -f
fi
poweroff -f
INIT
chmod 755 "$inner/init"
mkdir -p "$tmp/extra/vm"
(cd "$inner" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -9 >"$tmp/extra/vm/initrd.img"
cp "$out/vmlinuz" "$tmp/extra/vm/vmlinuz"

# The primary's: the normal archive, then the /vm one.
(cd "$tmp/extra" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -1 >"$tmp/extra.cpio.gz"
cat "$out/initrd.img" "$tmp/extra.cpio.gz" >"$result.tmp"
mv "$result.tmp" "$result"
echo "vmm-initrd: $(du -h "$result" | cut -f1) ($(du -h "$tmp/extra/vm/initrd.img" | cut -f1) VM initramfs)"
