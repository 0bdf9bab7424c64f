#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/qemu-guest.sh [ARCH] - the primary's initramfs with Debian 12's own QEMU in it
# (issue 34: Debian's unmodified QEMU on Slat's /dev/kvm); ARCH aarch64 (the
# default) or x86_64:
#
#   build/guest/ARCH/initrd-qemu.img = initrd-vmm.img (tools/vmm-initrd.sh: the
#       normal initramfs and /vm/ with the VM's kernel and initramfs), followed
#       by a third gzip'd newc archive with
#         /usr/bin/qemu-system-ARCH   from Debian's qemu-system-arm (arm64) or
#                                     qemu-system-x86 (amd64), unmodified
#         /lib/..., /usr/lib/...      the closure of the shared libraries it
#                                     needs (the ELF NEEDED entries, followed
#                                     through every library), from the Debian
#                                     packages that provide them, at their
#                                     Debian paths
#         the dynamic loader          at the binary's PT_INTERP path
#         /usr/share/qemu/            the data files QEMU needs: none for the
#                                     tests' machines (-nic none, -kernel), so
#                                     the directory is empty
#
# The packages are downloaded once with `apt-get download PKG:DEBARCH` into
# build/guest/dl/qemu-DEBARCH/ (never committed) and unpacked there. The
# package that provides a library is the one the build machine's dpkg names
# for that soname (Debian 12's packages have the same names on every
# architecture); failing that, the libraries are looked for in the Depends of
# the packages fetched so far, one level at a time. The normal initrd.img and
# initrd-vmm.img every other test boots stay as they are. Rebuilds only when an
# input is newer than the result.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-aarch64}
case "$arch" in
aarch64)
	debarch=arm64
	qpkg=qemu-system-arm
	;;
x86_64)
	debarch=amd64
	qpkg=qemu-system-x86
	;;
*)
	echo "qemu-guest.sh: unknown arch '$arch' (aarch64 or x86_64)" >&2
	exit 2
	;;
esac
qbin=usr/bin/qemu-system-$arch
out="$top/build/guest/$arch"
dl="$top/build/guest/dl/qemu-$debarch"
result="$out/initrd-qemu.img"
log() { printf 'qemu-guest: %s\n' "$*"; }

bash "$top/tools/vmm-initrd.sh" "$arch" >/dev/null
mkdir -p "$dl/deb" "$dl/root"

