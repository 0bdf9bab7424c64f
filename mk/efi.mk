# SPDX-License-Identifier: Apache-2.0
# slat.efi for aarch64 and x86_64 (clang + lld-link, direct PE). Filled in by the
# foundation work; interface used elsewhere: EFI_IMAGES, EFI_CC, efi_cflags,
# EFI_SRCS_aarch64, EFI_SRCS_x86_64.
EFI_CC := clang
EFI_IMAGES :=
efi_cflags =
