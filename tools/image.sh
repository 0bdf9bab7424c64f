#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/image.sh ARCH OUT EFI [SRC=ESP_PATH ...] - one GPT disk image for a
# USB stick (`make image`, docs/real-hardware.md): a protective MBR, a GPT
# with one EFI System Partition at 1 MiB, and in it a FAT file system holding
# EFI as the removable-media default loader (\EFI\BOOT\BOOTAA64.EFI or
# \EFI\BOOT\BOOTX64.EFI) and each SRC at ESP_PATH (slat.cfg, the kernel, the
# initramfs: the files `make run` puts on its ESP).
#
# No root and no loop mounts: the FAT is built in a file by tools/emu.sh's
# emu_esp (mkfs.fat + mtools, the same as every emulator ESP), the partition
# table by sgdisk (Debian's gdisk), and the FAT is copied into the partition.
# `sgdisk -v` checks the result (both headers and entry arrays, their CRC32s).
#
# IMAGE_SIGN_KEY=KEY IMAGE_SIGN_CERT=CERT: sign EFI with sbsign first (a PEM
# key, a PEM certificate) and check the signature with sbverify; the ESP then
# holds the signed copy. IMAGE_SIGN_PATHS="ESP_PATH ...": sign these extra
# files the same way (e.g. slat/vmlinuz, the loader Slat starts: the
# firmware's LoadImage verifies it too; a file that has signatures already,
# like Debian's kernel, gets one more).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"

die() {
	echo "image: $*" >&2
	exit 1
}

[ $# -ge 3 ] || die "usage: tools/image.sh ARCH OUT EFI [SRC=ESP_PATH ...]"
arch=$1 out=$2 efi=$3
shift 3
case "$arch" in aarch64 | x86_64) ;; *) die "unknown ARCH '$arch' (aarch64 or x86_64)" ;; esac
[ -f "$efi" ] || die "no EFI image at $efi"
command -v sgdisk >/dev/null || die "sgdisk missing (Debian's gdisk: run tools/deps.sh)"

# The partition starts at 1 MiB (LBA 2048: the usual alignment) and 1 MiB is
# left after it for the backup GPT (33 sectors would do).
SECTOR=512
ESP_FIRST_LBA=2048
TAIL_SECTORS=2048

work="$out.work"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# sign_efi EFI [NAME]: prints the path of the image to put on the ESP (a
# signed copy named NAME when signing).
sign_efi() {
	local src=$1 signed="$work/signed/${2:-$(basename "$1")}"
	if [ -z "${IMAGE_SIGN_KEY:-}" ]; then
		echo "$src"
		return
	fi
	[ -f "$IMAGE_SIGN_KEY" ] && [ -f "${IMAGE_SIGN_CERT:-}" ] ||
		die "signing needs IMAGE_SIGN_KEY and IMAGE_SIGN_CERT files (got '$IMAGE_SIGN_KEY', '${IMAGE_SIGN_CERT:-}')"
	command -v sbsign >/dev/null || die "sbsign missing (Debian's sbsigntool: run tools/deps.sh)"
	mkdir -p "$(dirname "$signed")"
	sbsign --key "$IMAGE_SIGN_KEY" --cert "$IMAGE_SIGN_CERT" --output "$signed" "$src" \
		>"$work/sbsign.out" 2>&1 || { cat "$work/sbsign.out" >&2; die "sbsign failed"; }
	sbverify --cert "$IMAGE_SIGN_CERT" "$signed" >"$work/sbverify.out" 2>&1 ||
		{ cat "$work/sbverify.out" >&2; die "sbverify rejects the signed $src"; }
	echo "image: signed $src with $IMAGE_SIGN_CERT" >&2
	echo "$signed"
}

# esp_cylinders FILE...: the FAT size, in emu_esp's 16 x 63-sector cylinders,
# for these files plus an eighth and 2 MiB for the FAT's own tables and
# cluster slack.
esp_cylinders() {
	local bytes
	bytes=$(stat -c %s "$@" | awk '{ s += $1 } END { print s }')
	bytes=$((bytes + bytes / 8 + 2 * 1024 * 1024))
	echo $(((bytes + 16 * 63 * SECTOR - 1) / (16 * 63 * SECTOR)))
}

# to_sign ESP_PATH: IMAGE_SIGN_PATHS names it.
to_sign() {
	local p
	for p in ${IMAGE_SIGN_PATHS:-}; do
		[ "${p#/}" = "${1#/}" ] && return 0
	done
	return 1
}

loader=$(sign_efi "$efi" slat.efi)
srcs=("$loader")
specs=()
signed_paths=0
for spec in "$@"; do
	src=${spec%%=*} dst=${spec#*=}
	[ "$src" != "$spec" ] || die "extra file '$spec' is not SRC=ESP_PATH"
	[ -f "$src" ] || die "extra file '$src' does not exist"
	if to_sign "$dst"; then
		[ -n "${IMAGE_SIGN_KEY:-}" ] || die "IMAGE_SIGN_PATHS without a key (IMAGE_SIGN_KEY)"
		src=$(sign_efi "$src" "esp/${dst#/}")
		signed_paths=$((signed_paths + 1))
	fi
	srcs+=("$src")
	specs+=("$src=$dst")
done
[ "$signed_paths" -eq "$(echo ${IMAGE_SIGN_PATHS:-} | wc -w)" ] ||
	die "IMAGE_SIGN_PATHS '${IMAGE_SIGN_PATHS:-}': not every path is a file of the ESP"

# The FAT, in a file: the partition's hidden-sectors field says where it starts.
EMU_ESP_CYL=$(esp_cylinders "${srcs[@]}")
EMU_ESP_HIDDEN=$ESP_FIRST_LBA
emu_esp "$work/esp.img" "$arch" "$loader" "${specs[@]}" || die "could not build the FAT file system"
esp_sectors=$(($(stat -c %s "$work/esp.img") / SECTOR))

# The disk: the partition table first (sgdisk writes only its own sectors),
# then the FAT into the partition.
disk="$work/disk.img"
# The partition ends on a MiB boundary too: the FAT may be shorter than it.
part_sectors=$(((esp_sectors + 2047) / 2048 * 2048))
last_lba=$((ESP_FIRST_LBA + part_sectors - 1))
truncate -s $(((last_lba + 1 + TAIL_SECTORS) * SECTOR)) "$disk"
sgdisk --clear --new "1:$ESP_FIRST_LBA:$last_lba" --typecode 1:EF00 \
	--change-name '1:Slat ESP' "$disk" >"$work/sgdisk.out" 2>&1 ||
	{ cat "$work/sgdisk.out" >&2; die "sgdisk could not write the partition table"; }
dd if="$work/esp.img" of="$disk" bs=$SECTOR seek=$ESP_FIRST_LBA conv=notrunc,sparse status=none
# sgdisk says "No problems found" even after it fell back to a valid backup
# header: any warning counts as a rejection too.
sgdisk --verify "$disk" >"$work/verify.out" 2>&1 && grep -q '^No problems found' "$work/verify.out" &&
	! grep -qiE 'error|warning|caution|corrupt|invalid' "$work/verify.out" ||
	{ cat "$work/verify.out" >&2; die "sgdisk --verify rejects $disk"; }
mkdir -p "$(dirname "$out")"
mv -f "$disk" "$out"
echo "image: $out: GPT, ESP $((part_sectors / 2048)) MiB at LBA $ESP_FIRST_LBA," \
	"$(basename "$loader") as \\EFI\\BOOT\\$([ "$arch" = aarch64 ] && echo BOOTAA64.EFI || echo BOOTX64.EFI)"