# fetch PKG: download PKG:DEBARCH once and unpack it into $dl/root.
fetch() {
	local pkg=$1 deb
	[ -f "$dl/deb/$pkg.done" ] && return 0
	deb=$(ls "$dl/deb/${pkg}"_*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		log "downloading $pkg:$debarch"
		(cd "$dl/deb" && apt-get download -q -o APT::Sandbox::User=root "$pkg:$debarch" >/dev/null) || {
			echo "qemu-guest.sh: apt-get download $pkg:$debarch failed (run 'apt-get update' as root first?)" >&2
			exit 1
		}
		deb=$(ls "$dl/deb/${pkg}"_*.deb | head -1)
	fi
	dpkg-deb -x "$deb" "$dl/root"
	touch "$dl/deb/$pkg.done"
}

# The Depends (and Pre-Depends) of PKG:DEBARCH, package names only.
depends() {
	apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$1:$debarch" 2>/dev/null |
		awk '$1 ~ /^(Pre)?Depends:$/ { n = $2; sub(/:.*/, "", n); gsub(/[<>]/, "", n); print n }' |
		sort -u
}

# The NEEDED sonames of an ELF file.
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# Where a soname is in $dl/root (the loader's multiarch directories), or nothing.
libdirs="lib/$arch-linux-gnu usr/lib/$arch-linux-gnu lib usr/lib"
find_lib() {
	local d
	for d in $libdirs; do
		if [ -e "$dl/root/$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
	return 1
}

fetch "$qpkg"
[ -x "$dl/root/$qbin" ] || {
	echo "qemu-guest.sh: $qpkg has no $qbin" >&2
	exit 1
}
interp=$(readelf -l "$dl/root/$qbin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
interp=${interp#/}
fetched=("$qpkg")

# The closure: every soname the binary or a library in the set needs.
declare -A have=() tried=()
while :; do
	files=("$qbin")
	missing=()
	grew=0
	for s in "${!have[@]}"; do files+=("${have[$s]}"); done
	for f in "${files[@]}"; do
		for s in $(needed "$dl/root/$f"); do
			[ -n "${have[$s]:-}" ] && continue
			if p=$(find_lib "$s"); then
				have[$s]=$p
				grew=1
			else
				missing+=("$s")
			fi
		done
	done
	[ ${#missing[@]} -eq 0 ] && [ "$grew" -eq 0 ] && break
	[ ${#missing[@]} -eq 0 ] && continue
	progress=0
	for s in $(printf '%s\n' "${missing[@]}" | sort -u); do
		# The build machine's package for this soname, if it has one.
		pkg=$(dpkg -S "*/$(uname -m)-linux-gnu/$s" 2>/dev/null | grep -v -- '-cross' |
			sed -n '1s/[:,].*//p' || true)
		if [ -n "$pkg" ] && [ -z "${tried[$pkg]:-}" ]; then
			tried[$pkg]=1
			fetch "$pkg"
			fetched+=("$pkg")
			progress=1
		fi
	done
	if [ "$progress" -eq 0 ]; then
		# One more level of the fetched packages' library Depends.
		for p in "${fetched[@]}"; do
			for d in $(depends "$p"); do
				case "$d" in lib* | zlib*) ;; *) continue ;; esac
				[ -n "${tried[$d]:-}" ] && continue
				tried[$d]=1
				fetch "$d"
				fetched+=("$d")
				progress=1
			done
		done
	fi
	[ "$progress" -eq 1 ] || {
		echo "qemu-guest.sh: no package found for: ${missing[*]}" >&2
		exit 1
	}
done
# The loader (libc6's, fetched with libc.so.6).
[ -e "$dl/root/$interp" ] || {
	echo "qemu-guest.sh: the dynamic loader /$interp is in none of the packages" >&2
	exit 1
}

if [ -f "$result" ]; then
	newer=0
	for f in "$0" "$out/initrd-vmm.img" "$dl/root/$qbin"; do
		[ "$f" -nt "$result" ] && newer=1
	done
	[ "$newer" -eq 0 ] && exit 0
fi

tmp=$(mktemp -d "$out/qemu-initrd.XXXX")
trap 'rm -rf "$tmp"' EXIT
# copy REL: $dl/root/REL to $tmp/root/REL with its symlink chain resolved to
# the file itself (the initramfs has no need for the links' other names).
copy() {
	mkdir -p "$tmp/root/$(dirname "$1")"
	cp -L "$dl/root/$1" "$tmp/root/$1"
}
copy "$qbin"
for s in "${!have[@]}"; do copy "${have[$s]}"; done
copy "$interp"
mkdir -p "$tmp/root/usr/share/qemu"
# x86: the firmware a PC machine loads even with -kernel: SeaBIOS (in
# /usr/share/seabios, on Debian QEMU's firmware path)
# (bios-256k.bin), the option ROM that boots -kernel (linuxboot_dma.bin) and
# the local APIC's TPR-patching ROM every KVM APIC registers (kvmvapic.bin);
# the tests run with -vga none and -nic none, so no VGA or network ROMs.
if [ "$arch" = x86_64 ]; then
	for p in qemu-system-data seabios; do
		[ -f "$dl/deb/$p.done" ] || fetch "$p"
	done
	for f in usr/share/seabios/bios-256k.bin usr/share/qemu/linuxboot_dma.bin \
		usr/share/qemu/kvmvapic.bin; do
		copy "$f"
	done
fi
(cd "$tmp/root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -6 >"$tmp/qemu.cpio.gz"
cat "$out/initrd-vmm.img" "$tmp/qemu.cpio.gz" >"$result.tmp"
mv "$result.tmp" "$result"
log "$(du -h "$result" | cut -f1) ($qpkg $(dpkg-deb -f "$(ls "$dl/deb/${qpkg}"_*.deb | head -1)" Version), ${#have[@]} libraries from $(ls "$dl"/deb/*.done | wc -l) packages)"
