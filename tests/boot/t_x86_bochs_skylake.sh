#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# x86 Bochs cpu model=corei7_skylake_x: Intel VT-x with TRUE controls, EPT
# (4-level, WB, 2M/1G, A/D, both INVEPT types), VPID (all INVVPID types),
# unrestricted guest, VMCS shadowing, PML; IA32_FEATURE_CONTROL unlocked.
. "$(dirname "$0")/lib.sh"
boot_bochs corei7_skylake_x
expect_slat_report x86_64 EFI_SUCCESS
expect_literal 'cpu: vendor GenuineIntel, family 0x6 model 0x55' \
	'svm: SVM no' 'vmx: VMX yes' \
	'vmx: IA32_FEATURE_CONTROL 0x0 (locked no, VMX outside SMX no)' \
	'vmx: VMX_BASIC 0x00d810000000002b: revision 0x2b, VMXON region 4096 bytes, memory type WB, TRUE controls yes' \
	'vmx: secondary controls yes' \
	'EPT yes, VPID yes, unrestricted guest yes, VMCS shadowing yes, PML yes, RDTSCP yes, INVPCID yes, XSAVES yes' \
	'vmx: EPT_VPID_CAP 0x00000f0106334141' \
	'vmx: EPT 4-level yes, 5-level no, execute-only yes, WB yes, UC yes, 2M pages yes, 1G pages yes, A/D bits yes' \
	'vmx: INVEPT yes (single-context yes, all-context yes), INVVPID yes (address yes, single-context yes, all-context yes, single-context-retaining-globals yes)' \
	'slat: virtualization usable'
boot_done
