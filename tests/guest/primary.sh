#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Guest-side checks of the arm64 primary VM (run by /init for slat.test=primary).
# Each check prints one "SLAT-GUEST: ..." line that tests/boot asserts:
#   el         the kernel started at EL1 (Slat holds EL2), or EL2 when booted bare
#   cpus       which CPUs are online
#   hotplug    CPU 1 goes offline and comes back
#   region     Slat's region (slat.region=BASE,SIZE from Slat) is listed as reserved
#   devmem-ctl another reserved range reads fine (the method itself works)
#   slat-read  a /dev/mem read of Slat's region fails, and the guest goes on
#   MARKER     the end, with the kernel's uptime
say() { echo "SLAT-GUEST: $*"; }

if dmesg | grep -q 'CPU: All CPU(s) started at EL1'; then
	say "el EL1"
elif dmesg | grep -q 'CPU: All CPU(s) started at EL2'; then
	say "el EL2"
else
	say "el unknown ($(dmesg | grep -m1 'started at EL'))"
fi

say "cpus online $(cat /sys/devices/system/cpu/online)"

# CPU hotplug: CPU_OFF, AFFINITY_INFO and a second CPU_ON, all through Slat.
cpu1=/sys/devices/system/cpu/cpu1/online
if [ -w "$cpu1" ] && echo 0 >"$cpu1" && off=$(cat /sys/devices/system/cpu/online) &&
	echo 1 >"$cpu1"; then
	say "hotplug cpu1 off ($off) on ($(cat /sys/devices/system/cpu/online))"
else
	say "hotplug cpu1 failed"
fi

region=$(sed -n 's/.*slat\.region=\(0x[0-9a-f]*\),\(0x[0-9a-f]*\).*/\1 \2/p' /proc/cmdline)
if [ -z "$region" ]; then
	say "region none (no slat.region= on the command line)"
else
	set -- $region
	base=$1 size=$2
	end=$(printf '%x' $((base + size - 1)))
	start=$(printf '%x' $((base)))
	# /proc/iomem prints lower-case hex without 0x, zero-padded to 8 digits.
	if grep -Eiq "^ *0*${start}-0*${end} : reserved" /proc/iomem; then
		say "region $base+$size reserved in /proc/iomem"
	else
		say "region $base+$size NOT listed as reserved: $(grep -i reserved /proc/iomem | tr '\n' ';')"
	fi
	# Control: the first word of another top-level "reserved" range (firmware
	# memory the kernel does not map, like Slat's) reads fine through the same
	# /dev/mem path, so a failure below is the stage-2's doing.
	ctl=$(grep -E '^[0-9a-f]+-[0-9a-f]+ : reserved$' /proc/iomem | grep -iv "^0*${start}-" | head -1)
	ctl=0x${ctl%%-*}
	val=$(devmem "$ctl" 32 2>&1)
	say "devmem-ctl reserved $ctl read status $? ($val)"
	# Slat's memory: the read must fail (the stage-2 leaves it unmapped, Slat
	# injects an external abort, the kernel sends SIGBUS) and we must get here.
	out=$( (devmem $((base + 0x1000)) 32) 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		say "slat-read blocked (status $rc: $(echo "$out" | tail -1))"
	else
		say "slat-read NOT blocked: read $out"
	fi
fi
say "MARKER primary-done uptime $(cut -d' ' -f1 /proc/uptime)"
