# SPDX-License-Identifier: Apache-2.0
#
# What the slat-vmm tests expect alike (sourced after lib.sh): on Slat
# (t_x86_svm_linux_secondary, t_arm64_linux_secondary; tests/guest/vmm_slat.sh)
# and on Linux's own KVM (tests/slow/t_*_vmm_reference; tests/guest/vmm_ref.sh),
# on both architectures. The lines that differ by architecture come from
# vmm_arch.
#
#   vmm_arch ARCH         x86_64 or aarch64: VMM_OFF (how the VM powers off),
#                         VMM_CON (the virtio console's place), the size refusals
#   vmm_expect_end TAG    the VM's clean end: power-off, status 0, its disk's checksum
#                         and the write the VM made, in that order
#   vmm_expect_hvc TAG    a VM with its shell on the virtio console (vm_run's SHELL=hvc)
#   vmm_expect_pair A B   two VMs at once (vm_run with VM_PEER): both did all of it,
#                         each shell was up before the other VM ended
#   vmm_expect_bad_args   slat-vmm's sixteen refusals of bad arguments, in order

vmm_arch() {
	case "$1" in
	x86_64)
		VMM_OFF='ACPI S5'
		VMM_CON='0xd0000200, GSI 17'
		VMM_NOT_KERNEL='not a bzImage'
		VMM_SIZE1='--kernel /vm/vmlinuz needs [0-9]+ MiB'
		VMM_SIZE2='--initrd /vm/vmlinuz: kernel .* do not fit'
		;;
	aarch64)
		VMM_OFF='PSCI SYSTEM_OFF'
		VMM_CON='0xa000200, SPI INTID 49'
		VMM_NOT_KERNEL='not an arm64 Image'
		VMM_SIZE1='--kernel /tmp/old-image: image_size 0'
		VMM_SIZE2='--initrd /tmp/big-initrd\.img: kernel .* do not fit'
		;;
	*)
		echo "vmm_expect.sh: unknown architecture '$1'" >&2
		exit 2
		;;
	esac
}

vmm_expect_end() {
	expect_in_order "^SLAT-GUEST: $1: slat-vmm: guest powered off \\($VMM_OFF\\), exit 0\$" \
		"^SLAT-GUEST: $1: vmm exit 0 after [0-9]+\\.[0-9] s\$" \
		"^SLAT-GUEST: $1: disk checksum matches the image.s\$" \
		"^SLAT-GUEST: $1: the VM.s write is in the image\$"
}

vmm_expect_hvc() {
	expect_in_order "^SLAT-GUEST: $1: slat-vmm: console: virtio-mmio at $VMM_CON \\(hvc0\\)\$" \
		"^SLAT-GUEST: $1: VMM-GUEST: up, 2 CPUs online \\(0-1\\)" \
		"^SLAT-GUEST: $1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+\$" \
		"^SLAT-GUEST: $1: VMM-GUEST: shell ready on /dev/hvc0" \
		"^SLAT-GUEST: $1: VMM-HVC: 42 from /dev/hvc0 of a VM with 2 CPUs\$" \
		"^SLAT-GUEST: $1: slat-vmm: guest powered off \\($VMM_OFF\\), exit 0\$" \
		"^SLAT-GUEST: $1: slat-vmm: console: [1-9][0-9]* bytes in, [1-9][0-9]* out, 0 errors\$"
	vmm_expect_end "$1"
}

vmm_expect_pair() {
	local t
	for t in "$1" "$2"; do
		expect_in_order "^SLAT-GUEST: $t: VMM-GUEST: up, 2 CPUs online \\(0-1\\)" \
			"^SLAT-GUEST: $t: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts" \
			"^SLAT-GUEST: $t: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+\$" \
			"^SLAT-GUEST: $t: VMM-SHELL: 42 from the console of a VM with 2 CPUs\$"
		vmm_expect_end "$t"
	done
	# They ran at the same time: each shell was up before the other VM ended
	# (each is told to power off only once both shells are up).
	expect_in_order "^SLAT-GUEST: $1: VMM-GUEST: shell ready" "^SLAT-GUEST: $2: vmm exit 0"
	expect_in_order "^SLAT-GUEST: $2: VMM-GUEST: shell ready" "^SLAT-GUEST: $1: vmm exit 0"
}

vmm_expect_bad_args() {
	local e='^SLAT-GUEST: vmm bad-arg ok: exit 2: slat-vmm: error:'
	expect_in_order "$e --kernel /vm/missing: No such file" \
		"$e --kernel /vm/initrd.img: $VMM_NOT_KERNEL" \
		"$e --mem 16M: too little memory" \
		"$e $VMM_SIZE1" \
		"$e $VMM_SIZE2" \
		"$e --initrd /vm/missing: No such file" \
		"$e --cpus .0.: must be 1\\.\\.4" \
		"$e --cpus .5.: must be 1\\.\\.4" \
		"$e --mem .lots.: not a size" \
		"$e bad option .--bogus." \
		"$e --kernel is required" \
		"$e --disk /vm/missing\\.img: No such file" \
		"$e --disk /dev/null: not a regular file" \
		"$e --disk /tmp/tiny\\.img: 100 bytes, less than one 512-byte sector" \
		"$e --disk given twice" \
		"$e --timeout .0.: must be 1\\.\\.86400 seconds"
}
