#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nested SVM (QEMU -cpu max, 2 CPUs, 2 GiB): the primary's Linux sees an SVM
# CPU with nested paging, loads Linux's own kvm-amd and runs Linux's KVM
# selftests as L1 user space; their L2 guests run under Slat, with NPT02
# built and reclaimed by Slat's shadow engine (docs/nested-svm.md). Then the
# churn: 50 small L2 VMs created, run and destroyed, Slat's shadow pages back
# at their floor and the longest hash chain flat after each. Slat's shadow
# quota is 16 pages (slat.cfg nested_quota), and the first L2 workload needs
# more: the oldest shadow pages are evicted and refaulted, and every L2 guest
# after it still runs ([nested-core]: a full quota once left L1 without L2s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/x86_primary.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
EMU_MEM_MB=2048 x86_svm_primary_boot nested 'nested_quota = 16'
expect_in_order '^slat: nested SVM offered to the primary \(NPT02 in the shadow engine, recursive reclaim of orphans, quota 16 shadow pages\)$' \
	'^SLAT-GUEST: nested on x86_64' \
	'^SLAT-GUEST: svm flag on 2 CPUs' \
	"^SLAT-GUEST: /dev/kvm from Linux's KVM: crw" \
	'^SLAT-GUEST: npt=Y nested=1$' \
	'^SLAT-GUEST: nested: running kvm_page_table_test -b 32M -v 2$' \
	'^SLAT-GUEST: nested: kvm_page_table_test: .*KVM_UPDATE_MAPPINGS: ' \
	'^SLAT-GUEST: nested: kvm_page_table_test exit 0$' \
	'^SLAT-GUEST: nested: running memslot_modification_stress_test -i 20 -v 2 -b 8M$' \
	'^SLAT-GUEST: nested: memslot_modification_stress_test: All vCPU threads joined$' \
	'^SLAT-GUEST: nested: memslot_modification_stress_test exit 0$' \
	'^SLAT-GUEST: nested: set_memory_region_test: Testing MOVE of in-use region, 10 loops' \
	'^SLAT-GUEST: nested: set_memory_region_test: Testing DELETE of in-use region, 10 loops' \
	'^SLAT-GUEST: nested: set_memory_region_test exit 0$' \
	'^SLAT-GUEST: nested: churn: cycle 1: shadow pages [0-9]+ \(floor [0-9]+\), longest chain [0-9]+, created [1-9][0-9]*, orphans reclaimed [0-9]+, [0-9]+ us$' \
	'^SLAT-GUEST: nested: churn: cycle 50: ' \
	'^SLAT-GUEST: nested: churn: slot delete done in [0-9]+ us; shadow pages [0-9]+ -> [0-9]+$' \
	'^SLAT-GUEST: nested: churn: 50 cycles, 0 failed$' \
	'^SLAT-GUEST: MARKER nested-done' \
	'^slat: nested SVM: [1-9][0-9]* VMRUNs, [1-9][0-9]* exits to L1 \([1-9][0-9]* L2 exits\), NPT02 faults [1-9][0-9]* fixed, [1-9][0-9]* reflected; [1-9][0-9]* L1 pages write-protected, [1-9][0-9]* writes emulated, [0-9]+ pages given back; 0 invalid VMCBs, 0 without shadow memory$' \
	'^slat: nested shadow pages: [0-9]+ in use \(max (1[0-6]|[1-9]), quota 16\), [1-9][0-9]* created, [1-9][0-9]* zapped \([1-9][0-9]* orphans reclaimed, [1-9][0-9]* evicted\), longest hash chain [0-9]+$' \
	'^slat: nested shadow writes: [1-9][0-9]* emulated \([1-9][0-9]* updates, [0-9]+ zaps\), [0-9]+ pages given back, 0 slot zaps; costliest zap [1-9][0-9]* shadow pages in [0-9]+ us; check ok$' \
	'^slat: nested shadow memory: [0-9]+ reclaims \([0-9]+ allocations refused\), [1-9][0-9]* L1 pages write-protected; Slat.s table pages [0-9]+ live \(max [0-9]+\), [1-9][0-9]* KiB of its region never used$'
# Every cycle back at the floor (the program marks a cycle that is not).
expect_count 51 '^SLAT-GUEST: nested: churn: (cycle [0-9]+: .*us|slot delete done .*)$'
expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'host exception' 'Kernel panic' 'BUG' \
	'Oops' 'WARNING' 'svm: nested:'
boot_done
