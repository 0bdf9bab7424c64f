#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on AMD SVM (QEMU -cpu max, TCG): tests/arch/x86/hv.c runs as
# Slat's loader in the primary VM and acts as a mini-VMM through VMMCALL
# (docs/secondary-vms-x86.md). Not differential: the payload's verdicts are
# asserted here, each one the answer the ABI (core/hcall_abi.h) promises.
. "$(dirname "$0")/lib.sh"

make -s -C "$BOOT_TOP" archtest >"$BOOT_DIR/make-archtest.out" 2>&1 || {
	cat "$BOOT_DIR/make-archtest.out" >&2
	echo "boot: building the payloads failed" >&2
	exit 1
}
cfg="$BOOT_DIR/slat.cfg"
printf 'loader  = \\arch\\hv.efi\ninitrd  =\ncmdline =\n' >"$cfg"
boot_esp x86_64 "$cfg=slat.cfg" "$BOOT_TOP/build/x86_64/arch/hv.efi=arch/hv.efi"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-150} boot_qemu_x86 max
. "$(dirname "$0")/hv_x86_expect.sh"
expect '^ARCHTEST hv-smp: 1 CPU, skipped$'
boot_done
