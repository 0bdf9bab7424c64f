#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What tests/guest/vmm_slat.sh (Slat's /dev/kvm) and vmm_ref.sh (Linux's own
# KVM) run alike with slat-vmm: sourced, not run.
#
#   vm_run TAG CPUS DISK SHELL CMDLINE
#       one VM through /vm/run-vm.sh (CMDLINE added to the VM's command line):
#       the Debian kernel and /vm/initrd.img (tools/vmm-initrd.sh)
#       with CPUS vCPUs and the disk image DISK (made here: 4 MiB of random
#       bytes). Its console lines are prefixed "SLAT-GUEST: TAG: ". This side
#       then compares the VM's SHA-256 of /dev/vda with its own of the image,
#       and reads back the line the VM wrote at sector 8. SHELL=shell: once
#       the VM's init says "shell ready", a command line and "poweroff -f"
#       are typed on the VM's console (slat-vmm's stdin); SHELL=hvc: the same
#       with slat-vmm's --console virtio, the VM's shell on /dev/hvc0 and
#       another command line ("VMM-HVC: ..."); SHELL=none: no shell. With
#       VM_PEER=TAG2 the typing also waits until VM TAG2's shell is ready:
#       two VMs started together are then both up before either powers off.
#   vm_bad_args
#       slat-vmm's refusals of bad arguments: status 2 and one line each.
VMM=/slat/slat-vmm
VM_LIMIT=${VM_LIMIT:-240} # slat-vmm --timeout: then registers, status 1

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# shell_ready TAG: VM TAG's init has started its shell.
shell_ready() { grep -q 'VMM-GUEST: shell ready' "/tmp/$1.out" 2>/dev/null; }

# feed_shell TAG KIND [PEER]: types on the VM's console (KIND shell: the
# UART's; hvc: the virtio console's hvc0) once its shell (and PEER's, when
# given) is ready; gives up when the VM has ended (TAG.done) or after 20
# minutes, and stops waiting for PEER once it has ended without a shell.
feed_shell() {
	local n=0
	until shell_ready "$1" && { [ -z "$3" ] || shell_ready "$3"; }; do
		[ -e "/tmp/$1.done" ] || [ $n -ge 12000 ] && return
		[ -n "$3" ] && [ -e "/tmp/$3.done" ] && ! shell_ready "$3" && shell_ready "$1" && break
		sleep 0.1
		n=$((n + 1))
	done
	if [ "$2" = hvc ]; then
		printf '%s\n' 'echo "VMM-HVC: $((6 * 7)) from $(tty) of a VM with $(nproc) CPUs"' 'poweroff -f'
	else
		printf '%s\n' 'echo "VMM-SHELL: $((6 * 7)) from the console of a VM with $(nproc) CPUs"' 'poweroff -f'
	fi
}

