#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 QEMU -cpu max (TCG): AMD SVM with NPT, 16 ASIDs and vGIF, but none of
# NRIPS, VMCB clean bits, flush-by-ASID, decode assists, pause filter, AVIC.
. "$(dirname "$0")/lib.sh"
boot_qemu_x86 max
expect_slat_report x86_64 EFI_SUCCESS
expect_literal 'cpu: vendor AuthenticAMD' \
	'CPUID 0x40000000 vendor "TCGTCGTCGTCG"' \
	'svm: SVM yes' \
	'svm: revision 1, 16 ASIDs, VM_CR 0x0 (SVMDIS no, LOCK no)' \
	'svm: NPT yes, NRIPS no, VMCB clean bits no, flush-by-ASID no, decode assists no (CPUID 0x8000000A EDX 0x10010001)' \
	'pause filter no, pause threshold no, AVIC no, VMSAVE virt no, vGIF yes' \
	'vmx: VMX no' \
	'slat: virtualization usable'
boot_done
