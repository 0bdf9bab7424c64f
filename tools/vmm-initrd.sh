#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/vmm-initrd.sh [ARCH] - the primary's initramfs for the slat-vmm tests
# (tests/boot/t_x86_svm_linux_secondary.sh, tests/slow/t_x86_vmm_reference.sh,
# tests/slow/t_arm64_vmm_reference.sh); ARCH x86_64 (the default) or aarch64:
#
#   build/guest/ARCH/initrd-vmm.img = initrd.img (tools/guest.sh, unchanged)
#       followed by a second gzip'd newc archive with
#         /vm/vmlinuz      the same Debian kernel (bzImage; arm64: Image), the VM's
#         /vm/run-vm.sh    boots them with /slat/slat-vmm (tools/vm/run-vm.sh)
#         /vm/initrd.img   the VM's own initramfs: busybox, the virtio-mmio
#                          block and console modules (and virtio-pci, for
#                          QEMU's virtio-blk-pci: tools/qemu-guest.sh), and an /init that prints
#                          "VMM-GUEST: up, N CPUs online ...", counts its
#                          timer interrupts across a 1 s sleep (x86: the
#                          local APIC's, "LOC:"; arm64: "arch_timer"), checks
#                          /dev/vda when slat-vmm gave it a disk (size,
#                          SHA-256, a write the VMM's host reads back),
#                          keeps rewriting buffers in its RAM and checking
#                          their SHA-256 with vmm.migrate (a migration's
#                          proof: tests/guest/qemu_migrate.sh), runs
#                          a shell on the console with vmm.shell (on
#                          /dev/hvc0, slat-vmm's virtio console, with
#                          vmm.console=hvc0 too), and powers the VM off
#                          (reboots it with vmm.reboot)
#
# The kernel unpacks concatenated archives in order, so the normal initramfs
# every other test boots stays as small as it is. Needs build/guest/ARCH/
# from `make guest-ARCH` (tools/guest.sh); uses only cpio and gzip. Rebuilds
# only when an input is newer than the result.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-x86_64}
case "$arch" in
x86_64) busybox=/bin/busybox ;;
aarch64) busybox="$top/build/deps/busybox-static-arm64/bin/busybox" ;;
*)
	echo "vmm-initrd.sh: unknown arch '$arch' (x86_64 or aarch64)" >&2
	exit 2
	;;
esac
out="$top/build/guest/$arch"
result="$out/initrd-vmm.img"

for f in "$out/initrd.img" "$out/vmlinuz" "$busybox"; do
	[ -f "$f" ] || {
		echo "vmm-initrd.sh: $f missing (run 'make guest-$arch' first)" >&2
		exit 1
	}
done
if [ -f "$result" ]; then
	newer=0
	for f in "$0" "$top/tools/vm/run-vm.sh" "$out/initrd.img" "$out/vmlinuz" "$busybox" \
		"$out/modules/modules.order"; do
		[ "$f" -nt "$result" ] && newer=1
	done
	[ "$newer" -eq 0 ] && exit 0
fi

tmp=$(mktemp -d "$out/vmm-initrd.XXXX")
trap 'rm -rf "$tmp"' EXIT

# The VM's initramfs.
inner="$tmp/inner"
mkdir -p "$inner"/{bin,dev,proc,sys,lib/modules}
cp "$busybox" "$inner/bin/busybox"
# virtio-mmio and virtio-blk, in load order (each needs the ones before it).
for m in virtio/virtio_ring virtio/virtio virtio/virtio_mmio block/virtio_blk; do
	cp "$out/modules/kernel/drivers/$m.ko" "$inner/lib/modules/"
done
# virtio-pci (QEMU's -drive if=virtio on arm64 virt: virtio-blk-pci; tests/guest/qemu_slat.sh),
# when the kernel has it as a module; slat-vmm's VMs have no PCI and load it for nothing.
for m in virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci; do
	f="$out/modules/kernel/drivers/virtio/$m.ko"
	[ ! -f "$f" ] || cp "$f" "$inner/lib/modules/"
