# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the x86 primary-VM boot tests (sourced by t_x86_svm_*.sh,
# and by the VT-x tests, after lib.sh): slat.efi deprivileges OVMF into the
# primary VM, which boots Debian's amd64 cloud kernel through its EFI stub;
# the initramfs runs tests/guest/NAME.sh; Slat prints its exit summary when
# the guest powers off or resets.
#
#   x86_primary_esp [TEST [CFG LINE...]]
#                       build the ESP: slat.cfg with slat.test=TEST (default
#                       x86_primary) and extra lines, the kernel and initramfs
#   x86_svm_primary_boot [TEST [CFG LINE...]]
#                       x86_primary_esp, then QEMU -cpu max -smp 2 (SVM + NPT)
#   x86_svm_primary_expect   the assertions of a two-CPU SVM boot

x86_primary_esp() {
	local test=${1:-x86_primary} cfg
	shift $(($# < 1 ? $# : 1))
	make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the x86_64 guest failed" >&2
		exit 1
	}
	cfg="$BOOT_DIR/slat.cfg"
	{
		echo '# written by tests/boot/x86_primary.sh'
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = console=ttyS0 panic=-1 slat.test=$test"
		printf '%s\n' "$@"
		echo 'region_arg = yes # tests/guest/x86_primary.sh checks the region'
	} >"$cfg"
	local g="$BOOT_TOP/build/guest/x86_64"
	EMU_ESP_CYL=128 # the kernel and initramfs need a 63 MiB ESP
	boot_esp x86_64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img"
}

x86_svm_primary_boot() {
	x86_primary_esp "$@"
	EMU_SMP=2 boot_qemu_x86 max
}

x86_svm_primary_expect() {
	local hex='0x[0-9a-f]+'
	expect_in_order '^slat: region 0x[0-9a-f]+-0x[0-9a-f]+ reserved; resident image' \
		'^slat: NPT for vm primary: 40-bit guest-physical space mapped' \
		'^slat: NPT leaves: [0-9]+ x 1G, [0-9]+ x 2M, [0-9]+ x 4K; [0-9]+ table pages; local APIC page 0xfee00000 read-only$' \
		'^slat: cpu 1 \(APIC ID 1\) enters guest mode$' \
		'^slat: cpu 0 \(APIC ID 0\) enters guest mode$' \
		'^slat: firmware continues as the primary VM on 2 CPU\(s\) \(SVM, NPT\)$' \
		'^slat: hand-off runs from a copy at 0x[0-9a-f]+; slat.efi.s pages 0x[0-9a-f]+-0x[0-9a-f]+ re-typed EfiLoaderCode -> EfiBootServicesData$' \
		'^slat: initrd \\slat\\initrd.img, [0-9]+ KiB, offered via LoadFile2$' \
		'^slat: starting \\slat\\vmlinuz with "console=ttyS0 panic=-1 slat.test=x86_primary slat.region=0x[0-9a-f]+,0x400000"$' \
		'^SLAT-GUEST: init up on x86_64' \
		'^SLAT-GUEST: hypervisor-bit set$' \
		"^SLAT-GUEST: hv-vendor cpu0 'SlatSlatSlat'$" \
		"^SLAT-GUEST: hv-vendor cpu1 'SlatSlatSlat'$" \
		'^SLAT-GUEST: cpus online 0-1$' \
		"^SLAT-GUEST: hotplug cpu1 off \\(0\\) on \\(0-1\\) vendor 'SlatSlatSlat'$" \
		'^SLAT-GUEST: svm flag on 2 of 2 CPUs, vmx on 0$' \
		'^SLAT-GUEST: efer 0x[0-9a-f]+ svme 0$' \
		'^SLAT-GUEST: vm_cr 0x0000000000000000$' \
		'^SLAT-GUEST: efer-svme-write status 0 ' \
		'^SLAT-GUEST: region 0x[0-9a-f]+\+0x400000 reserved in /proc/iomem$' \
		'^SLAT-GUEST: devmem-ctl reserved 0x[0-9a-f]+ read status 0 \(0x[0-9a-f]+\)$' \
		'^SLAT-GUEST: slat-read blocked \(status 139' \
		"^SLAT-GUEST: mem-sleep '\\[s2idle\\]'$" \
		'^SLAT-GUEST: s3-deep refused$' \
		'^SLAT-GUEST: MARKER x86-primary-done uptime [0-9.]+$' \
		'^slat: exit summary: vm primary power-off after [0-9]+\.[0-9]+ s uptime, 2 vCPUs$' \
		'^slat: exits: [0-9]+ total$' \
		'^slat: NPT: [0-9]+ table pages \(max [0-9]+\), [0-9]+ invalidations, 0 cache maintenance ops$' \
		'^slat: NPT teardown: [0-9]+ table pages freed, 1 invalidations$' \
		'^slat: powering off$'
	# Exactly one report of the hidden read, inside the region, from user mode.
	expect_count 1 "^warning: slat: NPT fault on Slat memory at GPA $hex \\(read at CPL 3, RIP $hex, vcpu[01]\\): injecting #GP\\(0\\)$"
	expect_slat_faults 1 # the hidden read
	expect '^slat: exits: cpuid +[0-9]+ \(vcpu0 [1-9][0-9]*, vcpu1 [1-9][0-9]*\)$' \
		'^slat: exits: mmio +[0-9]+ \(vcpu0 [1-9][0-9]*, vcpu1 [0-9]+\)$'
	expect_absent 'X64 Exception Type' '^error: (slat|svm|x86):' 'Kernel panic' 'NMI received' \
		'host exception' 'unexpected exit' 'cannot decode' 'does not emulate'
	expect '^slat: ACPI S3 not offered '
	expect_exit
}
