#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/emu.sh - the one place that knows how to boot slat.efi under each
# emulator. Sourced by tests/boot/lib.sh (boot tests) and run by `make run`.
#
# As a command:
#   tools/emu.sh run ARCH [CPU] [SRC=ESP_PATH ...]
#     ARCH aarch64: QEMU virt (EL2, GICv3), CPU = a QEMU -cpu (default cortex-a72)
#     ARCH x86_64:  CPU amd (default) = QEMU -cpu max (SVM + NPT);
#                   CPU intel = Bochs corei7_skylake_x (VT-x + EPT);
#                   any other value is passed to QEMU as -cpu.
#   The serial console is the terminal (QEMU: stdin attached, Ctrl-A x quits).
#   Set EMU_TIMEOUT=SECONDS to bound the run. EMU_ACCEL=kvm (make run
#   ACCEL=kvm): QEMU -accel kvm -cpu host, nested under the host's KVM; the
#   host CPU picks Slat's path (Intel: VT-x, AMD: SVM); x86-64 hosts only.
#   tools/emu.sh kvm-check ARCH
#     prints "intel" or "amd" when ACCEL=kvm can run ARCH here; otherwise says
#     why not on stderr and exits 1 (/dev/kvm missing or inaccessible, no
#     vmx/svm in the host CPU flags, nested virtualization off).
#
# As a library (after `source tools/emu.sh`):
#   emu_esp IMG ARCH EFI [SRC=ESP_PATH ...]    FAT16 ESP image made with mtools
#     (EMU_ESP_CYL: its size; EMU_ESP_HIDDEN=LBA: the FAT will start at LBA of a
#     partitioned disk, tools/image.sh)
#   emu_qemu_arm64 MODE LOG ESP CPU [QEMU ARGS...]
#   emu_qemu_x86   MODE LOG ESP CPU [QEMU ARGS...]
#     (ESP "": no ESP drive; the QEMU ARGS bring the disks, e.g. emu_usb_stick)
#   emu_usb_stick IMG   prints QEMU arguments: IMG as a USB stick on xHCI
#   emu_qemu_x86_kernel MODE LOG CPU KERNEL INITRD CMDLINE (no firmware, -kernel)
#   emu_qemu_arm64_kernel MODE LOG CPU KERNEL INITRD CMDLINE (no firmware, at EL2)
#   emu_bochs      MODE LOG ESP MODEL [BXRC LINES...]
#     MODE "batch": stdin closed, serial to LOG, bounded by EMU_TIMEOUT (default
#     180 s QEMU, 420 s Bochs); returns the emulator's status (124: timed out).
#     MODE "interactive": serial on the terminal (Bochs: output only, also in LOG).
# Software emulation (-accel tcg) unless EMU_ACCEL=kvm (emu_qemu_x86 only).

EMU_QEMU_EFI_AARCH64=${EMU_QEMU_EFI_AARCH64:-/usr/share/qemu-efi-aarch64/QEMU_EFI.fd}
EMU_OVMF=${EMU_OVMF:-/usr/share/ovmf/OVMF.fd}
EMU_VGABIOS=${EMU_VGABIOS:-/usr/share/vgabios/vgabios.bin}
EMU_MEM_MB=${EMU_MEM_MB:-1024}
# QEMU arm64 machine options (tests vary the GIC, or leave EL2 out for a bare
# comparison run).
EMU_ARM64_MACHINE=${EMU_ARM64_MACHINE:-virt,virtualization=on,gic-version=3}

# FAT16 "superfloppy" of 32 cylinders x 16 heads x 63 sectors (15.75 MiB):
# Bochs derives the disk geometry from it; edk2 mounts it without a partition
# table. Built without mounting anything.
EMU_ESP_CYL=${EMU_ESP_CYL:-32} EMU_ESP_HEADS=16 EMU_ESP_SPT=63 # EMU_ESP_CYL=128: 63 MiB

# Where emu_kvm_check looks (tests point these at fake files).
EMU_KVM_DEV=${EMU_KVM_DEV:-/dev/kvm}
EMU_SYSFS=${EMU_SYSFS:-/sys}
EMU_CPUINFO=${EMU_CPUINFO:-/proc/cpuinfo}
EMU_HOST_ARCH=${EMU_HOST_ARCH:-$(uname -m)}

