#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_hv_x86_svm.sh on 2 CPUs: the mini-VMM's verdicts again, plus a vCPU that
# spins on the AP while the boot CPU deletes the memslot it reads: the DELETE
# returns only through Slat's kick (the AP has no interrupts to exit on), and
# the vCPU's next access is an MMIO exit. The AP idles in the primary's
# guest mode at the first DEPOSIT: the unmap of the deposited pages kicks it
# and waits for its flush.
. "$(dirname "$0")/lib.sh"

make -s -C "$BOOT_TOP" archtest >"$BOOT_DIR/make-archtest.out" 2>&1 || {
	cat "$BOOT_DIR/make-archtest.out" >&2
	echo "boot: building the payloads failed" >&2
	exit 1
}
cfg="$BOOT_DIR/slat.cfg"
printf 'loader  = \\arch\\hv.efi\ninitrd  =\ncmdline =\n' >"$cfg"
boot_esp x86_64 "$cfg=slat.cfg" "$BOOT_TOP/build/x86_64/arch/hv.efi=arch/hv.efi"
EMU_SMP=2 BOOT_TIMEOUT=${BOOT_TIMEOUT:-150} boot_qemu_x86 max
. "$(dirname "$0")/hv_x86_expect.sh"
expect_in_order '^ARCHTEST hv-smp: 2 CPUs$' \
	'^ARCHTEST hv-smp-slot-add: 0$' \
	'^ARCHTEST hv-smp-regs: 0$' \
	'^ARCHTEST hv-smp-ap-running: yes$' \
	'^ARCHTEST hv-smp-delete: 0$' \
	'^ARCHTEST hv-smp-ap-exit: mmio gpa 0x10000$'
expect '^x86: primary SLAT shootdown: CPU 1 acknowledged'
expect_absent 'never left the primary to flush'
boot_done
