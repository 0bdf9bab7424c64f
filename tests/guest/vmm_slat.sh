#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slat-vmm on Slat's /dev/kvm (slat.test=vmm_slat, tests/slow/t_x86_svm_vmm.sh):
# the primary's Linux under Slat loads slat.ko and runs /slat/slat-vmm on the
# Debian kernel and busybox initramfs of initrd-vmm.img (tools/vmm-initrd.sh),
# as tests/guest/vmm_ref.sh does on Linux's own KVM. Slat's KVM has no
# kvmclock, PIT or TSC-deadline timer: the VM is told the TSC frequency and the
# delay loop this kernel measured (tsc_early_khz=, lpj=) and to skip the
# timer check. The VM's lines are prefixed "SLAT-GUEST: vm: ".
echo "SLAT-GUEST: vmm_slat on $(uname -m), kernel $(uname -r)"
if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
	echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
	echo "SLAT-GUEST: MARKER vmm_slat-refused"
	exit 1
fi
dmesg | grep 'slat:' | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
khz=$(dmesg | sed -n 's/.*tsc: Detected \([0-9]*\)\.\([0-9]\{3\}\) MHz.*/\1\2/p' | head -1)
lpj=$(dmesg | sed -n 's/.*(lpj=\([0-9]*\)).*/\1/p' | head -1)
echo "SLAT-GUEST: timing for the VM: tsc_early_khz=$khz lpj=$lpj"
start=$(cut -d' ' -f1 /proc/uptime)
{
	timeout -s KILL "${VMM_LIMIT:-1200}" /slat/slat-vmm --kernel /vm/vmlinuz --initrd /vm/initrd.img \
		--mem 256M --cpus 2 -v \
		--cmdline "console=ttyS0 loglevel=7 panic=-1 tsc_early_khz=$khz lpj=$lpj no_timer_check" 2>&1
	echo $? >/tmp/vmm.rc
} | sed 's/^/SLAT-GUEST: vm: /'
end=$(cut -d' ' -f1 /proc/uptime)
echo "SLAT-GUEST: vmm exit $(cat /tmp/vmm.rc) after $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
dmesg | grep 'slat' | tail -20 | sed 's/^\[[^]]*\] /SLAT-GUEST: dmesg: /'
echo "SLAT-GUEST: MARKER vmm_slat-done"