emu_die() {
	echo "emu: $*" >&2
	return 1
}

# emu_esp IMG ARCH EFI [SRC=ESP_PATH ...]
emu_esp() {
	local img=$1 arch=$2 efi=$3 boot_name
	shift 3
	case "$arch" in
	aarch64) boot_name=BOOTAA64.EFI ;;
	x86_64) boot_name=BOOTX64.EFI ;;
	*) emu_die "unknown arch '$arch'" || return ;;
	esac
	[ -f "$efi" ] || emu_die "no EFI image at $efi" || return
	mkdir -p "$(dirname "$img")"
	rm -f "$img" "$img.lock" # a Bochs killed by a timeout leaves its lock behind
	local sectors=$((EMU_ESP_CYL * EMU_ESP_HEADS * EMU_ESP_SPT))
	# EMU_ESP_HIDDEN=LBA: the FAT will sit in a partition at LBA (tools/image.sh)
	mkfs.fat -F 16 -n SLATESP -g "$EMU_ESP_HEADS/$EMU_ESP_SPT" ${EMU_ESP_HIDDEN:+-h "$EMU_ESP_HIDDEN"} \
		-C "$img" $((sectors / 2)) >/dev/null || emu_die "mkfs.fat failed for $img" || return
	export MTOOLS_SKIP_CHECK=1
	mmd -i "$img" ::/EFI ::/EFI/BOOT || return
	mcopy -i "$img" "$efi" "::/EFI/BOOT/$boot_name" || return
	local spec src dst dir
	for spec in "$@"; do
		src=${spec%%=*}
		dst=${spec#*=}
		[ "$src" != "$spec" ] && [ -n "$dst" ] ||
			emu_die "extra file '$spec' is not SRC=ESP_PATH" || return
		[ -f "$src" ] || emu_die "extra file '$src' does not exist" || return
		dst=${dst#/}
		dir=$(dirname "$dst")
		if [ "$dir" != . ]; then
			# create each missing parent folder
			local part path=""
			IFS=/ read -ra parts <<<"$dir"
			for part in "${parts[@]}"; do
				path="$path/$part"
				mmd -D s -i "$img" "::$path" 2>/dev/null || true # -D s: an existing folder, no prompt
			done
		fi
		mcopy -o -i "$img" "$src" "::/$dst" || return
	done
}

# emu_usb_stick IMG: the QEMU arguments that attach disk image IMG as a
# removable USB mass-storage device on an xHCI controller, one per line (the
# firmware finds it by itself: no boot order is given).
emu_usb_stick() {
	printf '%s\n' -drive "if=none,id=stick,format=raw,file=$1" -device qemu-xhci,id=xhci \
		-device usb-storage,bus=xhci.0,drive=stick,removable=on
}

# _emu_cpu_flag FLAG: the host CPU's flags line has FLAG.
_emu_cpu_flag() {
	grep -m1 '^flags' "$EMU_CPUINFO" 2>/dev/null | tr ' \t' '\n\n' | grep -qx "$1"
}

# emu_kvm_check ARCH: prints the host's virtualization path (intel | amd) when
# QEMU/KVM can run Slat's ARCH image nested here; otherwise explains on stderr
# and returns 1. KVM gives its guest VMX or SVM only with the kvm_intel or
# kvm_amd module's "nested" parameter on.
emu_kvm_check() {
	local arch=$1 path="" module nested
	if [ "$EMU_HOST_ARCH" != x86_64 ] || [ "$arch" != x86_64 ]; then
		emu_die "ACCEL=kvm runs Slat's x86_64 image on an x86_64 host only (host $EMU_HOST_ARCH," \
			"ARCH=$arch); use the default ACCEL=tcg" || return
	fi
	_emu_cpu_flag vmx && path=intel
	_emu_cpu_flag svm && path=amd
	if [ ! -e "$EMU_KVM_DEV" ]; then
		local hint="the host CPU flags show neither vmx nor svm: no hardware virtualization here"
		[ -n "$path" ] && hint="load the module: modprobe kvm_$path"
		emu_die "ACCEL=kvm: $EMU_KVM_DEV does not exist, KVM is not available on this host" \
			"($hint); use the default ACCEL=tcg" || return
	fi
	if [ ! -r "$EMU_KVM_DEV" ] || [ ! -w "$EMU_KVM_DEV" ]; then
		emu_die "ACCEL=kvm: no read/write access to $EMU_KVM_DEV (join the kvm group)" || return
	fi
	[ -n "$path" ] || emu_die "ACCEL=kvm: the host CPU flags ($EMU_CPUINFO) show neither vmx nor" \
		"svm: Slat needs VT-x or SVM from the host" || return
	module=kvm_$path
	nested=$(cat "$EMU_SYSFS/module/$module/parameters/nested" 2>/dev/null)
	case "$nested" in
	Y | y | 1) ;;
	*)
		emu_die "ACCEL=kvm: nested virtualization is off" \
			"($EMU_SYSFS/module/$module/parameters/nested is '${nested:-missing}'):" \
			"the guest would get no $([ "$path" = intel ] && echo VMX || echo SVM);" \
			"enable it with 'modprobe -r $module && modprobe $module nested=1'" || return
		;;
	esac
	echo "$path"
}

