# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the USB-stick boot tests (sourced by t_*_usb_image.sh after
# lib.sh): `make image` writes the GPT disk image a user writes to a stick
# (here with the guest's quickest script, slat.test=smoke, in its slat.cfg),
# the host's partitioning tools check its table, and QEMU starts THAT file as
# a USB mass-storage device on xHCI, with no other disk, no -kernel and no
# boot order: the firmware must find the ESP and its removable-media loader
# (\EFI\BOOT\BOOTAA64.EFI / BOOTX64.EFI) by itself.
#
#   usb_image_make ARCH CONSOLE [MAKE ARGS...]
#                  build/test/boot/NAME/slat.img by `make image`, with a
#                  slat.cfg whose cmdline is "CONSOLE panic=-1 slat.test=smoke"
#   usb_image_check_table  sgdisk --verify and fdisk -l accept the image
#   usb_image_expect ARCH CONSOLE   Slat ran from the stick, started the kernel
#                  and initramfs from it, and printed its summary at power-off

USB_IMAGE="$BOOT_DIR/slat.img"

usb_image_make() {
	local arch=$1 console=$2 cfg="$BOOT_DIR/slat.cfg"
	shift 2
	{
		echo '# written by tests/boot/usb_image.sh'
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = $console panic=-1 slat.test=smoke"
	} >"$cfg"
	rm -f "$USB_IMAGE"
	make -s -C "$BOOT_TOP" image ARCH="$arch" IMAGE="$USB_IMAGE" IMAGE_CFG="$cfg" "$@" \
		>"$BOOT_DIR/image.out" 2>&1 || {
		cat "$BOOT_DIR/image.out" >&2
		echo "boot: make image ARCH=$arch failed" >&2
		exit 1
	}
	grep '^image: ' "$BOOT_DIR/image.out"
}

# The partition table as the host's tools read it: sgdisk checks both GPT
# headers, both entry arrays and their CRC32s (it still ends with "No
# problems found" after it fell back to a good backup header, so any warning
# fails); fdisk (util-linux, another implementation) must list one EFI
# System partition at 1 MiB without complaint. Firmware is more forgiving
# (edk2 boots from the backup header), so these checks are the table's test.
usb_image_check_table() {
	BOOT_CHECKS=$((BOOT_CHECKS + 2))
	sgdisk --verify "$USB_IMAGE" >"$BOOT_DIR/sgdisk-verify.out" 2>&1 &&
		grep -q '^No problems found' "$BOOT_DIR/sgdisk-verify.out" &&
		! grep -qiE 'error|warning|caution|corrupt|invalid' "$BOOT_DIR/sgdisk-verify.out" ||
		_boot_fail "sgdisk --verify rejects the image: $(tr '\n' ' ' <"$BOOT_DIR/sgdisk-verify.out")"
	fdisk -l "$USB_IMAGE" >"$BOOT_DIR/fdisk.out" 2>&1
	grep -q '^Disklabel type: gpt$' "$BOOT_DIR/fdisk.out" &&
		! grep -qi 'corrupt\|invalid\|wrong' "$BOOT_DIR/fdisk.out" &&
		[ "$(grep -cE '^\S+slat\.img1 +2048 +[0-9]+ +[0-9]+ +[0-9.]+M EFI System$' "$BOOT_DIR/fdisk.out")" -eq 1 ] ||
		_boot_fail "fdisk -l does not list one EFI System partition at LBA 2048: $(tr '\n' ' ' <"$BOOT_DIR/fdisk.out")"
}

usb_image_expect() {
	local arch=$1 console=$2
	# edk2's boot manager found the stick by itself (a boot option it made for
	# the USB disk) and started Slat from it.
	expect_in_order '^BdsDxe: starting Boot[0-9A-F]+ "UEFI QEMU QEMU USB HARDDRIVE [^"]*" from .*/USB\(0x0,0x0\)$' \
		"^Slat [^ ]+ \\($arch\\), a bare-metal hypervisor\$" \
		'^slat: virtualization usable$' \
		'^slat: slat.cfg read \(0 lines ignored\): loader \\slat\\vmlinuz, initrd \\slat\\initrd.img' \
		'^slat: initrd \\slat\\initrd.img, [0-9]+ KiB, offered via LoadFile2$' \
		"^slat: starting \\\\slat\\\\vmlinuz with \"$console panic=-1 slat.test=smoke\"\$" \
		"^SLAT-GUEST: init up on $arch" \
		'^SLAT-GUEST: MARKER smoke-ok uptime [0-9.]+$' \
		'^slat: exit summary: vm primary power-off after [0-9]+\.[0-9]+ s uptime, 1 vCPUs?$' \
		'^slat: exits: [0-9]+ total$' \
		'^slat: powering off$'
	expect_count 1 '^Slat '
	expect_absent 'Synchronous Exception' 'X64 Exception Type' '^error: ' 'Kernel panic'
	expect_exit
}
