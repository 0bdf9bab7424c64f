# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the arm64 primary-VM boot tests (sourced by
# t_arm64_primary_*.sh after lib.sh): slat.efi deprivileges edk2 into the
# primary VM, which boots Debian's arm64 cloud kernel at EL1 on 2 CPUs; the
# initramfs runs tests/guest/primary.sh; Slat prints its exit summary when the
# guest powers off.
#
#   arm64_primary_boot CPU [TEST [CFG LINE...]]
#                              build the ESP and boot it under QEMU -cpu CPU with
#                              slat.test=TEST (default primary) and extra slat.cfg lines;
#                              ARM64_INITRD=initrd-vmm.img boots the initramfs
#                              with slat-vmm and the VM's kernel (tools/vmm-initrd.sh)
#   arm64_primary_expect       the assertions every CPU model shares

arm64_primary_boot() {
	local cpu=$1 test=${2:-primary} initrd=${ARM64_INITRD:-initrd.img} cfg
	shift $(($# < 2 ? $# : 2))
	ARM64_TEST=$test
	make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the arm64 guest failed" >&2
		exit 1
	}
	if [ "$initrd" = initrd-vmm.img ]; then
		bash "$BOOT_TOP/tools/vmm-initrd.sh" aarch64 || exit 1
	fi
	cfg="$BOOT_DIR/slat.cfg"
	{
		echo '# written by tests/boot/arm64_primary.sh'
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = console=ttyAMA0 panic=-1 slat.test=$test"
		printf '%s\n' "$@"
		echo 'region_arg = yes # tests/guest/primary.sh checks the region'
	} >"$cfg"
	local g="$BOOT_TOP/build/guest/aarch64"
	# The kernel alone is ~27 MiB: a 63 MiB ESP instead of the default 15.75 MiB.
	EMU_ESP_CYL=128
	boot_esp aarch64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/$initrd=slat/initrd.img"
	EMU_SMP=2 boot_qemu_arm64 "$cpu"
}

arm64_primary_expect() {
	local hex='0x[0-9a-f]+'
	# Slat takes EL2 and drops the firmware, which then starts the kernel.
	expect_in_order '^slat: region 0x[0-9a-f]+-0x[0-9a-f]+ reserved; resident image' \
		'^slat: stage-2 for vm primary: 40-bit IPA, VTCR_EL2 0x80023558' \
		'^slat: firmware dropped to EL1 on cpu 0; vm primary running$' \
		'^slat: hand-off runs from a copy at 0x[0-9a-f]+; slat.efi.s pages 0x[0-9a-f]+-0x[0-9a-f]+ re-typed EfiLoaderCode -> EfiBootServicesData$' \
		'^slat: initrd \\slat\\initrd.img, [0-9]+ KiB, offered via LoadFile2$' \
		'^slat: starting \\slat\\vmlinuz with "console=ttyAMA0 panic=-1 slat.test='"$ARM64_TEST"' slat.region=0x[0-9a-f]+,0x400000"$' \
		'^SLAT-GUEST: init up on aarch64' \
		'^SLAT-GUEST: el EL1$' \
		'^SLAT-GUEST: cpus online 0-1$' \
		'^SLAT-GUEST: hotplug cpu1 off \(0\) on \(0-1\)$' \
		'^SLAT-GUEST: region 0x[0-9a-f]+\+0x400000 reserved in /proc/iomem$' \
		'^SLAT-GUEST: devmem-ctl reserved 0x[0-9a-f]+ read status 0 \(0x[0-9a-f]+\)$' \
		'^SLAT-GUEST: slat-read blocked \(status 135' \
		'^SLAT-GUEST: MARKER primary-done uptime [0-9.]+$' \
		'^slat: exit summary: vm primary power-off after [0-9]+\.[0-9]+ s uptime, 2 vCPUs$' \
		'^slat: exits: [0-9]+ total$' \
		'^slat: stage-2: [0-9]+ table pages \(max [0-9]+\), [0-9]+ invalidations, [0-9]+ cache maintenance ops$' \
		'^slat: stage-2 teardown: [0-9]+ table pages freed, 1 invalidations$' \
		'^slat: powering off$'
	# Exactly one report of the hidden read, with its address inside the region.
	expect_count 1 "^warning: slat: stage-2 fault on Slat memory at IPA $hex \\(VA $hex, access read at EL0"
	expect '^slat: exits: firmware-call +[0-9]+ \(vcpu0 [1-9][0-9]*, vcpu1 [0-9]+\)$'
	expect_slat_faults 1 # the hidden read
	expect_absent 'Synchronous Exception' '^error: (slat|arm64):' 'Kernel panic' 'unhandled trap' \
		'exception at EL2'
	expect_exit
}