# Runs "$@" per MODE with its serial console in LOG.
_emu_exec() {
	local mode=$1 log=$2 limit=$3
	shift 3
	if [ "$mode" = batch ]; then
		timeout -k 10 "$limit" "$@" </dev/null
	elif [ -n "${EMU_TIMEOUT:-}" ]; then
		timeout --foreground -k 10 "$EMU_TIMEOUT" "$@"
	else
		"$@"
	fi
}

_emu_qemu() {
	local mode=$1 log=$2
	shift 2
	local serial=(-serial "file:$log" -display none -monitor none)
	[ "$mode" = interactive ] && serial=(-nographic)
	_emu_exec "$mode" "$log" "${EMU_TIMEOUT:-180}" "$@" "${serial[@]}" -no-reboot -net none
}

# EMU_ARM64_FW_VARS=FILE: edk2 from the two flash devices instead of -bios:
# EMU_ARM64_FW_CODE read-only, FILE (a writable copy of a variable store) for
# its variables; the Secure Boot test's AAVMF_CODE/VARS.snakeoil.fd pair.
EMU_ARM64_FW_CODE=${EMU_ARM64_FW_CODE:-/usr/share/AAVMF/AAVMF_CODE.fd}

# emu_qemu_arm64 MODE LOG ESP CPU [QEMU ARGS...]
emu_qemu_arm64() {
	local mode=$1 log=$2 esp=$3 cpu=$4 fw=(-bios "$EMU_QEMU_EFI_AARCH64")
	shift 4
	[ -n "${EMU_ARM64_FW_VARS:-}" ] &&
		fw=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$EMU_ARM64_FW_CODE"
			-drive "if=pflash,format=raw,unit=1,file=$EMU_ARM64_FW_VARS")
	_emu_qemu "$mode" "$log" qemu-system-aarch64 -accel tcg \
		-M "$EMU_ARM64_MACHINE" -cpu "$cpu" -m "$EMU_MEM_MB" \
		-smp "${EMU_SMP:-1}" \
		"${fw[@]}" -boot menu=on,splash-time=0 \
		${esp:+-drive "file=$esp,format=raw,if=virtio"} "$@"
}

# QEMU x86 TCG runs every vCPU on one thread (round robin), not one thread per
# vCPU: QEMU 7.2's x87 state loads (FXRSTOR, XRSTOR, FLDENV, FRSTOR) clear
# IGNNE in the FIRST CPU's hflags2 from whichever vCPU thread executes them,
# a read-modify-write that races with that CPU's own VMRUN / #VMEXIT updating
# the same word. A lost NPT-off at #VMEXIT leaves CPU 0's host code running
# through the guest's NPT: its first access faults, and QEMU takes a second
# #VMEXIT in host mode that saves Slat's state over the guest's in the VMCB
# (docs/svm-primary.md "QEMU 7.2 and SMP"). One thread cannot race itself.
EMU_QEMU_X86_TCG=${EMU_QEMU_X86_TCG:-tcg,thread=single}

