#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/linux-build.sh ARCH - build what runs in the primary's Linux (linux/):
# slat.ko against Debian's headers for the guest kernel tools/guest.sh fetched,
# the static test programs and the secondary guest payloads, into
# build/guest/ARCH/slat/. Called by tools/guest.sh before the initramfs.
#
# Headers: linux-headers-<ver>-cloud-<arch>, linux-headers-<ver>-common and
# the build host's linux-kbuild-6.1 (amd64) are downloaded with apt-get
# download and unpacked (dpkg-deb -x, never installed) into one root under
# build/guest/kbuild/, where the headers' relative `scripts` link finds the
# amd64 kbuild tools for both architectures. Make (linux/linux.mk) rebuilds
# only what changed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:?usage: tools/linux-build.sh aarch64|x86_64}
out="$top/build/guest/$arch"
dl="$top/build/guest/dl"
root="$top/build/guest/kbuild"

log() { printf 'linux-build: %s\n' "$*"; }

case "$arch" in
aarch64) debarch=arm64 kbarch=arm64 cross=aarch64-linux-gnu- ;;
x86_64) debarch=amd64 kbarch=x86 cross= ;;
*)
	echo "linux-build.sh: unknown arch '$arch'" >&2
	exit 2
	;;
esac

name=$(cat "$out/kernel.version") # linux-image-6.1.0-56-cloud-arm64
kver=${name#linux-image-}	  # 6.1.0-56-cloud-arm64
abi=${kver%-cloud-*}		  # 6.1.0-56
series=${abi%.*}		  # 6.1

# Unpack one package (downloaded once) into the kbuild root, once.
unpack() {
	local pkg=$1 base=${1%%:*} deb
	[ -f "$root/.unpacked-$base" ] && return 0
	mkdir -p "$dl" "$root"
	deb=$(ls "$dl/${base}"_*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		log "downloading $pkg"
		(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null)
		deb=$(ls "$dl/${base}"_*.deb | head -1)
	fi
	dpkg-deb -x "$deb" "$root"
	touch "$root/.unpacked-$base"
}

unpack "linux-headers-$kver:$debarch"
unpack "linux-headers-$abi-common"
unpack "linux-kbuild-$series:amd64"
kdir="$root/usr/src/linux-headers-$kver"
# The headers' Makefile includes the common tree by its installed path.
sed -i "s|^include /usr/src/|include $root/usr/src/|" "$kdir/Makefile"

make -s -f "$top/linux/linux.mk" TOP="$top" OUT="$out/slat" KDIR="$kdir" \
	KARCH="$kbarch" CROSS="$cross" GARCH="$arch"
log "$arch: slat.ko for $kver (vermagic $(strings "$out/slat/slat.ko" | sed -n 's/^vermagic=//p')), $(ls "$out/slat" | grep -vc '\.ko$') other files"
