# SPDX-License-Identifier: Apache-2.0
#
# tests/boot/lib.sh - harness for emulator boot tests. Source it from a test
# script (tests/boot/t_NAME.sh), boot once, then state expectations:
#
#   . "$(dirname "$0")/lib.sh"
#   boot_qemu_arm64 cortex-a72                  # or boot_qemu_x86 / boot_bochs /
#                                               # boot_qemu_x86_kernel /
#                                               # boot_qemu_arm64_kernel (no Slat)
#   expect 'arm64: CurrentEL EL2'               # extended regex, some line
#   expect_literal 'VHE no'                     # fixed string, some line
#   expect_in_order '^Slat ' 'memmap:' 'powering off'   # regexes, in this order
#   expect_absent 'Synchronous Exception'       # no line may match
#   expect_exit                                 # the emulator stopped by itself
#   boot_done                                   # verdict; exit status 0 / 1
#
#   boot_qemu_usb aarch64 cortex-a72 IMG        # a disk image as a USB stick
#
# Before booting, a test may build its own ESP with extra files:
#   boot_esp x86_64 path/to/slat.cfg=slat.cfg build/guest/x86_64/vmlinuz=EFI/slat/vmlinuz
# (otherwise the boot_* helpers make one holding just slat.efi). The ESP,
# serial log and emulator files are under build/test/boot/NAME/. On failure
# boot_done names every expectation that failed and prints the last 40 lines
# of the serial log. Timeouts: BOOT_TIMEOUT (seconds) overrides the defaults
# (QEMU 180 s, Bochs 420 s: the machine is shared and has 2 cores).

BOOT_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../tools/emu.sh
. "$BOOT_TOP/tools/emu.sh"

BOOT_NAME=$(basename "${0%.sh}")
BOOT_DIR="$BOOT_TOP/build/test/boot/$BOOT_NAME"
# The hypercall ABI version VERSION answers (HC_VERSION of core/hcall_abi.h,
# the one place it is stated), as the tests print it: 0x10009 for 1.9.
HC_VERSION_HEX=$(awk '/^#define HC_ABI_MAJOR/ { maj = $3 + 0 }
	/^#define HC_ABI_MINOR/ { min = $3 + 0 } END { printf "0x%x", maj * 65536 + min }' \
	"$BOOT_TOP/core/hcall_abi.h")
# The same as slat.ko prints it ("Slat ABI 1.10"), as a regex: 1\.10.
HC_VERSION_RE=$(awk '/^#define HC_ABI_MAJOR/ { maj = $3 + 0 }
	/^#define HC_ABI_MINOR/ { min = $3 + 0 } END { printf "%d\\.%d", maj, min }' \
	"$BOOT_TOP/core/hcall_abi.h")
BOOT_LOG="$BOOT_DIR/serial.log"
BOOT_ESP=""
BOOT_ARCH=""
BOOT_RC=""
BOOT_EMU=""
BOOT_ELAPSED=""
BOOT_FAILURES=()
BOOT_CHECKS=0
mkdir -p "$BOOT_DIR"

_boot_fail() {
	BOOT_FAILURES+=("$*")
}

# Builds build/ARCH/slat.efi if needed (quiet when up to date).
_boot_build() {
	make -s -C "$BOOT_TOP" "build/$1/slat.efi" >"$BOOT_DIR/make.out" 2>&1 || {
		cat "$BOOT_DIR/make.out" >&2
		echo "boot: building build/$1/slat.efi failed" >&2
		exit 1
	}
}

# boot_esp ARCH [SRC=ESP_PATH ...]: the ESP for the next boot.
boot_esp() {
	local arch=$1
	shift
	_boot_build "$arch"
	BOOT_ARCH=$arch
	BOOT_ESP="$BOOT_DIR/esp.img"
	emu_esp "$BOOT_ESP" "$arch" "$BOOT_TOP/build/$arch/slat.efi" "$@" || {
		echo "boot: could not build the ESP image" >&2
		exit 1
	}
}

_boot_ensure_esp() {
	if [ -z "$BOOT_ESP" ] || [ "$BOOT_ARCH" != "$1" ]; then
		boot_esp "$1"
	fi
}

# Runs one emulator function; records status and wall time.
_boot_run() {
	local what=$1
	shift
	rm -f "$BOOT_LOG" "$BOOT_DIR/bochs.log"
	case "$1" in
	emu_bochs) BOOT_EMU=bochs ;;
	*) BOOT_EMU=qemu ;;
	esac
	echo "boot: $what (timeout ${EMU_TIMEOUT}s)"
	local start end
	start=$(date +%s.%N)
	"$@"
	BOOT_RC=$?
	end=$(date +%s.%N)
	BOOT_ELAPSED=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	touch "$BOOT_LOG"
	echo "boot: emulator exited with status $BOOT_RC after ${BOOT_ELAPSED}s"
}

