#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_x86_svm_qemu with one more short QEMU run on -M q35 (the in-kernel
# irqchip, QEMU's HPET, the ICH9 chipset) beside make test's -M pc runs:
# about 30 s of emulation that make test leaves out for its time.
. "$(dirname "$0")/../boot/lib.sh"
EMU_QEMU_MORE=${EMU_QEMU_MORE:-q35+pc,kernel-irqchip=split}
. "$(dirname "$0")/../boot/qemu_vmm.sh"
x86_svm_qemu_test
