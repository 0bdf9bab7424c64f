# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the VT-x primary-VM boot tests (sourced by t_x86_vmx_*.sh
# after lib.sh): slat.efi takes VMX root on every CPU of Bochs'
# corei7_skylake_x, OVMF continues as the primary VM under Slat's EPT and
# boots Debian's amd64 cloud kernel through its EFI stub; the initramfs runs
# tests/guest/x86_primary.sh; Slat prints its exit summary when the guest
# powers off (ACPI S5 through the FADT Slat installs for OVMF under Bochs).
#
#   x86_vmx_boot CPUS [TEST]   build the ESP and boot Bochs with CPUS CPUs
#   x86_vmx_expect CPUS        the assertions every VT-x boot shares
#
# The guest console runs at 115200 baud: at Bochs' default 9600 the end of
# the guest's output is still queued when it powers off.

x86_vmx_boot() {
	local cpus=$1 test=${2:-x86_primary} cfg
	make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the x86_64 guest failed" >&2
		exit 1
	}
	cfg="$BOOT_DIR/slat.cfg"
	{
		echo '# written by tests/boot/x86_vmx.sh'
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = console=ttyS0,115200 panic=-1 quiet slat.test=$test"
		echo 'region_arg = yes # tests/guest/x86_primary.sh checks the region'
	} >"$cfg"
	local g="$BOOT_TOP/build/guest/x86_64"
	EMU_ESP_CYL=128 # the kernel and initramfs need a 63 MiB ESP
	boot_esp x86_64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img"
	EMU_SMP=$cpus boot_bochs corei7_skylake_x
}

x86_vmx_expect() {
	local n=$1 hex='0x[0-9a-f]+' last=$(($1 - 1)) online=0
	[ "$n" -gt 1 ] && online="0-$last"
	expect_in_order '^slat: region 0x[0-9a-f]+-0x[0-9a-f]+ reserved; resident image' \
		"^acpi: firmware has no MADT: installed one with $n local APICs? \\(\\+ FADT for the PIIX4 PM block" \
		'^acpi: FADT: PM1a_EVT 0xb000, PM1a_CNT 0xb004, PM_TMR 0xb008, SCI 9, reset 0xcf9$' \
		'^vmx: controls pin 0x3e proc 0x96006172 proc2 0x1010aa exit 0x3f6fff entry 0xd1ff \(from TRUE capability MSRs\); virtual NMIs yes, NMI-window exiting yes$' \
		'^vmx: CR0 fixed0 0x80000021 fixed1 0xffffffff, CR4 fixed0 0x2000 fixed1 0x3727ff; owned CR0 0x80000020 CR4 0xffc8f800$' \
		'^slat: EPT for vm primary \(mm/ engine\): 4-level, [0-9]+-bit guest-physical space, EPTP 0x[0-9a-f]+1e, VPID 1, INVEPT single-context$' \
		'^slat: EPT leaves: [0-9]+ x 1G, [0-9]+ x 2M, [0-9]+ x 4K; [0-9]+ table pages; local APIC page 0xfee00000 read-only$' \
		'^slat: power-off port 0xb004, reset port 0xcf9; region' \
		"^slat: cpu $last \\(APIC ID $last\\) enters VMX guest mode$" \
		"^slat: firmware continues as the primary VM on $n CPU\\(s\\) \\(VT-x, EPT, VPID\\)$" \
		'^slat: hand-off runs from a copy at 0x[0-9a-f]+; slat.efi.s pages 0x[0-9a-f]+-0x[0-9a-f]+ re-typed EfiLoaderCode -> EfiBootServicesData$' \
		'^slat: initrd \\slat\\initrd.img, [0-9]+ KiB, offered via LoadFile2$' \
		'^slat: starting \\slat\\vmlinuz with "console=ttyS0,115200 panic=-1 quiet slat.test=x86_primary slat.region=0x[0-9a-f]+,0x400000"$' \
		'^SLAT-GUEST: init up on x86_64' \
		'^SLAT-GUEST: hypervisor-bit set$' \
		"^SLAT-GUEST: hv-vendor cpu0 'SlatSlatSlat'$" \
		"^SLAT-GUEST: cpus online $online$" \
		"^SLAT-GUEST: svm flag on 0 of $n CPUs, vmx on 0$" \
		'^SLAT-GUEST: region 0x[0-9a-f]+\+0x400000 reserved in /proc/iomem$' \
		'^SLAT-GUEST: devmem-ctl reserved 0x[0-9a-f]+ read status 0 \(0x[0-9a-f]+\)$' \
		'^SLAT-GUEST: slat-read blocked \(status 139' \
		'^SLAT-GUEST: MARKER x86-primary-done uptime [0-9.]+$' \
		"^slat: exit summary: vm primary power-off after [0-9]+\\.[0-9]+ s uptime, $n vCPUs$" \
		'^slat: exits: [0-9]+ total$' \
		'^slat: EPT: [0-9]+ table pages \(max [0-9]+\), [0-9]+ invalidations, 0 cache maintenance ops$' \
		'^slat: EPT teardown: [0-9]+ table pages freed, 1 invalidations$' \
		'^slat: powering off$'
	expect '^SLAT-GUEST: efer 0x[0-9a-f]+ svme 0$' '^SLAT-GUEST: efer-svme-write status 1 '
	if [ "$n" -gt 1 ]; then
		expect "^SLAT-GUEST: hv-vendor cpu$last 'SlatSlatSlat'$" \
			"^SLAT-GUEST: hotplug cpu1 off \\(0(,2-$last)?\\) on \\($online\\) vendor 'SlatSlatSlat'$"
	fi
	# Exactly one report of the hidden read, inside the region, from user mode.
	expect_count 1 "^warning: slat: EPT fault on Slat memory at GPA $hex \\(read at CPL 3, RIP $hex, vcpu[0-9]\\): injecting #GP\\(0\\)$"
	expect_slat_faults 1 # the hidden read
	expect '^slat: exits: cpuid +[0-9]+ \(vcpu0 [1-9][0-9]*' \
		'^slat: exits: io +[0-9]+ \(vcpu0 [1-9][0-9]*'
	expect_absent 'X64 Exception Type' '^error: (slat|vmx|x86|acpi):' 'Kernel panic' \
		'in VMX root' 'VM entry failed' 'VMRESUME failed' 'cannot decode' 'does not emulate'
	expect_exit
}
