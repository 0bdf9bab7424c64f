#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make image ARCH=x86_64` booted as a USB stick under AMD SVM: QEMU
# -cpu qemu64,+svm,+npt (SVM and nested paging, but no 1 GiB pages, as on
# some real CPUs) with OVMF and the image on xHCI as its only disk; OVMF finds
# \EFI\BOOT\BOOTX64.EFI on the stick's ESP, Slat maps the primary with 2 MiB
# NPT leaves, continues OVMF as the primary VM and starts Debian's kernel and
# initramfs from the same ESP, the guest's smoke script runs, and Slat reports
# at power-off.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/usb_image.sh"
usb_image_make x86_64 console=ttyS0
usb_image_check_table
boot_qemu_usb x86_64 qemu64,+svm,+npt "$USB_IMAGE"
usb_image_expect x86_64 console=ttyS0
expect '^slat: firmware continues as the primary VM on 1 CPU\(s\) \(SVM, NPT\)$'
expect_in_order '^svm: SVM yes$' '^svm: NPT yes, ' \
	'^svm: no 1 GiB pages \(CPUID Page1GB clear\): NPT maps with 2 MiB leaves$' \
	'^slat: NPT leaves: 0 x 1G, [1-9][0-9]* x 2M, [0-9]+ x 4K; [0-9]+ table pages; '
boot_done
