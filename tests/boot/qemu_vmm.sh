# SPDX-License-Identifier: Apache-2.0
#
# Shared set-up of the boot tests that run Debian's QEMU in the primary on
# Slat's /dev/kvm (sourced after lib.sh by t_x86_svm_qemu.sh,
# t_x86_svm_qemu_migrate.sh, t_arm64_qemu.sh and t_arm64_qemu_migrate.sh).
#
#   qemu_vmm_boot_x86 CMDLINE   builds the x86_64 guest and the initramfs
#                               with QEMU (tools/qemu-guest.sh), writes
#                               slat.cfg with the primary's kernel CMDLINE,
#                               and boots it on QEMU -cpu max (2 CPUs, 2 GiB)
#   qemu_vmm_boot_arm64 CMDLINE  the same for arm64: QEMU virt at EL2 with
#                               GICv3, -cpu cortex-a72 (2 CPUs, 2 GiB)
#   qemu_migrate_expect ARCH VMS the migration tests' common verdicts (below)
# _qemu_vmm_esp ARCH CMDLINE: the ARCH guest and its initramfs with QEMU,
# slat.cfg with the primary's kernel CMDLINE, and the ESP holding them
# (EMU_ESP_CYL set by the caller: the kernel and that initramfs are large).
_qemu_vmm_esp() {
	local arch=$1 g="$BOOT_TOP/build/guest/$1" cfg="$BOOT_DIR/slat.cfg"
	make -s -C "$BOOT_TOP" "guest-$arch" >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the $arch guest failed" >&2
		exit 1
	}
	bash "$BOOT_TOP/tools/qemu-guest.sh" "$arch" || exit 1
	{
		echo "# written by tests/boot/$BOOT_NAME.sh"
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = $2"
	} >"$cfg"
	boot_esp "$arch" "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-qemu.img=slat/initrd.img"
}

qemu_vmm_boot_x86() {
	EMU_ESP_CYL=200 # the kernel and the initramfs with QEMU need a 100 MiB ESP
	_qemu_vmm_esp x86_64 "$1"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-1500}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_x86 max
}

qemu_vmm_boot_arm64() {
	EMU_ESP_CYL=128 # the kernel (27 MiB) and the initramfs with QEMU (29 MiB)
	_qemu_vmm_esp aarch64 "$1"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64 cortex-a72
}

# qemu_migrate_expect ARCH VMS: tests/guest/qemu_migrate.sh's verdicts, in
# order: B listens, A's VM runs rounds, the migration, B's VM goes on with
# every buffer intact and stops, both QEMUs exit 0, QEMU's dirty syncs, and
# Slat's summary (VMS VMs made and destroyed, every page back). arm64 also:
# slat.ko's ABI line and B's VM powering off.
qemu_migrate_expect() {
	local r='VMM-GUEST: migrate round [0-9]+' abi=() off=()
	if [ "$1" = aarch64 ]; then
		abi=("^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE,")
		off=('^SLAT-GUEST: qemu b: .*reboot: Power down')
	fi
	expect_in_order "^SLAT-GUEST: qemu_migrate on $1" \
		'^SLAT-GUEST: QEMU emulator version 7\.2' \
		"${abi[@]}" \
		'^SLAT-GUEST: QEMU B listens on /tmp/mig\.sock: yes' \
		'^SLAT-GUEST: qemu a: .*VMM-GUEST: up, 2 CPUs online' \
		"^SLAT-GUEST: qemu a: $r ok" \
		"^SLAT-GUEST: qemu a: $r ok" \
		'^SLAT-GUEST: migration took [0-9.]+ s' \
		"^SLAT-GUEST: qemu b: $r ok" \
		"^SLAT-GUEST: qemu b: $r ok" \
		"^SLAT-GUEST: qemu b: $r ok" \
		'^SLAT-GUEST: qemu b: VMM-GUEST: migrate stopped after [0-9]+ rounds, 0 with a mismatch' \
		"${off[@]}" \
		'^SLAT-GUEST: qemu A exit 0, qemu B exit 0' \
		'^SLAT-GUEST: the VM went on in B: ' \
		'^SLAT-GUEST: migration stats: dirty sync count: ([2-9]|[1-9][0-9]+)$' \
		'^SLAT-GUEST: MARKER qemu_migrate-done' \
		"^slat: secondary VMs: $2 created, $2 destroyed, 0 alive" \
		'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
	expect 'Migration status: completed'
}
