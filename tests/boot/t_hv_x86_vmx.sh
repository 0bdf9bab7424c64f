#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on Intel VT-x (Bochs): the mini-VMM payload of t_hv_x86_svm.sh
# (tests/arch/x86/hv.c) through VMCALL, with the same expected verdicts.
. "$(dirname "$0")/lib.sh"

make -s -C "$BOOT_TOP" archtest >"$BOOT_DIR/make-archtest.out" 2>&1 || {
	cat "$BOOT_DIR/make-archtest.out" >&2
	echo "boot: building the payloads failed" >&2
	exit 1
}
cfg="$BOOT_DIR/slat.cfg"
printf 'loader  = \\arch\\hv.efi\ninitrd  =\ncmdline =\n' >"$cfg"
boot_esp x86_64 "$cfg=slat.cfg" "$BOOT_TOP/build/x86_64/arch/hv.efi=arch/hv.efi"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-420} boot_bochs corei7_skylake_x
. "$(dirname "$0")/hv_x86_expect.sh"
expect '^ARCHTEST hv-smp: 1 CPU, skipped$'
boot_done