# boot_qemu_arm64 CPU [QEMU ARGS...]: QEMU virt, EL2, GICv3, edk2.
boot_qemu_arm64() {
	local cpu=$1
	shift
	_boot_ensure_esp aarch64
	EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU aarch64 -cpu $cpu" \
		emu_qemu_arm64 batch "$BOOT_LOG" "$BOOT_ESP" "$cpu" "$@"
}

# boot_qemu_x86 CPU [QEMU ARGS...]: QEMU x86-64 (TCG) with OVMF.
boot_qemu_x86() {
	local cpu=$1
	shift
	_boot_ensure_esp x86_64
	EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU x86_64 -cpu $cpu" \
		emu_qemu_x86 batch "$BOOT_LOG" "$BOOT_ESP" "$cpu" "$@"
}

# boot_qemu_x86_kernel CPU CMDLINE [INITRD]: QEMU x86-64 (TCG) loads the guest
# kernel and initramfs (INITRD, default build/guest/x86_64/initrd.img) itself:
# no firmware and no Slat (the reference runs).
boot_qemu_x86_kernel() {
	local g="$BOOT_TOP/build/guest/x86_64"
	make -s -C "$BOOT_TOP" guest-x86_64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the x86_64 guest failed" >&2
		exit 1
	}
	EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU x86_64 -cpu $1, the kernel without Slat" \
		emu_qemu_x86_kernel batch "$BOOT_LOG" "$1" "$g/vmlinuz" "${3:-$g/initrd.img}" "$2"
}

# boot_qemu_arm64_kernel CPU CMDLINE [INITRD]: QEMU virt (TCG, EL2, GICv3)
# loads the arm64 guest kernel and initramfs (INITRD, default
# build/guest/aarch64/initrd.img) itself: no firmware and no Slat; Linux's
# own KVM runs at EL2 (the reference runs).
boot_qemu_arm64_kernel() {
	local g="$BOOT_TOP/build/guest/aarch64"
	make -s -C "$BOOT_TOP" guest-aarch64 >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the aarch64 guest failed" >&2
		exit 1
	}
	EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU aarch64 -cpu $1, the kernel without Slat" \
		emu_qemu_arm64_kernel batch "$BOOT_LOG" "$1" "$g/vmlinuz" "${3:-$g/initrd.img}" "$2"
}

# boot_qemu_usb ARCH CPU IMAGE [QEMU ARGS...]: QEMU (aarch64 or x86_64) with
# disk image IMAGE as a USB stick on xHCI and no other disk: the firmware
# finds the stick and its removable-media loader by itself (make image).
boot_qemu_usb() {
	local arch=$1 cpu=$2 image=$3 stick
	shift 3
	mapfile -t stick < <(emu_usb_stick "$image")
	BOOT_ARCH=$arch
	case "$arch" in
	aarch64)
		EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU aarch64 -cpu $cpu, USB stick $image" \
			emu_qemu_arm64 batch "$BOOT_LOG" "" "$cpu" "${stick[@]}" "$@"
		;;
	x86_64)
		EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU x86_64 -cpu $cpu, USB stick $image" \
			emu_qemu_x86 batch "$BOOT_LOG" "" "$cpu" "${stick[@]}" "$@"
		;;
	*)
		echo "boot: unknown arch '$arch'" >&2
		exit 1
		;;
	esac
}

# boot_bochs MODEL [BXRC LINES...]: Bochs with OVMF (the VT-x path).
boot_bochs() {
	local model=$1
	shift
	_boot_ensure_esp x86_64
	EMU_TIMEOUT=${BOOT_TIMEOUT:-420} _boot_run "Bochs cpu model=$model" \
		emu_bochs batch "$BOOT_LOG" "$BOOT_ESP" "$model" "$@"
}

# The serial log without carriage returns and terminal escape sequences. The
# expect_* greps read it as text (-a) whatever bytes it holds: a crashed
# guest's console can print NULs, and grep would then answer "binary file
# matches" on stderr instead of the line, so that expect_absent passed.
_boot_text() {
	tr -d '\r' <"$BOOT_LOG" | sed 's/\x1b\[[0-9;=?]*[A-Za-z]//g'
}

# expect REGEX...: each extended regex matches at least one line.
expect() {
	local re
	for re in "$@"; do
		BOOT_CHECKS=$((BOOT_CHECKS + 1))
		_boot_text | grep -aEq -- "$re" || _boot_fail "expected a line matching /$re/"
	done
}

# expect_literal STRING...: each fixed string occurs in some line.
expect_literal() {
	local s
	for s in "$@"; do
		BOOT_CHECKS=$((BOOT_CHECKS + 1))
		_boot_text | grep -aFq -- "$s" || _boot_fail "expected a line containing '$s'"
	done
}

