#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secure Boot on x86 under AMD SVM (QEMU -cpu max, TCG, 1 CPU): Debian's
# OVMF_CODE_4M.snakeoil.fd (an SMM build: -M q35,smm=on, secure flash) with a
# copy of OVMF_VARS_4M.snakeoil.fd (Secure Boot on, the snakeoil test key in
# PK, KEK and db); the stick from `make image SIGN=1 SIGN_ALSO=slat/vmlinuz`:
# the firmware starts the signed Slat, the firmware's LoadImage accepts the
# signed kernel, the guest runs while OVMF's variable services raise SMIs
# (taken in host mode, docs/svm-primary.md "SMIs and SMM"), and Slat reports
# at power-off. The refusals (unsigned Slat, kernel not in db) are arm64's
# test (t_arm64_secureboot), the firmware's own logic on both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/usb_image.sh"
vars="$BOOT_DIR/OVMF_VARS_4M.snakeoil.fd"
cp /usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd "$vars" && chmod u+w "$vars"
export EMU_X86_MACHINE=q35,smm=on EMU_X86_FW_SECURE=1 EMU_X86_FW_VARS="$vars"
export EMU_X86_FW_CODE=/usr/share/OVMF/OVMF_CODE_4M.snakeoil.fd
usb_image_make x86_64 console=ttyS0 SIGN=1 SIGN_ALSO=slat/vmlinuz
boot_qemu_usb x86_64 max "$USB_IMAGE"
usb_image_expect x86_64 console=ttyS0
expect_literal 'EFI stub: UEFI Secure Boot is enabled.' 'slat: Secure Boot: the firmware accepts \slat\vmlinuz'
expect '^slat: SMIs taken in host mode: [1-9][0-9]* on 1 CPU\(s\)$'
boot_done