# EMU_X86_FW_VARS=FILE: OVMF from the two flash devices instead of -bios:
# EMU_X86_FW_CODE read-only, FILE (a writable copy of a variable store) for
# the variables. EMU_X86_FW_SECURE=1 makes the flash secure (writable only
# from SMM), as OVMF's SMM builds (*.secboot.fd, *.snakeoil.fd) need, with
# EMU_X86_MACHINE=q35,smm=on. Unset: QEMU's default machine and -bios.
EMU_X86_FW_CODE=${EMU_X86_FW_CODE:-/usr/share/OVMF/OVMF_CODE_4M.secboot.fd}

_emu_x86_firmware() {
	[ -n "${EMU_X86_MACHINE:-}" ] && printf '%s\n' -M "$EMU_X86_MACHINE"
	[ "${EMU_X86_FW_SECURE:-0}" = 1 ] &&
		printf '%s\n' -global driver=cfi.pflash01,property=secure,value=on
	if [ -n "${EMU_X86_FW_VARS:-}" ]; then
		printf '%s\n' -drive "if=pflash,format=raw,unit=0,readonly=on,file=$EMU_X86_FW_CODE" \
			-drive "if=pflash,format=raw,unit=1,file=$EMU_X86_FW_VARS"
	else
		printf '%s\n' -bios "$EMU_OVMF"
	fi
}

# emu_qemu_x86 MODE LOG ESP CPU [QEMU ARGS...]; EMU_ACCEL=kvm: -accel kvm, CPU host.
emu_qemu_x86() {
	local mode=$1 log=$2 esp=$3 cpu=$4 accel=${EMU_ACCEL:-tcg} fw
	shift 4
	[ "$accel" = kvm ] && cpu=host
	[ "$accel" = tcg ] && accel=$EMU_QEMU_X86_TCG
	mapfile -t fw < <(_emu_x86_firmware)
	_emu_qemu "$mode" "$log" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m "$EMU_MEM_MB" \
		-smp "${EMU_SMP:-1}" "${fw[@]}" ${esp:+-drive "file=$esp,format=raw"} \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 "$@"
}

# emu_qemu_x86_kernel MODE LOG CPU KERNEL INITRD CMDLINE: the same machine
# without UEFI firmware or Slat (QEMU loads the kernel itself), for benchmarks.
emu_qemu_x86_kernel() {
	local mode=$1 log=$2 cpu=$3 kernel=$4 initrd=$5 cmdline=$6
	shift 6
	_emu_qemu "$mode" "$log" qemu-system-x86_64 -accel "$EMU_QEMU_X86_TCG" -cpu "$cpu" \
		-m "$EMU_MEM_MB" -smp "${EMU_SMP:-1}" -kernel "$kernel" -initrd "$initrd" -append "$cmdline" "$@"
}

# emu_qemu_arm64_kernel MODE LOG CPU KERNEL INITRD CMDLINE: QEMU virt
# (EMU_ARM64_MACHINE: EL2, GICv3) without UEFI firmware or Slat: QEMU loads
# the Image itself and enters it at EL2, so Linux's own KVM runs there.
emu_qemu_arm64_kernel() {
	local mode=$1 log=$2 cpu=$3 kernel=$4 initrd=$5 cmdline=$6
	shift 6
	_emu_qemu "$mode" "$log" qemu-system-aarch64 -accel tcg -M "$EMU_ARM64_MACHINE" -cpu "$cpu" \
		-m "$EMU_MEM_MB" -smp "${EMU_SMP:-1}" -kernel "$kernel" -initrd "$initrd" -append "$cmdline" "$@"
}