done
# The virtio console (hvc0, slat-vmm --console virtio), when the kernel has
# it as a module (Debian's cloud kernel: CONFIG_VIRTIO_CONSOLE=m); built in,
# there is nothing to load.
con="$out/modules/kernel/drivers/char/virtio_console.ko"
[ ! -f "$con" ] || cp "$con" "$inner/lib/modules/"
# virtio over PCI, for a PC machine's virtio disk (Debian's QEMU on x86,
# tools/qemu-guest.sh), when the kernel has it as modules.
for m in virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci; do
	f="$out/modules/kernel/drivers/virtio/$m.ko"
	[ ! -f "$f" ] || cp "$f" "$inner/lib/modules/"
done
ln -s busybox "$inner/bin/sh"
cat >"$inner/init" <<'INIT'
#!/bin/sh
# /init of the VM slat-vmm boots (tools/vmm-initrd.sh): one line, then off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
echo "VMM-GUEST: up, $(nproc) CPUs online ($(cat /sys/devices/system/cpu/online)), kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"
# Local timer interrupts (all CPUs) across a one-second sleep, which itself
# only ends through a timer interrupt: x86's local APIC timer ("LOC:"),
# arm64's architected timer (the "arch_timer" line). The per-CPU counts are
# the numbers after the first field, up to the first field that is not one.
loc() {
	awk '/^ *LOC:|arch_timer/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i }
		END { print s + 0 }' /proc/interrupts
}
t0=$(loc)
sleep 1
echo "VMM-GUEST: timer: $(($(loc) - t0)) local timer interrupts in a 1 s sleep"
# x86: IRQ 0, the PIT's (or the HPET's) tick before the local APIC timers
# took over, with its count per CPU and the chip that delivered it (IO-APIC,
# XT-PIC): the 8254 and the irqchip a VMM emulates (t_x86_svm_qemu's -M pc).
irq0=$(grep '^ *0:' /proc/interrupts | tr -s ' ')
[ "$(uname -m)" != x86_64 ] || echo "VMM-GUEST: irq0:${irq0:- none}"
# x86, with vmm.nmi: NMI IPIs. SysRq l has every CPU print its backtrace:
# this one directly, the others from an NMI the kernel sends them (it waits
# up to 10 s for each); the CPUs whose backtrace came, and the NMIs counted.
if grep -q vmm.nmi /proc/cmdline && grep -q '^ *NMI:' /proc/interrupts; then
	echo l >/proc/sysrq-trigger
	bt=$(dmesg | sed -n 's/.*NMI backtrace for cpu \([0-9]*\).*/\1/p' | sort -n | tr '\n' ' ')
	nmis=$(awk '/^ *NMI:/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i }
		END { print s + 0 }' /proc/interrupts)
	echo "VMM-GUEST: NMI backtraces from CPUs ${bt% }; $nmis NMIs"
fi
# The disk (slat-vmm --disk): its size and SHA-256 for the host to compare,
# then a line written at sector 8 that the host reads back after power-off.
for m in virtio_ring virtio virtio_mmio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
	virtio_blk virtio_console; do
	[ -f /lib/modules/$m.ko ] || continue
	insmod /lib/modules/$m.ko || echo "VMM-GUEST: insmod $m failed"
done
n=0
while [ ! -e /sys/block/vda ] && [ $n -lt 20 ]; do
	sleep 0.1
	n=$((n + 1))
done
if [ -e /sys/block/vda ]; then
	echo "VMM-GUEST: disk vda $(cat /sys/block/vda/size) sectors sha256 $(sha256sum /dev/vda | cut -d' ' -f1)"
	tag="vm-wrote-$(cat /proc/sys/kernel/random/uuid)"
	printf '%s\n' "$tag" | dd of=/dev/vda bs=512 seek=8 conv=sync,notrunc,fsync 2>/dev/null
	echo "VMM-GUEST: disk wrote $tag at sector 8, status $?"
else
	echo "VMM-GUEST: no disk"
fi
# vmm.migrate (tests/guest/qemu_migrate.sh): the VM keeps writing its RAM
# while its VMM migrates it. Four 512 KiB buffers in a tmpfs, each with the
# SHA-256 it was written with beside it; every round checks all four, then
# rewrites one from /dev/urandom, and prints one line. A page the migration
# lost (a write the dirty log did not report) shows as a mismatch on the
# VM's other side. "stop" typed on the console ends the loop: a reader in the
# background takes whole lines with a blocking read and leaves /mig/stop.
# (Not `read -t` in the loop: when its time runs out between two bytes of a
# line it has begun, busybox drops what it read, and the next read gets "top":
# the stop typed just after a round's line, as the test types it, was lost
# when the emulators ran slowly.)
if grep -q 'vmm\.migrate' /proc/cmdline; then
	mkdir -p /mig
	mount -t tmpfs -o size=8m tmpfs /mig
	exec 3<&0 # a background job's own stdin would be /dev/null
	{
		while read -r cmd; do
			[ "$cmd" != stop ] || break
		done
		[ "$cmd" != stop ] || : >/mig/stop
	} <&3 &
	r=0 bad=0
	while :; do
		fails=
		for k in 0 1 2 3; do
			[ -f /mig/buf$k ] || continue
			[ "$(sha256sum </mig/buf$k | cut -d' ' -f1)" = "$(cat /mig/sum$k)" ] ||
				fails="$fails buf$k"
		done
		k=$((r % 4))
		dd if=/dev/urandom of=/mig/buf$k bs=64k count=8 2>/dev/null
		sha256sum </mig/buf$k | cut -d' ' -f1 >/mig/sum$k
		if [ -n "$fails" ]; then
			bad=$((bad + 1))
			echo "VMM-GUEST: migrate round $r checksum MISMATCH in$fails"
		else
			echo "VMM-GUEST: migrate round $r ok, buf$k rewritten, at $(cut -d' ' -f1 /proc/uptime)"
		fi
		r=$((r + 1))
		[ ! -e /mig/stop ] || break
	done
	echo "VMM-GUEST: migrate stopped after $r rounds, $bad with a mismatch"
fi
# The shell: on the console (the UART: slat-vmm's stdin), or with
# vmm.console=hvc0 on the virtio console's /dev/hvc0 (then slat-vmm's stdin
# and stdout), which stays open from the "ready" line to the shell's end.
hvc_shell() {
	n=0
	while [ ! -c /dev/hvc0 ] && [ $n -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if [ -c /dev/hvc0 ]; then
		sh -c 'echo "VMM-GUEST: shell ready on $(tty)"; exec sh' </dev/hvc0 >/dev/hvc0 2>&1
	else
		echo "VMM-GUEST: no /dev/hvc0"
	fi
}
if grep -q 'vmm\.shell' /proc/cmdline; then
	if grep -q 'vmm\.console=hvc0' /proc/cmdline; then
		hvc_shell
	else
		echo "VMM-GUEST: shell ready"
		sh # its input is the console: slat-vmm's stdin
	fi
fi
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
install -m 755 "$top/tools/vm/run-vm.sh" "$tmp/extra/vm/run-vm.sh"

# The primary's: the normal archive, then the /vm one.
(cd "$tmp/extra" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -1 >"$tmp/extra.cpio.gz"
cat "$out/initrd.img" "$tmp/extra.cpio.gz" >"$result.tmp"
mv "$result.tmp" "$result"
echo "vmm-initrd: $(du -h "$result" | cut -f1) ($(du -h "$tmp/extra/vm/initrd.img" | cut -f1) VM initramfs)"
