# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the KVM API boot tests (sourced after lib.sh): the primary's
# Linux runs tests/guest/kvm.sh (slat.ko's /dev/kvm and Linux's KVM selftests).
#
#   kvm_expect_pass ARCH [full|vmx]
#                          every selftest passes under Slat by its own verdict
#                          (full: slat.test=kvm_full's runs, `make test-slow`;
#                          vmx: kvm_full's under Bochs, without dirty_log_test);
#                          the capability-missing runs skip or fail cleanly
#                          (ARCH aarch64: psci_test and slat-kvm-check's
#                          GICv3 guests too; x86_64: set_memory_region_test
#                          and xapic_ipi_test too); dirty_log_test's
#                          dirty-log and clear-log modes (x86 without full:
#                          clear-log alone); no dirty ring on either

kvm_expect_pass() {
	local t psci=() smrt=() vgic=() dlp=() dlt=() evt=() thp=() dpthp=() ring=()
	# No dirty ring: its capabilities 0 and its KVM_ENABLE_CAP -EINVAL
	# (slat-kvm-check, both architectures).
	ring=('^SLAT-GUEST: kvmcheck: KVM_CAP_DIRTY_LOG_RING \(not implemented\): ok \(0x0, ' \
		'^SLAT-GUEST: kvmcheck: KVM_CAP_DIRTY_LOG_RING_ACQ_REL on the VM: ok \(0x0, ' \
		'^SLAT-GUEST: kvmcheck: KVM_ENABLE_CAP KVM_CAP_DIRTY_LOG_RING, 4096 entries: ok \(Invalid argument\)')
	# dirty_log_perf_test's harvests (get, then clear with manual protection).
	dlp=('^SLAT-GUEST: kvm: dirty_log_perf_test: Iteration 3 get dirty log time' \
		'^SLAT-GUEST: kvm: dirty_log_perf_test: Iteration 3 clear dirty log time' \
		'^SLAT-GUEST: kvm: dirty_log_perf_test: Disabling dirty logging time' \
		'^SLAT-GUEST: kvm: dirty_log_perf_test exit 0$')
	# dirty_log_test (its slot is 1 GiB + 3 pages: ABI 1.10): the two bitmap
	# log modes check the log against the guest's writes (some pages found
	# dirty), the dirty ring skips (KVM_CAP_DIRTY_LOG_RING = 0).
	local bits='dirty \([1-9][0-9]*\), clear \([0-9]+\), track_next \([0-9]+\)$'
	dlt=('^SLAT-GUEST: kvm: running dirty_log_test ' \
		"^SLAT-GUEST: kvm: dirty_log_test: Testing Log Mode 'dirty-log'\$" \
		"^SLAT-GUEST: kvm: dirty_log_test: Total bits checked: $bits" \
		"^SLAT-GUEST: kvm: dirty_log_test: Testing Log Mode 'clear-log'\$" \
		"^SLAT-GUEST: kvm: dirty_log_test: Total bits checked: $bits" \
		"^SLAT-GUEST: kvm: dirty_log_test: Testing Log Mode 'dirty-ring'\$" \
		"^SLAT-GUEST: kvm: dirty_log_test: Log mode 'dirty-ring' not supported, skipping test\$" \
		'^SLAT-GUEST: kvm: dirty_log_test exit 0$')
	# arm64's full run: the 64 KiB-page guest mode (-m 7), both log modes.
	local dlt64=()
	[ "$1" = aarch64 ] && [ "${2:-}" = full ] && dlt64=("${dlt[0]}-m 7 " \
		"^SLAT-GUEST: kvm: dirty_log_test: Testing guest mode: PA-bits:40,  VA-bits:48, 64K pages\$" \
		"${dlt[2]}" \
		"^SLAT-GUEST: kvm: dirty_log_test: Testing guest mode: PA-bits:40,  VA-bits:48, 64K pages\$" \
		"${dlt[4]}" '^SLAT-GUEST: kvm: dirty_log_test exit 0$')
	# x86 SVM in `make test`: the clear-log mode alone (-M clear-log, its
	# time), every mode in the full run; not under Bochs (tests/guest/kvm.sh).
	[ "$1" = x86_64 ] && [ -z "${2:-}" ] && dlt=('^SLAT-GUEST: kvm: running dirty_log_test -M clear-log -i 4 ' \
		"^SLAT-GUEST: kvm: dirty_log_test: Setting log mode to: 'clear-log'\$" \
		"^SLAT-GUEST: kvm: dirty_log_test: Total bits checked: $bits" \
		'^SLAT-GUEST: kvm: dirty_log_test exit 0$')
	[ "${2:-}" = vmx ] && dlt=()
	# The most slots memslot_perf_test can make: x86 in the full runs only.
	local maxslots=('^SLAT-GUEST: kvm: running memslot_perf_test -s -1 ' \
		'^SLAT-GUEST: kvm: memslot_perf_test: Testing move inactive area performance with 1 runs' \
		'^SLAT-GUEST: kvm: memslot_perf_test: Done [1-9][0-9]* iterations' \
		'^SLAT-GUEST: kvm: memslot_perf_test exit 0$')
	[ "$1" = x86_64 ] && [ -z "${2:-}" ] && maxslots=()
	# kvm_page_table_test over transparent huge pages (not yet run on VT-x).
	[ "${2:-}" != vmx ] && thp=('^SLAT-GUEST: kvm: running kvm_page_table_test -s anonymous_thp' \
		'^SLAT-GUEST: kvm: kvm_page_table_test: Testing memory backing src type: anonymous_thp' \
		'^SLAT-GUEST: kvm: kvm_page_table_test: KVM_ADJUST_MAPPINGS: total execution time' \
		'^SLAT-GUEST: kvm: kvm_page_table_test exit 0$' \
		'^SLAT-GUEST: kvm: hugetlb: all [0-9]+ 2 MiB pages reserved$' \
		'^SLAT-GUEST: kvm: kvm_page_table_test: Testing memory backing src type: anonymous_hugetlb$' \
		'^SLAT-GUEST: kvm: kvm_page_table_test: KVM_ADJUST_MAPPINGS: total execution time' \
		'^SLAT-GUEST: kvm: kvm_page_table_test exit 0$')
	# demand_paging_test over transparent huge pages (arm64; not yet run on
	# x86); full: with userfaultfd too.
	[ "$1" = aarch64 ] && dpthp=('^SLAT-GUEST: kvm: running demand_paging_test .*-s anonymous_thp' \
		'^SLAT-GUEST: kvm: demand_paging_test: All vCPU threads joined$' \
		'^SLAT-GUEST: kvm: demand_paging_test exit 0$')
	[ "$1" = aarch64 ] && [ "${2:-}" = full ] && dpthp+=('^SLAT-GUEST: kvm: running demand_paging_test .*-u MISSING -s anonymous_thp' \
		'^SLAT-GUEST: kvm: demand_paging_test: All vCPU threads joined$' \
		'^SLAT-GUEST: kvm: demand_paging_test exit 0$')
	# arm64: PSCI in the module (CPU_ON, SYSTEM_SUSPEND) by psci_test's verdict;
	# get-reg-list's vregs configuration (KVM 6.1's register list) passes.
	[ "$1" = aarch64 ] && psci=('^SLAT-GUEST: kvm: running psci_test' \
		'^SLAT-GUEST: kvm: psci_test exit 0$' \
		'^SLAT-GUEST: kvm: get-reg-list: vregs: PASS$' \
		'^SLAT-GUEST: kvm: get-reg-list exit 0$')
	# arm64: slat-kvm-check's in-kernel GICv3 guests (SGI 3, SPI 40, PPI 27 in
	# that order; SGI 5 to the other vCPU), as on Linux's KVM (t_arm64_kvm_reference).
	[ "$1" = aarch64 ] && vgic=('^SLAT-GUEST: kvmcheck: vgic: exactly 3 interrupts taken: ok' \
		'^SLAT-GUEST: kvmcheck: vgic: third INTID: PPI 27 \(the virtual timer\): ok' \
		'^SLAT-GUEST: kvmcheck: vgic: \.\.\. SGI 5: ok')
	# x86: memory regions with KVM's x86 semantics, in use while moved or deleted.
	[ "$1" = x86_64 ] && smrt=('^SLAT-GUEST: kvm: set_memory_region_test: Testing KVM_RUN with zero added memory regions' \
		'^SLAT-GUEST: kvm: set_memory_region_test: Adding slots 0\.\.32763, each memory region with 2048K size' \
		'^SLAT-GUEST: kvm: set_memory_region_test: Testing MOVE of in-use region, 10 loops' \
		'^SLAT-GUEST: kvm: set_memory_region_test: Testing DELETE of in-use region, 10 loops' \
		'^SLAT-GUEST: kvm: set_memory_region_test exit 0$' \
		'^SLAT-GUEST: kvm: xapic_ipi_test: Halter vCPU thread reported its APIC ID: 0 ' \
		'^SLAT-GUEST: kvm: xapic_ipi_test: Test successful after running for 5 seconds\.' \
		'^SLAT-GUEST: kvm: xapic_ipi_test: Halting vCPU halted [1-9][0-9]* times, woke [1-9][0-9]* times, received [1-9][0-9]* IPIs\.' \
		'^SLAT-GUEST: kvm: xapic_ipi_test exit 0$' \
		'^SLAT-GUEST: kvm: cpuid_test exit 0$' \
		'^SLAT-GUEST: kvm: sync_regs_test exit 0$' \
		'^SLAT-GUEST: kvm: set_sregs_test exit 0$' \
		'^SLAT-GUEST: kvm: platform_info_test exit 0$' \
		'^SLAT-GUEST: kvm: tsc_msrs_test exit 0$')
	# x86: vCPU events (ABI 1.11) in slat-kvm-check: an exception the VMM sets
	# survives KVM_SET_REGS and is delivered with its error code; an NMI
	# pending across an unmask; an IN completed after KVM_SET_REGS; the MSRs
	# the module answers (ABI 1.13) and the guest's TSC offset (ABI 1.15).
	[ "$1" = x86_64 ] && evt=('^SLAT-GUEST: kvmcheck: #GP still injected after KVM_SET_REGS, with its error code: ok' \
		"^SLAT-GUEST: kvmcheck: the #GP handler's error code: ok" \
		'^SLAT-GUEST: kvmcheck: the #GP came before the first instruction: ok' \
		'^SLAT-GUEST: kvmcheck: NMI still pending, unmasked: ok' \
		'^SLAT-GUEST: kvmcheck: the NMI came before OUT 0x20: ok' \
		'^SLAT-GUEST: kvmcheck: the IN completed after KVM_SET_REGS: ok' \
		'^SLAT-GUEST: kvmcheck: the guest reads MSR_PLATFORM_INFO as set \(high\): ok' \
		"^SLAT-GUEST: kvmcheck: the guest's WRMSR MSR_PLATFORM_INFO: #GP at the instruction: ok" \
		'^SLAT-GUEST: kvmcheck: the guest.s RDMSR of an MSR nobody emulates: #GP at the instruction: ok' \
		'^SLAT-GUEST: kvmcheck: RDMSR MSR_PLATFORM_INFO with the capability off: #GP at the instruction: ok' \
		'^SLAT-GUEST: kvmcheck: HLT at the end of the MSR part: ok' \
		"^SLAT-GUEST: kvmcheck: the guest's RDTSC counts from the VMM's IA32_TSC: ok" \
		"^SLAT-GUEST: kvmcheck: the guest's RDMSR IA32_TSC counts from it too: ok" \
		"^SLAT-GUEST: kvmcheck: IA32_TSC_ADJUST moved by the guest's change: ok")
	# slat-kvm-check's huge-page section (kvmcheck_thp.c): 2 MiB leaves on
	# stage-2 and on NPT, split by the VMM's MADV_DONTNEED.
	expect_in_order '^SLAT-GUEST: kvmcheck: two 2 MiB leaves map the region.s two huge pages: ok' \
		'^SLAT-GUEST: kvmcheck: the split block.s one 2 MiB leaf was zapped: ok' \
		'^SLAT-GUEST: kvmcheck: huge-page VM.s guest ends: ok'
	expect_in_order '^SLAT-GUEST: kvm on ' \
		'^SLAT-GUEST: dmesg: slat: /dev/kvm ready \(KVM API 12, 256 vCPUs, 32764 slots per VM\)$' \
		"${ring[@]}" "${vgic[@]}" "${evt[@]}" \
		'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
		'^SLAT-GUEST: slat-kvm-check exit 0$' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus: Testing creating 256 vCPUs, with IDs 0\.\.\.255\.$' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus exit 0$' \
		'^SLAT-GUEST: kvm: kvm_binary_stats_test exit 0$' \
		'^SLAT-GUEST: kvm: memslot_modification_stress_test: All vCPU threads joined$' \
		'^SLAT-GUEST: kvm: memslot_modification_stress_test exit 0$' \
		"${smrt[@]}" \
		'^SLAT-GUEST: kvm: running memslot_perf_test -s 64 ' \
		'^SLAT-GUEST: kvm: memslot_perf_test exit 0$' \
		"${maxslots[@]}" \
		'^SLAT-GUEST: kvm: kvm_page_table_test: KVM_UPDATE_MAPPINGS: total execution time' \
		'^SLAT-GUEST: kvm: kvm_page_table_test: KVM_ADJUST_MAPPINGS: total execution time' \
		'^SLAT-GUEST: kvm: kvm_page_table_test exit 0$' \
		"${thp[@]}" \
		"${dlp[@]}" \
		"${dlt[@]}" "${dlt64[@]}" \
		'^SLAT-GUEST: kvm: demand_paging_test: All vCPU threads joined$' \
		'^SLAT-GUEST: kvm: demand_paging_test exit 0$' \
		"${dpthp[@]}" \
		"${psci[@]}" \
		'^SLAT-GUEST: rmmod slat status 0$' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus: 1\.\.0 # SKIP - /dev/kvm not available' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus exit 4$' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus: Testing creating 1 vCPUs, with IDs 0\.\.\.0\.$' \
		'^SLAT-GUEST: kvm: kvm_create_max_vcpus exit 0$' \
		'^SLAT-GUEST: kvm: memslot_modification_stress_test: .*Invalid number of vcpus, must be between 1 and 1$' \
		'^SLAT-GUEST: kvm: memslot_modification_stress_test exit 254$' \
		'^SLAT-GUEST: rmmod slat status 0$' \
		'^SLAT-GUEST: MARKER kvm-done'
	# Each of memslot_perf_test's six sub-tests ran its loop at least once
	# (x86: five, tests/guest/kvm.sh).
	local subs=(map unmap 'unmap chunked' 'move active area' 'move inactive area' RW)
	[ "$1" = x86_64 ] && subs=(map 'unmap chunked' 'move active area' 'move inactive area' RW)
	[ "${2:-}" = vmx ] && subs=(map 'move active area' 'move inactive area' RW) # tests/guest/kvm.sh
	for t in "${subs[@]}"; do
		expect_in_order "^SLAT-GUEST: kvm: memslot_perf_test: Testing $t performance with 1 runs" \
			'^SLAT-GUEST: kvm: memslot_perf_test: Done [1-9][0-9]* iterations'
	done
	# ... and not in the runs that leave them out (`make test`'s time).
	[ "${#dlt[@]}" -eq 0 ] && expect_count 0 '^SLAT-GUEST: kvm: running dirty_log_test'
	[ "${#maxslots[@]}" -eq 0 ] && expect_count 0 '^SLAT-GUEST: kvm: running memslot_perf_test -s -1'
	expect_count 0 'FAILED'
	expect_count 1 '^SLAT-GUEST: kvm: .*==== Test Assertion Failure ====' # the 1-vCPU limit's
	expect_absent '^SLAT-GUEST: dmesg: .*(leak|never deposited|BUG|WARNING|Oops)' 'Kernel panic' \
		'^error: ' 'Synchronous Exception' 'exception at EL2'
	expect_exit
}

