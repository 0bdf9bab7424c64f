#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/guest.sh ARCH - fetch Debian's current cloud kernel for ARCH (aarch64 or
# x86_64) and build a busybox-static initramfs for it, under build/guest/ARCH/:
#
#   vmlinuz          the kernel (arm64: raw Image with EFI stub; amd64: bzImage)
#   modules/         the kernel's modules tree (kept for tests that need one)
#   slat/            slat.ko, the test programs and the secondary payload
#                    (tools/linux-build.sh: linux/ against Debian's headers)
#   initrd.img       gzip'd newc cpio: busybox, /init, tests/guest/*.sh,
#                    /lib/modules/slat.ko, /slat/*
#   kernel.version   the package resolved, e.g. linux-image-6.1.0-56-cloud-arm64
#
# The kernel is resolved through the metapackage (linux-image-cloud-ARCH), never a
# pinned ABI number, and downloaded once: reruns only rebuild the initramfs when
# its inputs changed. Nothing from Debian is vendored in the repository.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:?usage: tools/guest.sh aarch64|x86_64}
out="$top/build/guest/$arch"
dl="$top/build/guest/dl"

case "$arch" in
aarch64)
	meta=linux-image-cloud-arm64:arm64
	busybox="$top/build/deps/busybox-static-arm64/bin/busybox"
	;;
x86_64)
	meta=linux-image-cloud-amd64
	busybox=/bin/busybox
	;;
*)
	echo "guest.sh: unknown arch '$arch' (aarch64 or x86_64)" >&2
	exit 2
	;;
esac

log() { printf 'guest: %s\n' "$*"; }

# The versioned package the metapackage depends on right now.
resolve_kernel_package() {
	local pkg
	pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
	if [ -z "$pkg" ]; then
		echo "guest.sh: cannot resolve $meta (run 'apt-get update' as root first?)" >&2
		exit 1
	fi
	echo "$pkg"
}

fetch_kernel() {
	local pkg name deb tmp
	pkg=$(resolve_kernel_package)
	name=${pkg%%:*}
	if [ -f "$out/vmlinuz" ] && [ "$(cat "$out/kernel.version" 2>/dev/null)" = "$name" ]; then
		return 0
	fi
	mkdir -p "$dl" "$out"
	deb=$(ls "$dl/${name}"_*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		log "downloading $pkg (resolved from $meta)"
		(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null)
		deb=$(ls "$dl/${name}"_*.deb | head -1)
	fi
	log "unpacking $(basename "$deb")"
	tmp=$(mktemp -d "$out/unpack.XXXX")
	dpkg-deb -x "$deb" "$tmp"
	cp "$tmp"/boot/vmlinuz-* "$out/vmlinuz"
	rm -rf "$out/modules"
	mv "$tmp"/lib/modules/* "$out/modules"
	rm -rf "$tmp"
	echo "$name" >"$out/kernel.version"
}

build_initramfs() {
	local inputs stamp root
	inputs=("$top/tools/guest.sh" "$top/tools/guest-init.sh" "$top"/tests/guest/*.sh "$busybox" "$out"/slat/*
		"$out"/kvm-selftests/*)
	stamp="$out/initrd.img"
	if [ -f "$stamp" ]; then
		local newer=0 f
		for f in "${inputs[@]}"; do [ "$f" -nt "$stamp" ] && newer=1; done
		[ "$newer" -eq 0 ] && return 0
	fi
	[ -x "$busybox" ] || {
		echo "guest.sh: $busybox missing (run tools/deps.sh)" >&2
		exit 1
	}
	log "building initramfs for $arch"
	root=$(mktemp -d "$out/root.XXXX")
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,tests,usr/bin,usr/sbin}
	cp "$busybox" "$root/bin/busybox"
	cp "$top/tools/guest-init.sh" "$root/init"
	cp "$top"/tests/guest/*.sh "$root/tests/"
	# x86: Debian's cpuid.ko and msr.ko give the guest tests /dev/cpu/N/{cpuid,msr}.
	local m
	for m in cpuid msr; do
		if [ -f "$out/modules/kernel/arch/x86/kernel/$m.ko" ]; then
			mkdir -p "$root/lib/modules"
			cp "$out/modules/kernel/arch/x86/kernel/$m.ko" "$root/lib/modules/"
		fi
	done
	# x86: Linux's own KVM for AMD (irqbypass.ko, kvm.ko, kvm-amd.ko), the
	# baseline of tools/bench-kvm-api.sh when the kernel runs without Slat.
	local k
	for k in virt/lib/irqbypass arch/x86/kvm/kvm arch/x86/kvm/kvm-amd; do
		if [ -f "$out/modules/kernel/$k.ko" ]; then
			mkdir -p "$root/lib/modules/kvm"
			cp "$out/modules/kernel/$k.ko" "$root/lib/modules/kvm/"
		fi
	done
	# slat.ko and what runs over /dev/slat (tools/linux-build.sh).
	mkdir -p "$root/lib/modules" "$root/slat"
	cp "$out/slat/slat.ko" "$root/lib/modules/"
	cp "$out/slat/guest.bin" "$out"/slat/slat-* "$root/slat/"
	# Linux's KVM selftests, built from Debian's linux-source (tools/kvm-selftests.sh)
	mkdir -p "$root/kvm"
	cp "$out"/kvm-selftests/* "$root/kvm/"
	chmod 755 "$root/init" "$root"/tests/*.sh
	# The busybox applets used by /init and the tests; the rest come from --install.
	ln -s busybox "$root/bin/sh"
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
		gzip -9 >"$out/initrd.img.tmp"
	mv "$out/initrd.img.tmp" "$out/initrd.img"
	rm -rf "$root"
}

fetch_kernel
bash "$top/tools/linux-build.sh" "$arch"
bash "$top/tools/kvm-selftests.sh" "$arch"
build_initramfs
log "$arch ready: $(cat "$out/kernel.version"), $(du -h "$out/initrd.img" | cut -f1) initramfs"
