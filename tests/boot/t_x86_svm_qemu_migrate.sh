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
r='VMM-GUEST: migrate round [0-9]+'
expect_in_order '^SLAT-GUEST: qemu_migrate on x86_64' \
	'^SLAT-GUEST: QEMU emulator version 7\.2' \
	'^SLAT-GUEST: QEMU B listens on /tmp/mig\.sock: yes' \
	'^SLAT-GUEST: qemu a: .*smp: Brought up 1 node, 2 CPUs' \
	"^SLAT-GUEST: qemu a: $r ok" \
	"^SLAT-GUEST: qemu a: $r ok" \
	'^SLAT-GUEST: migration took [0-9.]+ s' \
	"^SLAT-GUEST: qemu b: $r ok" \
	"^SLAT-GUEST: qemu b: $r ok" \
	"^SLAT-GUEST: qemu b: $r ok" \
	'^SLAT-GUEST: qemu b: VMM-GUEST: migrate stopped after [0-9]+ rounds, 0 with a mismatch' \
	'^SLAT-GUEST: qemu A exit 0, qemu B exit 0' \
	'^SLAT-GUEST: the VM went on in B: ' \
	'^SLAT-GUEST: migration stats: dirty sync count: ([2-9]|[1-9][0-9]+)$' \
	'^SLAT-GUEST: MARKER qemu_migrate-done' \
	'^slat: secondary VMs: 2 created, 2 destroyed, 0 alive' \
	'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
expect 'Migration status: completed'
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86|hv):' 'host exception' \
	'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'NOT go on' 'insmod .* failed' \
	'Migration status: failed' 'qemu-system-x86_64: '
expect_exit
boot_done
