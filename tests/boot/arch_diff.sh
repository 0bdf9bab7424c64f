# SPDX-License-Identifier: Apache-2.0
#
# tests/boot/arch_diff.sh - the differential harness of the architectural test
# payloads (tests/arch/). Sourced after lib.sh by tests/boot/t_arch_*.sh.
#
# Each payload boots twice under the same emulator flags: bare (the payload is
# the firmware's boot image) and under Slat (slat.efi is the boot image and
# starts the payload as its loader, inside the primary VM). Both runs must end
# with ARCHTEST-END, and their "ARCHTEST <check>: <verdict>" lines must be
# identical, in the same order: a verdict Slat changes fails the test, and so
# does a check that only one run reached. The Slat run must also show that
# Slat really held the virtualization mode, so a silent fallback to bare
# cannot pass.
#
#   arch_diff_x86_qemu CPU PAYLOAD...       QEMU x86-64 (EMU_SMP, extra args in ARCH_QEMU_ARGS)
#   arch_diff_x86_bochs MODEL PAYLOAD...    Bochs (VT-x); extra bxrc lines in ARCH_BXRC
#   arch_diff_arm64 CPU GIC PAYLOAD...      QEMU virt, gic-version=GIC; bare runs
#                                           without EL2 (virtualization=off): the
#                                           payload runs at EL1 both times; machine
#                                           options in ARCH_MACHINE_EXTRA (",mte=on")
#                                           go to both runs
#
# Logs: build/test/boot/NAME/PAYLOAD.{bare,slat}.log and .verdicts.

ARCH_QEMU_ARGS=(${ARCH_QEMU_ARGS[@]+"${ARCH_QEMU_ARGS[@]}"})
ARCH_BXRC=(${ARCH_BXRC[@]+"${ARCH_BXRC[@]}"})

# The payload images (make archtest), built once per test script.
_arch_build() {
	make -s -C "$BOOT_TOP" archtest "build/$1/slat.efi" >"$BOOT_DIR/make-archtest.out" 2>&1 || {
		cat "$BOOT_DIR/make-archtest.out" >&2
		echo "boot: building the payloads failed" >&2
		exit 1
	}
}

# _arch_esp ARCH PAYLOAD MODE: the ESP of one run (bare or slat).
_arch_esp() {
	local arch=$1 payload=$2 mode=$3
	local efi="$BOOT_TOP/build/$arch/arch/$payload.efi"
	[ -f "$efi" ] || {
		echo "boot: no payload $efi" >&2
		exit 1
	}
	BOOT_ARCH=$arch
	BOOT_ESP="$BOOT_DIR/$payload.$mode.img"
	if [ "$mode" = bare ]; then
		emu_esp "$BOOT_ESP" "$arch" "$efi" || exit 1
		return
	fi
	local cfg="$BOOT_DIR/$payload.slat.cfg"
	{
		echo "# written by tests/boot/arch_diff.sh"
		echo "loader  = \\arch\\$payload.efi"
		echo "initrd  ="
		echo "cmdline ="
	} >"$cfg"
	emu_esp "$BOOT_ESP" "$arch" "$BOOT_TOP/build/$arch/slat.efi" "$cfg=slat.cfg" \
		"$efi=arch/$payload.efi" || exit 1
}

# The verdict lines of a log, without carriage returns or escape sequences.
_arch_verdicts() {
	tr -d '\r' <"$1" | sed 's/\x1b\[[0-9;=?]*[A-Za-z]//g' | grep -E '^ARCHTEST(-END| )' || true
}

