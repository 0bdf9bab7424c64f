#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-qemu-vmm.sh [RUNS [ARCHES]] - issue 34's benchmark: one VM's
# life under Debian's unmodified QEMU 7.2 (tests/guest/qemu_bench.sh: QEMU's
# start, the VM's boot to its shell, the monitor's `info stats`, the shell's
# power-off, QEMU's exit) on the two /dev/kvm implementations in the same
# emulator, RUNS times each (default 3), alternating, per architecture of
# ARCHES (default "aarch64 x86_64"):
#   slat  Slat boots Debian's kernel as its primary through UEFI firmware, as
#         t_arm64_qemu / t_x86_svm_qemu do (arm64: QEMU virt at EL2, GICv3,
#         cortex-a72, 2 CPUs; x86: -cpu max, SVM + NPT, 2 CPUs on one TCG
#         thread), slat.ko answers QEMU's /dev/kvm;
#   kvm   the same kernel and initramfs booted by QEMU itself, no firmware,
#         no Slat (tests/slow/t_*_qemu_reference.sh): Linux's own KVM (arm64
#         at EL2, nVHE; x86 kvm-amd with ONE emulated CPU: with two, QEMU
#         7.2's emulated nested SVM hangs KVM's L2, docs/kvm-api.md).
# The same QEMU command line on both: arm64 -M virt,gic-version=3,its=off,
# x86 -M pc,hpet=off (the in-kernel irqchip and PIT), -cpu host -smp 2
# -m 256, a virtio-blk disk. One JSON line per run on stdout
# (tools/bench_qemu_log.py): the times, QEMU's `info stats` of the VM and of
# each vCPU (KVM_GET_STATS_FD: Slat's slat_* figures, KVM's own), and on KVM
# the kvm_exit / kvm_userspace_exit tracepoint histograms of the whole run.
# Exit status 1 if a run did not reach QEMU's clean exit.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
runs=${1:-3}
arches=${2:-aarch64 x86_64}
out="$top/build/bench/qemu-vmm"
mkdir -p "$out"
status=0
export EMU_MEM_MB=2048 EMU_TIMEOUT=2400

# prepare ARCH: slat.efi, the guest with QEMU in its initramfs, Slat's ESP.
prepare() {
	local arch=$1 g="$top/build/guest/$1" con=ttyAMA0 cyl=128
	[ "$arch" = x86_64 ] && con=ttyS0 cyl=200
	{ make -s -C "$top" "build/$arch/slat.efi" "guest-$arch" &&
		bash "$top/tools/qemu-guest.sh" "$arch"; } >"$out/make-$arch.out" 2>&1 || {
		cat "$out/make-$arch.out" >&2
		return 1
	}
	cmdline="console=$con panic=-1 quiet slat.test=qemu_bench"
	bench_cfg "$out/slat-$arch.cfg" "$cmdline" "hypervisor = on"
	EMU_ESP_CYL=$cyl emu_esp "$out/slat-$arch.img" "$arch" "$top/build/$arch/slat.efi" \
		"$out/slat-$arch.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" \
		"$g/initrd-qemu.img=slat/initrd.img" >/dev/null
}

# boot ARCH SYSTEM LOG: one run, its serial console in LOG.
boot() {
	local arch=$1 sys=$2 log=$3 g="$top/build/guest/$1"
	rm -f "$log"
	case $arch-$sys in
	aarch64-slat) EMU_SMP=2 emu_qemu_arm64 batch "$log" "$out/slat-$arch.img" cortex-a72 ;;
	aarch64-kvm)
		EMU_SMP=2 emu_qemu_arm64_kernel batch "$log" cortex-a72 "$g/vmlinuz" "$g/initrd-qemu.img" \
			"$cmdline slat.qemu_kvm=linux"
		;;
	x86_64-slat) EMU_SMP=2 emu_qemu_x86 batch "$log" "$out/slat-$arch.img" max ;;
	x86_64-kvm)
		EMU_SMP=1 emu_qemu_x86_kernel batch "$log" max "$g/vmlinuz" "$g/initrd-qemu.img" \
			"$cmdline slat.qemu_kvm=linux"
		;;
	esac
}

for arch in $arches; do
	prepare "$arch" || {
		status=1
		continue
	}
	for i in $(seq 1 "$runs"); do
		for sys in slat kvm; do
			log="$out/serial-$sys-$arch-$i.log"
			echo "bench-qemu-vmm: $arch $sys run $i (serial log $log)" >&2
			start=$(bench_now)
			boot "$arch" "$sys" "$log"
			rc=$?
			wall=$(awk -v s="$start" -v e="$(bench_now)" 'BEGIN { printf "%.1f", e - s }')
			python3 "$top/tools/bench_qemu_log.py" "$log" "$arch" "$sys" "$i" "$rc" "$wall" || status=1
		done
	done
done
exit $status
