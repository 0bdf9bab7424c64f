# SPDX-License-Identifier: Apache-2.0
#
# Shared body of the secondary-VM boot tests (sourced after lib.sh): the
# primary's Linux runs tests/guest/secondary.sh (slat.ko and the /dev/slat
# programs of linux/tests/).
#
#   secondary_bare ARCH    Debian's kernel straight under QEMU (no firmware,
#                          no Slat): slat.ko must refuse to load
#   secondary_expect_refused REGEX   the refusal lines, REGEX for dmesg's
#   secondary_expect_pass  the PASS lines of every program (under Slat)

secondary_guest() {
	make -s -C "$BOOT_TOP" "guest-$1" >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the $1 guest failed" >&2
		exit 1
	}
}

secondary_bare() {
	local arch=$1 g="$BOOT_TOP/build/guest/$1"
	secondary_guest "$arch"
	BOOT_ARCH=$arch
	if [ "$arch" = aarch64 ]; then
		EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU aarch64 bare kernel" \
			_emu_qemu batch "$BOOT_LOG" qemu-system-aarch64 -accel tcg -M virt \
			-cpu cortex-a72 -m 512 -kernel "$g/vmlinuz" -initrd "$g/initrd.img" \
			-append "console=ttyAMA0 panic=-1 slat.test=secondary"
	else
		EMU_TIMEOUT=${BOOT_TIMEOUT:-180} _boot_run "QEMU x86_64 bare kernel" \
			emu_qemu_x86_kernel batch "$BOOT_LOG" max "$g/vmlinuz" "$g/initrd.img" \
			"console=ttyS0 panic=-1 slat.test=secondary"
	fi
}

secondary_expect_refused() {
	expect_in_order '^SLAT-GUEST: secondary on ' \
		'^SLAT-GUEST: slat.ko refused to load: .*No such device' \
		"^SLAT-GUEST: dmesg: slat: $1" \
		'^SLAT-GUEST: MARKER secondary-refused$' \
		'^SLAT-GUEST: test secondary exit 1$'
	expect_count 1 '^SLAT-GUEST: dmesg: slat: '
	expect_absent 'Kernel panic' 'Oops' 'BUG:'
	expect_exit
}

# secondary_expect_log_read CPUS: the primary read Slat's log (/dev/slat_log):
# from the banner to the "slat: region ... reserved" line (logged by slat.efi
# after the ring moved to the region, so the resident copy shares that ring)
# exactly the serial port's lines, and CPUS lines the resident Slat wrote as
# each CPU entered the primary.
secondary_expect_log_read() {
	local want got
	expect "^SLAT-GUEST: /dev/slat_log cr--------, $1 CPUs entering the primary\$"
	want=$(_boot_text | grep -av '^SLAT-GUEST: ' |
		sed -n '/^Slat .*, a bare-metal hypervisor$/,/^slat: region .* reserved; /p')
	got=$(_boot_text | sed -n 's/^SLAT-GUEST: slat-log: //p')
	BOOT_CHECKS=$((BOOT_CHECKS + 1))
	if ! printf '%s\n' "$want" | grep -q '^slat: region ' || [ "$want" != "$got" ]; then
		_boot_fail "the log read through /dev/slat_log is not the serial port's:" \
			"$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -n 6)"
	fi
}

# secondary_expect_pass [ROUNDS [CALLS]]: the defaults of tests/guest/secondary.sh
secondary_expect_pass() {
	local rounds=${1:-20} calls=${2:-100000}
	expect_in_order '^SLAT-GUEST: secondary on ' \
		'^SLAT-GUEST: dmesg: slat: Slat ABI 1\.[0-9]+, /dev/slat ready$' \
		'^SLAT-GUEST: vmtest round 1: ok: 64 slots written and checked by 2 vCPUs: 0 \+ 0 bad' \
		'^SLAT-GUEST: vmtest round 1: ok: slot 1 deleted \(Success\), slot 2 moved' \
		'^SLAT-GUEST: vmtest round 1: ok: moved slot 2: check-only at 0x8000000 finds the pattern' \
		'^SLAT-GUEST: vmtest round 1: ok: deleted slot 1: a read at 0x100000 is an MMIO exit \(1 exits, at 0x100000\)' \
		'^SLAT-GUEST: vmtest round 1: ok: delete of slot 65 zapped [1-9][0-9]* leaves, the [1-9][0-9]* its pass mapped' \
		'^SLAT-GUEST: vmtest round 1: ok: other slots undisturbed: re-check 0 bad, 0 faults, 0 leaves mapped' \
		"^SLAT-GUEST: vmtest round $rounds: ok\$" \
		"^SLAT-GUEST: vmtest: HV_STATS after $rounds rounds: .*vms 0 .*every page accounted for\$" \
		"^SLAT-GUEST: vmtest: PASS \\($rounds rounds, 0 failed checks\\)\$" \
		'^SLAT-GUEST: slat-vmtest exit 0$' \
		'^SLAT-GUEST: killtest: mid-run: 1 VM, 4112 pages pinned, [1-9][0-9]* held by Slat: ok$' \
		'^SLAT-GUEST: killtest: after: 0 VMs, 0 pages pinned, 0 held by Slat: ok$' \
		'^SLAT-GUEST: killtest: MemFree before the child [0-9]+ kB, mid-run [0-9]+ kB, after [0-9]+ kB \(slack [0-9]+ kB\): (within|outside) \(informational\)$' \
		'^SLAT-GUEST: killtest: PASS$' \
		'^SLAT-GUEST: raw calls without allow_raw_calls: refused$' \
		'^SLAT-GUEST: rmmod slat status 0$' \
		"^SLAT-GUEST: fuzz: seed 0x1, $calls calls" \
		'^SLAT-GUEST: fuzz: calls per status: ' \
		"^SLAT-GUEST: fuzz: Slat answers VERSION after the fuzz: status 0, $HC_VERSION_HEX: ok\$" \
		'^SLAT-GUEST: fuzz: PASS$' \
		'^SLAT-GUEST: rmmod slat status 0$' \
		'^SLAT-GUEST: MARKER secondary-done'
	expect_count 4 '^SLAT-GUEST: fuzz: victim slot [1-4]: 1024 words checked, 0 bad, 0 MMIO exits +: ok$'
	expect_count 0 'FAILED'
	expect_absent '^SLAT-GUEST: dmesg: .*(leak|never deposited|BUG|WARNING|Oops)' 'Kernel panic' \
		'^error: '
	expect_exit
}
