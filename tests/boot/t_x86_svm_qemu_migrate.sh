#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A running VM migrates between two of Debian's QEMU processes on Slat's
# /dev/kvm, AMD SVM (issue 36; QEMU -cpu max, 2 CPUs, 2 GiB, OVMF + slat.efi):
# in the primary's Linux, QEMU 7.2 (tools/qemu-guest.sh) B waits with
# -incoming unix:/tmp/mig.sock, QEMU A boots the VM of /vm/ (-smp 2 -m 128,
# q35 with the split irqchip) with vmm.migrate: the VM keeps rewriting
# buffers in its RAM and checking their SHA-256 (tools/vmm-initrd.sh); A's
# monitor migrates it to B while it writes (tests/guest/qemu_migrate.sh),
# which goes on with every buffer intact: dirty logging end to end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu_vmm.sh"
qemu_vmm_boot_x86 "console=ttyS0 panic=-1 quiet slat.test=qemu_migrate${EMU_QEMU_EXTRA:+ $EMU_QEMU_EXTRA}"
qemu_migrate_expect x86_64 2
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86|hv):' 'host exception' \
	'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'NOT go on' 'insmod .* failed' \
	'Migration status: failed' 'qemu-system-x86_64: '
expect_exit
boot_done
