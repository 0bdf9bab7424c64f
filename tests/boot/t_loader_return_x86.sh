#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The next loader returns to Slat (tests/arch/x86/loader.c with the load
# options "return" calls gBS->Exit): Slat's hand-off runs from its copy of
# slat.efi (the loaded image's pages were re-typed and may be gone), so it
# must report the return and power off cleanly through its exit summary,
# never jump back into the original image.
. "$(dirname "$0")/lib.sh"
make -s -C "$BOOT_TOP" archtest >"$BOOT_DIR/make-archtest.out" 2>&1 || {
	cat "$BOOT_DIR/make-archtest.out" >&2
	exit 1
}
printf '%s\n' 'loader  = \arch\loader.efi' 'initrd  =' 'cmdline = return' >"$BOOT_DIR/slat.cfg"
boot_esp x86_64 "$BOOT_DIR/slat.cfg=slat.cfg" "$BOOT_TOP/build/x86_64/arch/loader.efi=arch/loader.efi"
boot_qemu_x86 max
expect_in_order '^slat: firmware continues as the primary VM on 1 CPU\(s\) \(SVM, NPT\)$' \
	'^slat: hand-off runs from a copy at 0x[0-9a-f]+; slat.efi.s pages ' \
	'^slat: starting \\arch\\loader.efi with "return"$' \
	'^ARCHTEST load-options: 14 bytes "return"$' \
	'^ARCHTEST-END 3 verdicts \(returning to the parent image\)$' \
	'^error: slat: \\arch\\loader.efi returned 0x0$' \
	'^slat: powering off \(error\)$' \
	'^slat: exit summary: vm primary power-off after ' \
	'^slat: powering off$'
expect_count 1 '^Slat '
expect_absent 'X64 Exception Type' 'host exception' '^error: ResetSystem returned' 'cannot power off'
expect_exit
boot_done