# emu_bochs MODE LOG ESP MODEL [BXRC LINES...]
# Bochs has no headless display in Debian's build: it uses the rfb display in
# a private network namespace (no port exposed) and runs its debugger's
# "continue" from a command file. A clean ACPI power-off exits with status 1,
# so judge a run by its serial output.
emu_bochs() {
	local mode=$1 log=$2 esp=$3 model=$4
	shift 4
	local dir
	dir=$(cd "$(dirname "$log")" && pwd)
	local rc_file="$dir/bochs.rc" bxrc="$dir/bochs.bxrc" tty=""
	# Interactive on a terminal: Bochs drives it as COM1 (input and output).
	[ "$mode" = interactive ] && tty -s && tty=$(tty)
	echo c >"$rc_file"
	: >"$log"
	{
		echo "megs: $EMU_MEM_MB"
		echo "cpu: model=$model, count=${EMU_SMP:-1}, ips=100000000"
		echo "romimage: file=$EMU_OVMF"
		echo "vgaromimage: file=$EMU_VGABIOS"
		echo "ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14"
		echo "ata0-master: type=disk, mode=flat, path=$(cd "$(dirname "$esp")" && pwd)/$(basename "$esp"), cylinders=$EMU_ESP_CYL, heads=$EMU_ESP_HEADS, spt=$EMU_ESP_SPT"
		echo "boot: disk"
		if [ "$mode" = interactive ] && [ -n "$tty" ]; then
			echo "com1: enabled=1, mode=term, dev=$tty" # the terminal is the serial port
		else
			echo "com1: enabled=1, mode=file, dev=$dir/$(basename "$log")"
		fi
		echo "speaker: enabled=0"
		echo "sound: driver=dummy" # else its ALSA mixer thread aborts without a sound card
		echo "mouse: enabled=0"
		echo 'display_library: rfb, options="timeout=0"'
		echo "log: $dir/bochs.log"
		echo "panic: action=fatal"
		echo "error: action=report"
		echo "info: action=ignore"
		printf '%s\n' "$@"
	} >"$bxrc"
	local cmd=(unshare -n bochs -q -f "$bxrc" -rc "$rc_file")
	if [ "$mode" = batch ]; then
		_emu_exec batch "$log" "${EMU_TIMEOUT:-420}" "${cmd[@]}" >"$dir/bochs.out" 2>&1
		return
	fi
	if [ -n "$tty" ]; then
		"${cmd[@]}" >"$dir/bochs.out" 2>&1
		local trc=$?
		stty sane 2>/dev/null
		[ "$trc" -eq 1 ] && grep -q 'ACPI control: soft power off' "$dir/bochs.log" && trc=0
		return "$trc"
	fi
	# Interactive without a terminal: show the serial file as it grows.
	"${cmd[@]}" </dev/null >"$dir/bochs.out" 2>&1 &
	local pid=$!
	tail -n +1 -f --pid="$pid" "$log"
	wait "$pid"
	local rc=$?
	# Bochs reports a clean ACPI power-off as status 1.
	if [ "$rc" -eq 1 ] && grep -q 'ACPI control: soft power off' "$dir/bochs.log"; then
		rc=0
	fi
	return "$rc"
}

# The command-line entry used by `make run`.
_emu_main() {
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if [ "${1:-}" = kvm-check ]; then
		emu_kvm_check "${2:-x86_64}"
		return
	fi
	[ "${1:-}" = run ] || { sed -n '4,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; return 2; }
	local arch=${2:-aarch64} cpu=${3:-}
	shift $(($# < 3 ? $# : 3))
	case "${EMU_ACCEL:-tcg}" in
	tcg) ;;
	kvm)
		local path
		path=$(emu_kvm_check "$arch") || return
		echo "emu: ACCEL=kvm on an $([ "$path" = intel ] && echo "Intel host: Slat takes its VT-x" ||
			echo "AMD host: Slat takes its SVM") path (QEMU -accel kvm -cpu host, nested)" >&2
		cpu=kvm
		;;
	*) emu_die "unknown ACCEL '${EMU_ACCEL}' (tcg or kvm)" || return ;;
	esac
	local efi="$top/build/$arch/slat.efi" dir="$top/build/run/$arch-${cpu:-default}"
	mkdir -p "$dir"
	emu_esp "$dir/esp.img" "$arch" "$efi" "$@" || return
	echo "emu: booting $efi (${arch} ${cpu:-default}); serial console follows" >&2
	case "$arch:$cpu" in
	aarch64:*) emu_qemu_arm64 interactive "$dir/serial.log" "$dir/esp.img" "${cpu:-cortex-a72}" ;;
	x86_64: | x86_64:amd) emu_qemu_x86 interactive "$dir/serial.log" "$dir/esp.img" max ;;
	x86_64:kvm) emu_qemu_x86 interactive "$dir/serial.log" "$dir/esp.img" host ;;
	x86_64:intel) emu_bochs interactive "$dir/serial.log" "$dir/esp.img" corei7_skylake_x ;;
	x86_64:*) emu_qemu_x86 interactive "$dir/serial.log" "$dir/esp.img" "$cpu" ;;
	*) emu_die "unknown ARCH '$arch' (aarch64 or x86_64)" ;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	_emu_main "$@"
fi
