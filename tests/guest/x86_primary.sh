#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Guest-side checks of the x86 primary VM (run by /init for
# slat.test=x86_primary). Each check prints one "SLAT-GUEST: ..." line that
# tests/boot asserts:
#   hypervisor-bit  CPUID.1:ECX[31] as /proc/cpuinfo shows it
#   hv-vendor       CPUID 0x40000000 on each CPU (through /dev/cpu/N/cpuid,
#                   Debian's cpuid.ko): Slat's vendor string on every CPU
#                   proves that CPU runs under Slat
#   cpus            which CPUs are online
#   hotplug         CPU 1 goes offline and comes back, still under Slat
#   svm/vmx         the flags are hidden from every CPU
#   efer, vm_cr     MSRs as the guest sees them (Debian's msr.ko): EFER.SVME
#                   clear; under SVM (nested SVM offered) VM_CR = 0 and
#                   setting EFER.SVME works, under VT-x VM_CR = SVMDIS|LOCK
#                   and setting EFER.SVME is refused
#   region          Slat's region (slat.region=BASE,SIZE) lies in a Reserved range
#   devmem-ctl      another reserved range reads fine (the method works)
#   slat-read       a /dev/mem read of Slat's region fails, and the guest goes on
#   mem-sleep, s3-deep  S3 is not offered (no "deep" in /sys/power/mem_sleep,
#                   selecting it fails at once); s2idle stays
#   MARKER          the end, with the kernel's uptime
say() { echo "SLAT-GUEST: $*"; }

if grep -qw hypervisor /proc/cpuinfo; then
	say "hypervisor-bit set"
else
	say "hypervisor-bit clear"
fi

insmod /lib/modules/cpuid.ko 2>/dev/null
for d in /dev/cpu/[0-9]*; do
	n=${d##*/}
	v=$(dd if="$d/cpuid" bs=16 skip=$((0x40000000 / 16)) count=1 2>/dev/null | tail -c 12)
	say "hv-vendor cpu$n '$v'"
done
[ -e /dev/cpu/0/cpuid ] || say "hv-vendor unknown (no /dev/cpu/0/cpuid)"

say "cpus online $(cat /sys/devices/system/cpu/online)"

# CPU hotplug: the offline CPU halts with interrupts off; onlining it sends
# INIT-SIPI-SIPI again, which Slat must deliver through its mailbox (the CPU
# comes back under Slat: the vendor leaf again).
cpu1=/sys/devices/system/cpu/cpu1/online
if [ -w "$cpu1" ] && echo 0 >"$cpu1" && off=$(cat /sys/devices/system/cpu/online) &&
	echo 1 >"$cpu1"; then
	v=$(dd if=/dev/cpu/1/cpuid bs=16 skip=$((0x40000000 / 16)) count=1 2>/dev/null | tail -c 12)
	say "hotplug cpu1 off ($off) on ($(cat /sys/devices/system/cpu/online)) vendor '$v'"
else
	say "hotplug cpu1 failed (online $(cat /sys/devices/system/cpu/online))"
fi
n=$(grep -c '^flags' /proc/cpuinfo)
say "svm flag on $(grep '^flags' /proc/cpuinfo | grep -cw svm) of $n CPUs, vmx on $(grep '^flags' /proc/cpuinfo | grep -cw vmx)"

# rdmsr_hex N: MSR N of CPU 0 as 16 hex digits (empty on failure).
rdmsr_hex() {
	dd if=/dev/cpu/0/msr bs=8 count=1 iflag=skip_bytes skip=$(($1)) 2>/dev/null |
		od -An -tx8 | tr -d ' \n'
}
insmod /lib/modules/msr.ko 2>/dev/null
efer=$(rdmsr_hex 0xc0000080)
if [ -n "$efer" ]; then
	say "efer 0x$efer svme $(((0x$efer >> 12) & 1))"
	say "vm_cr 0x$(rdmsr_hex 0xc0010114)"
	v=$((0x$efer | 0x1000))
	esc=""
	for i in 0 1 2 3 4 5 6 7; do esc="$esc$(printf '\\%03o' $(((v >> (8 * i)) & 255)))"; done
	# shellcheck disable=SC2059
	printf "$esc" | dd of=/dev/cpu/0/msr bs=8 count=1 seek=$((0xc0000080 / 8)) conv=notrunc 2>/dev/null
	say "efer-svme-write status $? (efer now 0x$(rdmsr_hex 0xc0000080))"
else
	say "efer unknown (no /dev/cpu/0/msr)"
fi

region=$(sed -n 's/.*slat\.region=\(0x[0-9a-f]*\),\(0x[0-9a-f]*\).*/\1 \2/p' /proc/cmdline)
if [ -z "$region" ]; then
	say "region none (no slat.region= on the command line)"
else
	set -- $region
	base=$(($1)) size=$(($2))
	last=$((base + size - 1))
	hit=""
	ctl=""
	while read -r line; do
		case "$line" in
		*" : Reserved") ;;
		*) continue ;;
		esac
		r=${line%% *}
		s=$((0x${r%-*}))
		e=$((0x${r#*-}))
		if [ "$s" -le "$base" ] && [ "$e" -ge "$last" ]; then
			hit=$r
		elif [ -z "$ctl" ]; then
			ctl=$(printf '0x%x' "$s")
		fi
	done </proc/iomem
	if [ -n "$hit" ]; then
		say "region $1+$2 reserved in /proc/iomem"
	else
		say "region $1+$2 NOT inside a Reserved range: $(grep -i reserved /proc/iomem | tr '\n' ';')"
	fi
	val=$(devmem "$ctl" 32 2>&1)
	say "devmem-ctl reserved $ctl read status $? ($val)"
	# Slat's memory: the NPT leaves it out, Slat injects #GP, the kernel sends
	# SIGSEGV to devmem, and we must get here.
	out=$( (devmem $((base + 0x1000)) 32) 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		say "slat-read blocked (status $rc: $(echo "$out" | tail -1))"
	else
		say "slat-read NOT blocked: read $out"
	fi
fi
# ACPI S3: Slat cannot resume from it and takes \_S3_ out of the DSDT, so
# Linux offers no "deep" suspend (s2idle stays: it needs no firmware).
say "mem-sleep '$(cat /sys/power/mem_sleep 2>/dev/null)'"
if echo deep >/sys/power/mem_sleep 2>/dev/null; then
	say "s3-deep accepted"
else
	say "s3-deep refused"
fi
say "MARKER x86-primary-done uptime $(cut -d' ' -f1 /proc/uptime)"