# _arch_compare PAYLOAD SLAT_MARKER: judge the two runs of one payload.
_arch_compare() {
	local p=$1 marker=$2 bare="$BOOT_DIR/$1.bare" slat="$BOOT_DIR/$1.slat"
	_arch_verdicts "$bare.log" >"$bare.verdicts"
	_arch_verdicts "$slat.log" >"$slat.verdicts"
	local mode
	for mode in bare slat; do
		BOOT_CHECKS=$((BOOT_CHECKS + 1))
		if ! grep -q '^ARCHTEST-END ' "$BOOT_DIR/$p.$mode.verdicts"; then
			local why
			why=$(tr -d '\r' <"$BOOT_DIR/$p.$mode.log" | grep -m1 '^ARCHTEST-ABORT' || true)
			_boot_fail "$p ($mode): no ARCHTEST-END${why:+ ($why)}; last verdict:" \
				"$(grep '^ARCHTEST ' "$BOOT_DIR/$p.$mode.verdicts" | tail -1)"
		fi
	done
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	tr -d '\r' <"$slat.log" | grep -Eq -- "$marker" ||
		_boot_fail "$p (slat): Slat did not report /$marker/: the payload did not run in the primary VM"
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	if ! diff -q "$bare.verdicts" "$slat.verdicts" >/dev/null; then
		_boot_fail "$p: verdicts differ (bare vs Slat): $(diff "$bare.verdicts" "$slat.verdicts" |
			grep '^[<>]' | head -12 | tr '\n' '|')"
	fi
	local n
	n=$(grep -c '^ARCHTEST ' "$bare.verdicts")
	echo "boot: $p: $n verdicts bare, $(grep -c '^ARCHTEST ' "$slat.verdicts") under Slat"
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	[ "$n" -gt 0 ] || _boot_fail "$p: the bare run printed no verdicts"
}

# _arch_run ARCH PAYLOAD MODE EMU_FN ARGS...: one boot into PAYLOAD.MODE.log.
_arch_run() {
	local arch=$1 p=$2 mode=$3
	shift 3
	_arch_esp "$arch" "$p" "$mode"
	BOOT_LOG="$BOOT_DIR/$p.$mode.log"
	_boot_run "$p ($mode)" "$@"
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	case "$BOOT_RC" in
	124 | 137) _boot_fail "$p ($mode): the emulator did not stop by itself (killed after ${EMU_TIMEOUT}s)" ;;
	esac
}

# _arch_diff_x86 TIMEOUT EMU_FN MODEL PAYLOAD... [-- EXTRA ARGS...]: both runs
# of each payload on one x86 emulator (QEMU or Bochs: same firmware, same
# marker of the primary VM).
_arch_diff_x86() {
	local limit=$1 emu=$2 model=$3 p
	shift 3
	local payloads=() extra=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		payloads+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift && extra=("$@")
	_arch_build x86_64
	for p in "${payloads[@]}"; do
		local mode
		for mode in bare slat; do
			EMU_TIMEOUT=${BOOT_TIMEOUT:-$limit} _arch_run x86_64 "$p" "$mode" \
				"$emu" batch "$BOOT_DIR/$p.$mode.log" "$BOOT_DIR/$p.$mode.img" "$model" \
				${extra[@]+"${extra[@]}"}
		done
		_arch_compare "$p" '^slat: firmware continues as the primary VM on [0-9]+ CPU'
	done
}

arch_diff_x86_qemu() {
	_arch_diff_x86 120 emu_qemu_x86 "$@" -- ${ARCH_QEMU_ARGS[@]+"${ARCH_QEMU_ARGS[@]}"}
}

arch_diff_x86_bochs() {
	_arch_diff_x86 420 emu_bochs "$@" -- ${ARCH_BXRC[@]+"${ARCH_BXRC[@]}"}
}

arch_diff_arm64() {
	local cpu=$1 gic=$2 p
	shift 2
	_arch_build aarch64
	for p in "$@"; do
		EMU_ARM64_MACHINE="virt,gic-version=$gic${ARCH_MACHINE_EXTRA:-}" EMU_TIMEOUT=${BOOT_TIMEOUT:-120} \
			_arch_run aarch64 "$p" bare emu_qemu_arm64 batch "$BOOT_DIR/$p.bare.log" \
			"$BOOT_DIR/$p.bare.img" "$cpu" ${ARCH_QEMU_ARGS[@]+"${ARCH_QEMU_ARGS[@]}"}
		EMU_ARM64_MACHINE="virt,virtualization=on,gic-version=$gic${ARCH_MACHINE_EXTRA:-}" EMU_TIMEOUT=${BOOT_TIMEOUT:-120} \
			_arch_run aarch64 "$p" slat emu_qemu_arm64 batch "$BOOT_DIR/$p.slat.log" \
			"$BOOT_DIR/$p.slat.img" "$cpu" ${ARCH_QEMU_ARGS[@]+"${ARCH_QEMU_ARGS[@]}"}
		_arch_compare "$p" '^slat: firmware dropped to EL1 on cpu 0; vm primary running$'
	done
}
