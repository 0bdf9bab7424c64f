#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The other side of the KVM API tests: slat-kvm-check, whose checks of KVM's
# documented behaviour pass on slat.ko (t_x86_svm_kvm, t_x86_vmx_secondary),
# must pass on Linux's own KVM too, so that a check encodes KVM's semantics and
# not only Slat's. The same Debian kernel and initramfs, booted by QEMU itself
# (-cpu max: SVM with NPT, 2 CPUs, no firmware, no Slat), load kvm-amd and run
# it in its reference mode, which leaves out the checks of Slat's own choices
# (its CPUID and MSR set, the refusals KVM does not make; docs/kvm-api.md).
. "$(dirname "$0")/lib.sh"
EMU_MEM_MB=1024 EMU_SMP=2 boot_qemu_x86_kernel max \
	"console=ttyS0 panic=-1 quiet slat.test=kvm_ref"
expect_in_order '^SLAT-GUEST: kvm_ref on x86_64' \
	"^SLAT-GUEST: /dev/kvm from Linux's KVM: crw" \
	'^SLAT-GUEST: kvmcheck: reference mode: Linux.s KVM' \
	'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
	'^SLAT-GUEST: slat-kvm-check exit 0$' \
	'^SLAT-GUEST: MARKER kvm_ref-done'
expect_absent 'FAIL' 'Kernel panic' 'BUG' 'Oops'
expect_exit
boot_done