# expect_in_order REGEX...: lines matching each regex appear in this order
# (each after the line that matched the previous one).
expect_in_order() {
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	local after=0 re n
	for re in "$@"; do
		# the regex goes through the environment: awk -v would eat backslashes
		n=$(_boot_text | RE="$re" awk -v from="$after" \
			'NR > from && $0 ~ ENVIRON["RE"] { print NR; exit }')
		if [ -z "$n" ]; then
			_boot_fail "expected /$re/ after line $after (in-order check)"
			return
		fi
		after=$n
	done
}

# expect_absent REGEX...: no line matches.
expect_absent() {
	local re hit
	for re in "$@"; do
		BOOT_CHECKS=$((BOOT_CHECKS + 1))
		hit=$(_boot_text | grep -aEm1 -- "$re")
		[ -z "$hit" ] || _boot_fail "unexpected line matching /$re/: $hit"
	done
}

# expect_count N REGEX: exactly N lines match.
expect_count() {
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	local n
	n=$(_boot_text | grep -aEc -- "$2")
	[ "$n" -eq "$1" ] || _boot_fail "expected $1 line(s) matching /$2/, found $n"
}

# expect_slat_faults N: the exit summary's SLAT-fault exits are exactly N bad
# accesses of the primary (each answered with an injected fault) plus the
# faults Slat retried because it was changing that map entry (its "primary
# SLAT faults retried" line). Both counts are exact: a vCPU that exits after
# its VM began shutting down (the teardown's own faults) parks uncounted.
expect_slat_faults() {
	local faults retried
	faults=$(_boot_text | sed -nE 's/^slat: exits: slat-fault +([0-9]+) .*/\1/p')
	retried=$(_boot_text | sed -nE 's/^slat: primary SLAT faults retried while Slat changed the map: ([0-9]+)$/\1/p')
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	[ -n "$faults" ] && [ -n "$retried" ] && [ "$faults" -eq $(($1 + retried)) ] ||
		_boot_fail "expected slat-fault exits = $1 + retried faults, found '$faults' and '$retried'"
}

# expect_exit: the emulator stopped on its own (power-off), not by the
# timeout. QEMU exits 0 on power-off; Bochs exits 1 on an ACPI soft power-off,
# so for Bochs its own log must say so.
expect_exit() {
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	case "$BOOT_RC" in
	124 | 137)
		_boot_fail "the emulator did not stop by itself (killed by the timeout)"
		return
		;;
	esac
	if [ "$BOOT_EMU" = bochs ]; then
		grep -q 'ACPI control: soft power off' "$BOOT_DIR/bochs.log" 2>/dev/null ||
			_boot_fail "Bochs stopped without an ACPI power-off (status $BOOT_RC)"
	elif [ "$BOOT_RC" -ne 0 ]; then
		_boot_fail "the emulator exited with status $BOOT_RC"
	fi
}

# expect_slat_report ARCH STATUS: the parts every slat.efi report has: the
# banner, the memory-map summary, the power-off line with STATUS
# (EFI_SUCCESS / EFI_UNSUPPORTED), in this order, exactly one banner (no
# reboot loop), no firmware exception dump, and the emulator powered off.
expect_slat_report() {
	expect_in_order "^Slat [^ ]+ \\($1\\), a bare-metal hypervisor\$" \
		'^memmap: [0-9]+ entries, RAM [0-9]+ MiB, largest free region [0-9]+ MiB at 0x[0-9a-f]+$' \
		'^memmap: +Conventional +[0-9]+ regions' \
		"^slat: powering off \\($2\\)\$"
	expect_count 1 '^Slat '
	expect_absent 'Synchronous Exception' 'X64 Exception Type' '^error: ResetSystem returned'
	expect_exit
}

# boot_done: prints the verdict and exits (0 when every expectation held).
boot_done() {
	if [ "$BOOT_CHECKS" -eq 0 ]; then
		_boot_fail "the test states no expectations"
	fi
	if [ "${#BOOT_FAILURES[@]}" -eq 0 ]; then
		echo "boot: $BOOT_NAME passed ($BOOT_CHECKS checks, emulator ${BOOT_ELAPSED}s)"
		exit 0
	fi
	echo "boot: $BOOT_NAME FAILED (${#BOOT_FAILURES[@]} of $BOOT_CHECKS checks," \
		"emulator ${BOOT_ELAPSED}s, status $BOOT_RC)"
	printf '  - %s\n' "${BOOT_FAILURES[@]}"
	echo "---- last 40 lines of $BOOT_LOG"
	_boot_text | tail -n 40
	echo "----"
	exit 1
}
