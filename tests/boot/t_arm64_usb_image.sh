#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make image` on arm64 booted as a USB stick: QEMU virt (EL2) with edk2 and
# the image on xHCI as its only disk; edk2 finds \EFI\BOOT\BOOTAA64.EFI on
# the stick's ESP, Slat starts Debian's kernel and initramfs from the same
# ESP, the guest's smoke script runs, and Slat reports at power-off.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/usb_image.sh"
usb_image_make aarch64 console=ttyAMA0
usb_image_check_table
boot_qemu_usb aarch64 cortex-a72 "$USB_IMAGE"
usb_image_expect aarch64 console=ttyAMA0
boot_done
