#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secure Boot on arm64 (Debian's AAVMF_CODE/VARS.snakeoil.fd: Secure Boot on,
# the snakeoil test key in PK, KEK and db), each image from `make image` as a
# USB stick (tests/boot/usb_image.sh), three boots (the first is also arm64's
# USB-stick test: its partition table checked, the stick booted to the
# guest's marker; x86's is t_x86_svm_usb_image):
#   signed    make image SIGN=1 SIGN_ALSO=slat/vmlinuz: the firmware starts
#             Slat, Slat's LoadImage of the kernel (the firmware verifies it)
#             succeeds, the guest runs and Slat reports at power-off
#   kernel    make image SIGN=1: Slat starts; the kernel carries only Debian's
#             signature (not in db): Slat asks the firmware's LoadImage before
#             it takes anything, the firmware refuses, Slat says so in one line
#             and returns to the firmware, whose boot manager goes on (the
#             next option, the UEFI shell, is refused too) to its menu
#   unsigned  make image: the firmware refuses slat.efi itself, Slat never
#             prints, the boot manager ends at its menu
# The two refused runs end at the firmware's "Press any key" menu, where the
# firmware waits for a key: the test stops QEMU there (by its pid file).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/usb_image.sh"

vars="$BOOT_DIR/AAVMF_VARS.snakeoil.fd"
pidfile="$BOOT_DIR/qemu.pid"
menu_note="$BOOT_DIR/stopped-at-menu"
menu_line='BdsDxe: Press any key to enter the Boot Manager Menu.'

# stop_at_menu: waits (at most 170 s) for the firmware's menu line in the
# serial log, then stops the QEMU this test started (its pid file).
stop_at_menu() {
	local i
	for ((i = 0; i < 170; i++)); do
		if [ -s "$pidfile" ] && grep -aqF "$menu_line" "$BOOT_LOG" 2>/dev/null; then
			echo "firmware menu after ${i}s" >"$menu_note"
			kill -TERM "$(cat "$pidfile")"
			return
		fi
		sleep 1
	done
}

# boot_secure NAME [menu]: boots $USB_IMAGE on a fresh copy of the snakeoil
# variable store; keeps the serial log as serial-NAME.log. With "menu", QEMU
# is stopped once the firmware waits at its menu.
boot_secure() {
	local watcher=""
	cp /usr/share/AAVMF/AAVMF_VARS.snakeoil.fd "$vars"
	rm -f "$BOOT_LOG" "$pidfile" "$menu_note"
	if [ "${2:-}" = menu ]; then
		stop_at_menu &
		watcher=$!
	fi
	EMU_ARM64_FW_CODE=/usr/share/AAVMF/AAVMF_CODE.snakeoil.fd EMU_ARM64_FW_VARS=$vars \
		boot_qemu_usb aarch64 cortex-a72 "$USB_IMAGE" -pidfile "$pidfile"
	if [ -n "$watcher" ]; then
		# QEMU may have stopped by itself (a run that never reached the menu)
		kill "$watcher" 2>/dev/null
		wait "$watcher" 2>/dev/null
	fi
	cp "$BOOT_LOG" "$BOOT_DIR/serial-$1.log"
}

# expect_menu_stop: the run ended at the firmware's menu (nothing booted).
expect_menu_stop() {
	expect_literal "$menu_line"
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	[ -f "$menu_note" ] || _boot_fail "the firmware never waited at its menu (status $BOOT_RC)"
}
refused='0x80000000000000(0f|1a)' # EFI_ACCESS_DENIED or EFI_SECURITY_VIOLATION

# 1. Everything signed with a key in db: boots as without Secure Boot.
usb_image_make aarch64 console=ttyAMA0 SIGN=1 SIGN_ALSO=slat/vmlinuz
usb_image_check_table
boot_secure signed
usb_image_expect aarch64 console=ttyAMA0
expect_literal 'EFI stub: UEFI Secure Boot is enabled.' 'slat: Secure Boot: the firmware accepts \slat\vmlinuz'

# 2. Slat signed, the kernel as Debian signs it.
usb_image_make aarch64 console=ttyAMA0 SIGN=1
boot_secure kernel menu
expect_in_order '^BdsDxe: starting Boot[0-9A-F]+ "UEFI QEMU QEMU USB HARDDRIVE ' \
	'^Slat [^ ]+ \(aarch64\), a bare-metal hypervisor$' \
	'^slat: virtualization usable$' \
	"^error: slat: Secure Boot: the firmware refused \\\\slat\\\\vmlinuz \\(LoadImage $refused: no signature it trusts\\); sign it with a key in the firmware's db \\(make image SIGN=1 SIGN_ALSO=slat/vmlinuz, docs/real-hardware.md\\)\$" \
	"^slat: nothing taken; returning $refused to the firmware\$" \
	"^BdsDxe: failed to start Boot[0-9A-F]+ \"UEFI QEMU QEMU USB HARDDRIVE [^\"]*\" from .*: (Access Denied|Security Violation)\$" \
	'^BdsDxe: No bootable option or device was found.$'
# edk2's boot manager starts the stick's default loader once more after every
# boot option failed: two starts of Slat, each refused the same way. Each
# error line is there twice: Slat's UART and the firmware's ConOut (Slat's
# screen mirror), which AAVMF's terminal sends to the same PL011.
expect_count 2 '^Slat '
expect_count 4 '^error: slat: Secure Boot: the firmware refused '
expect_count 2 '^slat: nothing taken; returning '
expect_count 4 '^error: '
expect_absent 'EFI stub' 'SLAT-GUEST' '^slat: region ' 'dropped to EL1' 'powering off' \
	'Synchronous Exception' 'exception at EL2'
expect_menu_stop

# 3. Nothing signed: the firmware refuses Slat.
usb_image_make aarch64 console=ttyAMA0
boot_secure unsigned menu
expect_in_order '^BdsDxe: failed to load Boot[0-9A-F]+ "UEFI QEMU QEMU USB HARDDRIVE [^"]*" from .*/USB\(0x0,0x0\): (Access Denied|Security Violation)$' \
	'^BdsDxe: No bootable option or device was found.$'
expect_absent '^Slat ' '^slat: '
expect_menu_stop
boot_done
