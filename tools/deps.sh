#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/deps.sh - install the Debian packages that building, running, testing and
# benchmarking Slat need, and only those that are missing.
#
# Idempotent: a second run installs nothing and prints one line. When not run as
# root and something is missing, it prints the exact apt command and fails.
#
# Also fetches gnu-efi's arm64 headers into build/deps/ (the arm64 gnu-efi package
# conflicts with the amd64 one, so it is unpacked, never installed).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
deps_dir="$top/build/deps"

# Native (amd64) packages. Keep in sync with README.md "What gets installed".
packages=(
	clang lld llvm make                 # build slat.efi and the hosted code
	gnu-efi                             # UEFI headers (x86_64)
	binutils-aarch64-linux-gnu          # arm64 objdump for inspecting images
	libcmocka-dev                       # unit-test runner
	libclang-rt-14-dev                  # ASan/UBSan/TSan runtimes for clang
	qemu-system-x86 qemu-system-arm     # emulators (always -accel tcg)
	ovmf qemu-efi-aarch64               # UEFI firmware images
	bochs bochsbios vgabios             # the only VT-x emulator here
	mtools dosfstools                   # FAT ESP images without mounting
	gdisk fdisk                         # sgdisk: make image's GPT (USB stick); fdisk -l checks it
	sbsigntool openssl                  # make image SIGN=1: Secure Boot signature
	cpio gzip busybox-static            # guest initramfs
	device-tree-compiler                # inspecting the arm64 DTB
	ca-certificates                     # apt-get download over https mirrors
	python3 python3-matplotlib          # benchmark plots
	util-linux                          # script, unshare (Bochs runs)
	gcc libc6-dev                       # the primary's slat.ko and static test programs
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross # the same for arm64
)
# arm64 packages unpacked (never installed: they would replace the amd64 ones)
# into build/deps/<name>-arm64, for arm64 guests and the arm64 EFI headers.
arm64_unpacked=(gnu-efi busybox-static)

log() { printf 'deps: %s\n' "$*"; }

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	else
		log "not root; run this yourself and retry:"
		printf '  sudo %s\n' "$*"
		exit 1
	fi
}

apt_updated=0
apt_update_once() {
	if [ "$apt_updated" -eq 0 ]; then
		log "apt-get update"
		as_root apt-get update -qq
		apt_updated=1
	fi
}

ensure_arm64_arch() {
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		log "adding the arm64 foreign architecture (for arm64 guest packages)"
		as_root dpkg --add-architecture arm64
		apt_updated=0
	fi
}

install_missing() {
	local missing=()
	for p in "$@"; do is_installed "$p" || missing+=("$p"); done
	if [ "${#missing[@]}" -gt 0 ]; then
		log "installing: ${missing[*]}"
		apt_update_once
		as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "${missing[@]}"
	fi
	return 0
}

# Unpack one arm64 package into build/deps/NAME-arm64 (once).
unpack_arm64() {
	local name=$1 dest="$deps_dir/$1-arm64"
	[ -f "$dest/.unpacked" ] && return 0
	log "fetching $name:arm64 into ${dest#"$top"/}"
	mkdir -p "$deps_dir/dl"
	(cd "$deps_dir/dl" && rm -f "${name}"_*_arm64.deb &&
		{ apt-get download -q -o APT::Sandbox::User=root "$name:arm64" >/dev/null 2>&1 ||
			{ apt_update_once && apt-get download -q -o APT::Sandbox::User=root "$name:arm64" >/dev/null; }; })
	rm -rf "$dest"
	dpkg-deb -x "$deps_dir/dl/${name}"_*_arm64.deb "$dest"
	touch "$dest/.unpacked"
}

main() {
	local before
	before=$(date +%s)
	ensure_arm64_arch
	install_missing "${packages[@]}"
	for p in "${arm64_unpacked[@]}"; do unpack_arm64 "$p"; done
	log "all dependencies present ($(($(date +%s) - before)) s)"
}

main "$@"
