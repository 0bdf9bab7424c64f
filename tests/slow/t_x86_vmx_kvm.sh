#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KVM API on Intel VT-x (Bochs corei7_skylake_x, 2 CPUs, 2 GiB): the same
# guest script and expectations as t_x86_svm_kvm, with kvm_full's runs
# (tests/guest/kvm_full.sh; slat.ko's /dev/kvm; Linux's
# KVM selftests, unmodified from Debian's linux-source-6.1, by their own
# verdicts; the capability-missing runs), on Slat's VMX back end. Bochs runs
# at ~50 MIPS, so this is a slow test (`make test-slow`, docs/kvm-api.md),
# not part of `make test` (which runs slat-kvm-check on VT-x in
# t_x86_vmx_secondary, one CPU). set_memory_region_test alone takes about
# 10 minutes here (its memslot moves and deletes under a spinning vCPU, each
# a flush with an NMI kick of the other CPU). dirty_log_test does not run
# here (about 65 s of QEMU TCG, its 1 GiB slot written and read whole: half
# an hour of Bochs, past the guest's per-test limit).
. "$(dirname "$0")/../boot/lib.sh"
. "$(dirname "$0")/../boot/x86_vmx.sh"
. "$(dirname "$0")/../boot/kvm.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-5400}
EMU_MEM_MB=2048 x86_vmx_boot 2 kvm_full
kvm_expect_pass x86_64 vmx
expect_absent 'X64 Exception Type' '^error: (slat|vmx|x86):' 'host exception'
boot_done
