#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-kvm-api.sh [SECONDS [RUNS [MAX [ARCHES [ONLY]]]]] - issue 16's benchmark:
# the same Linux KVM selftest binaries (tools/kvm-selftests.sh) on the two
# /dev/kvm implementations in the same emulator, per architecture (ARCHES,
# default "aarch64 x86_64"):
#   aarch64  QEMU -M virt,virtualization=on -cpu cortex-a72, 2 CPUs, 2 GiB, TCG
#   x86_64   QEMU -cpu max (AMD SVM + NPT), 2 CPUs, 2 GiB, TCG on one thread
#            (tools/emu.sh: QEMU 7.2's multi-threaded TCG corrupts SVM state)
# and on each:
#   slat  Slat boots Debian's kernel as its primary (arm64 at EL1, x86 as an
#         SVM guest, through UEFI firmware), slat.ko answers /dev/kvm, VMs are
#         Slat secondaries;
#   kvm   the same kernel and initramfs booted by QEMU itself (no firmware, no
#         Slat): Linux's own KVM answers /dev/kvm (arm64: at EL2, nVHE; x86:
#         kvm-amd.ko on the emulated SVM).
# The guest runs tests/guest/kvm_bench.sh: memslot_perf_test's six sub-tests
# at 64 slots and (MAX=1, the default) at the largest count both accept
# (-s 32764: Slat's and x86 KVM's KVM_CAP_NR_MEMSLOTS; arm64 KVM's is 32767),
# -l SECONDS -r RUNS (default 2 and 3), and RUNS timed
# memslot_modification_stress_test runs, then RUNS dirty_log_perf_test and
# kvm_page_table_test runs; ONLY (default all) keeps one group: memslot,
# dirty_log_perf or page_table_thp. One JSON object per figure on stdout.
# TCG wall time: the ratio shows the two designs' costs as this emulator
# executes them, not hardware.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
secs=${1:-2}
runs=${2:-3}
max=${3:-1}
arches=${4:-aarch64 x86_64}
only=${5:-all}
out="$top/build/bench/kvm-api"
mkdir -p "$out"
status=0
export EMU_MEM_MB=2048 EMU_SMP=2 EMU_TIMEOUT=2400

# boot_both ARCH: the Slat run and the Linux-KVM run of ARCH, serial logs in
# $out/serial-{slat,kvm}-ARCH.log.
boot_both() {
	local arch=$1 g="$top/build/guest/$1" con cmdline
	make -s -C "$top" "build/$arch/slat.efi" "guest-$arch" >"$out/make-$arch.out" 2>&1 || {
		cat "$out/make-$arch.out" >&2
		return 1
	}
	con=ttyAMA0
	[ "$arch" = x86_64 ] && con=ttyS0
	cmdline="console=$con panic=-1 slat.test=kvm_bench slat.kvmbench=$secs,$runs,$max,$only"
	bench_cfg "$out/slat-$arch.cfg" "$cmdline" "hypervisor = on"
	EMU_ESP_CYL=128 emu_esp "$out/slat-$arch.img" "$arch" "$top/build/$arch/slat.efi" \
		"$out/slat-$arch.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" ||
		return 1
	case $arch in
	aarch64)
		emu_qemu_arm64 batch "$out/serial-slat-$arch.log" "$out/slat-$arch.img" cortex-a72
		_emu_qemu batch "$out/serial-kvm-$arch.log" qemu-system-aarch64 -accel tcg \
			-M virt,virtualization=on,gic-version=3 -cpu cortex-a72 -m "$EMU_MEM_MB" \
			-smp "$EMU_SMP" -kernel "$g/vmlinuz" -initrd "$g/initrd.img" -append "$cmdline"
		;;
	x86_64)
		emu_qemu_x86 batch "$out/serial-slat-$arch.log" "$out/slat-$arch.img" max
		emu_qemu_x86_kernel batch "$out/serial-kvm-$arch.log" max "$g/vmlinuz" \
			"$g/initrd.img" "$cmdline"
		;;
	esac
}

for arch in $arches; do
	boot_both "$arch" || status=1
	for sys in slat kvm; do
		log="$out/serial-$sys-$arch.log"
		text=$(tr -d '\r' <"$log" 2>/dev/null)
		n=$(sed -n 's/^SLAT-BENCH //p' <<<"$text" | tee /dev/stderr | wc -l)
		sed -n 's/^SLAT-BENCH //p' <<<"$text"
		if [ "$n" -eq 0 ] || ! grep -q "^SLAT-GUEST: kvm_bench on $arch, /dev/kvm from $sys" <<<"$text" ||
			! grep -q '^SLAT-GUEST: bench done$' <<<"$text"; then
			echo "bench-kvm-api: $arch $sys: $n results, no 'bench done' from /dev/kvm of $sys (see $log)" >&2
			status=1
		fi
	done
done
exit $status
