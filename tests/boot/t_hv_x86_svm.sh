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
# Two CPUs: the AP idles in the primary, so the unmap of deposited pages
# must kick it out of guest mode and wait for its flush.
EMU_SMP=2 BOOT_TIMEOUT=${BOOT_TIMEOUT:-150} boot_qemu_x86 max
. "$(dirname "$0")/hv_x86_expect.sh"
# The AP was in guest mode at a DEPOSIT: kicked, and its flush waited for.
expect '^x86: primary SLAT shootdown: CPU 1 acknowledged'
expect_absent 'never left the primary to flush'
expect '^slat: firmware continues as the primary VM on 2 CPU'

boot_done
