# SPDX-License-Identifier: Apache-2.0
#
# Shared set-up of the boot tests that run Debian's QEMU in the primary on
# Slat's /dev/kvm (sourced after lib.sh by t_x86_svm_qemu.sh,
# t_x86_svm_qemu_migrate.sh, t_arm64_qemu.sh and tests/slow/t_arm64_qemu_migrate.sh).
#
#   qemu_vmm_boot_x86 CMDLINE   builds the x86_64 guest and the initramfs
#                               with QEMU (tools/qemu-guest.sh), writes
#                               slat.cfg with the primary's kernel CMDLINE,
#                               and boots it on QEMU -cpu max (2 CPUs, 2 GiB)
#   qemu_vmm_boot_arm64 CMDLINE  the same for arm64: QEMU virt at EL2 with
#                               GICv3, -cpu cortex-a72 (2 CPUs, 2 GiB)
qemu_vmm_boot_x86() {
	local g="$BOOT_TOP/build/guest/x86_64" cfg="$BOOT_DIR/slat.cfg"
	make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the x86_64 guest failed" >&2
		exit 1
	}
	bash "$BOOT_TOP/tools/qemu-guest.sh" x86_64 || exit 1
	{
		echo "# written by tests/boot/$BOOT_NAME.sh"
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = $1"
	} >"$cfg"
	EMU_ESP_CYL=200 # the kernel and the initramfs with QEMU need a 100 MiB ESP
	boot_esp x86_64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-qemu.img=slat/initrd.img"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-1500}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_x86 max
}

qemu_vmm_boot_arm64() {
	local g="$BOOT_TOP/build/guest/aarch64" cfg="$BOOT_DIR/slat.cfg"
	make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the arm64 guest failed" >&2
		exit 1
	}
	bash "$BOOT_TOP/tools/qemu-guest.sh" aarch64 || exit 1
	{
		echo "# written by tests/boot/$BOOT_NAME.sh"
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = $1"
	} >"$cfg"
	EMU_ESP_CYL=128 # the kernel (27 MiB) and the initramfs with QEMU (29 MiB)
	boot_esp aarch64 "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-qemu.img=slat/initrd.img"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64 cortex-a72
}
