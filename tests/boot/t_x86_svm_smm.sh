#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 primary VM under AMD SVM with firmware that uses SMM (QEMU -cpu max,
# TCG, 2 CPUs, -M q35,smm=on, Debian's OVMF_CODE_4M.secboot.fd from a secure
# flash, an empty variable store): OVMF's variable services run in SMM, so
# SMIs arrive while the primary runs in guest mode. Slat intercepts them and
# takes them in host mode (arch/x86/svm/exit.c, svm_take_host_smi); the
# primary boots Debian's kernel to its marker and powers off through Slat's
# summary. Before that, VMRUN failed after the first exit from SMM code
# (docs/real-hardware.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
vars="$BOOT_DIR/OVMF_VARS_4M.fd"
cp /usr/share/OVMF/OVMF_VARS_4M.fd "$vars" && chmod u+w "$vars"
export EMU_X86_MACHINE=q35,smm=on EMU_X86_FW_SECURE=1 EMU_X86_FW_VARS="$vars"
export EMU_X86_FW_CODE=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd
x86_svm_primary_boot
x86_svm_primary_expect
# OVMF's SMM build raises SMIs after the hand-off (variable writes): each one
# was intercepted and taken in host mode.
expect '^slat: SMIs taken in host mode: [1-9][0-9]* on [12] CPU\(s\)$'
boot_done