vm_run() {
	local tag=$1 cpus=$2 disk=$3 shell=$4 args=$5 vm_shell console=uart want start end took got wrote back
	dd if=/dev/urandom of="$disk" bs=1M count=4 2>/dev/null
	want=$(sha256sum "$disk" | cut -d' ' -f1)
	rm -f "/tmp/$tag.out" "/tmp/$tag.done" "/tmp/$tag.in"
	[ "$shell" = hvc ] && console=virtio
	if [ "$shell" = shell ] || [ "$shell" = hvc ]; then
		vm_shell=1
		mkfifo "/tmp/$tag.in"
		feed_shell "$tag" "$shell" "${VM_PEER:-}" >"/tmp/$tag.in" &
	else
		vm_shell=0
		: >"/tmp/$tag.in"
	fi
	start=$(uptime_s)
	# A hang is a failure: slat-vmm's --timeout (status 1, with the vCPUs'
	# registers), else a kill a minute later (status 137).
	# /vm/run-vm.sh (tools/vm/run-vm.sh), as a user starts a VM.
	{
		VM_SHELL=$vm_shell VM_APPEND="$args" timeout -s KILL $((VM_LIMIT + 60)) /vm/run-vm.sh \
			--mem 256M --cpus "$cpus" --disk "$disk" --console $console --timeout "$VM_LIMIT" -v \
			<"/tmp/$tag.in" 2>&1
		echo $? >"/tmp/$tag.rc"
	} | tee "/tmp/$tag.out" | sed "s/^/SLAT-GUEST: $tag: /"
	touch "/tmp/$tag.done"
	end=$(uptime_s)
	took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	echo "SLAT-GUEST: $tag: vmm exit $(cat "/tmp/$tag.rc") after $took s"
	got=$(sed -n 's/.*VMM-GUEST: disk vda [0-9]* sectors sha256 \([0-9a-f]*\).*/\1/p' "/tmp/$tag.out" | head -1)
	if [ -n "$got" ] && [ "$got" = "$want" ]; then
		echo "SLAT-GUEST: $tag: disk checksum matches the image's"
	else
		echo "SLAT-GUEST: $tag: disk checksum MISMATCH: VM '$got', image '$want'"
	fi
	wrote=$(sed -n 's/.*VMM-GUEST: disk wrote \(vm-wrote-[0-9a-f-]*\) at sector 8.*/\1/p' "/tmp/$tag.out" | head -1)
	back=$(dd if="$disk" bs=512 skip=8 count=1 2>/dev/null | head -1 | tr -d '\000')
	if [ -n "$wrote" ] && [ "$back" = "$wrote" ]; then
		echo "SLAT-GUEST: $tag: the VM's write is in the image"
	else
		echo "SLAT-GUEST: $tag: disk write MISMATCH: VM '$wrote', image '$back'"
	fi
}

# bad EXPECTED ARGS...: one refused run, its status and its one-line message.
bad() {
	want=$1
	shift
	$VMM "$@" >/tmp/bad.out 2>&1 </dev/null
	rc=$?
	verdict=ok
	[ "$rc" -eq "$want" ] && [ "$(wc -l </tmp/bad.out)" -eq 1 ] || verdict=WRONG
	echo "SLAT-GUEST: vmm bad-arg $verdict: exit $rc: $(head -1 /tmp/bad.out)"
}

# The kernel's size decides two refusals: x86's bzImage needs more than the
# least --mem (its init_size), arm64's Image does not, so arm64 refuses an
# Image header without image_size (a kernel before 3.17) and an initrd too big
# for 64 MiB instead.
vm_bad_size_args() {
	k=/vm/vmlinuz
	if [ "$(uname -m)" = aarch64 ]; then
		head -c 64 $k >/tmp/old-image
		dd if=/dev/zero of=/tmp/old-image bs=8 seek=2 count=1 conv=notrunc 2>/dev/null
		bad 2 --kernel /tmp/old-image
		dd if=/dev/zero of=/tmp/big-initrd.img bs=1M count=40 2>/dev/null
		bad 2 --kernel $k --initrd /tmp/big-initrd.img --mem 64M
		rm -f /tmp/big-initrd.img
	else
		bad 2 --kernel $k --mem 64M
		bad 2 --kernel $k --initrd /vm/vmlinuz --mem 80M
	fi
}

vm_bad_args() {
	k=/vm/vmlinuz
	bad 2 --kernel /vm/missing
	bad 2 --kernel /vm/initrd.img
	bad 2 --kernel $k --mem 16M
	vm_bad_size_args
	bad 2 --kernel $k --initrd /vm/missing
	bad 2 --kernel $k --cpus 0
	bad 2 --kernel $k --cpus 5
	bad 2 --kernel $k --mem lots
	bad 2 --kernel $k --bogus
	bad 2 --initrd /vm/initrd.img
	bad 2 --kernel $k --disk /vm/missing.img
	bad 2 --kernel $k --disk /dev/null
	head -c 100 /dev/zero >/tmp/tiny.img
	bad 2 --kernel $k --disk /tmp/tiny.img
	bad 2 --kernel $k --disk /tmp/tiny.img --disk /tmp/tiny.img
	bad 2 --kernel $k --timeout 0
}
