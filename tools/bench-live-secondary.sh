#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-live-secondary.sh [RUNS] [SIZES] [ARCH...] - issue 14's live
# benchmark: Slat boots Debian's kernel as its primary, which loads slat.ko
# and runs linux/tests/slat-bench (tests/guest/bench_secondary.sh): for VMs
# of 8, 32, 128 and 512 slots of 64 KiB (the first SIZES of them), in the
# slot-scoped mode and in the zap-all mode (VM_CREATE flag ZAP_ALL, the old
# way), the latency of one slot delete, the vCPU's refaults afterwards, and
# the VM_DESTROY time beside the SLAT table bytes. ARCH: aarch64 (QEMU
# cortex-a72, 2 CPUs, GICv3) and/or x86_64 (QEMU -cpu max, SVM). One JSON
# object per measurement on stdout (the guest's SLAT-BENCH lines). TCG wall
# time: the figures compare the two modes in the same run; they are not
# hardware timings.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
runs=${1:-3}
sizes=${2:-4}
shift 2 || shift $#
arches=("$@")
[ "${#arches[@]}" -eq 0 ] && arches=(aarch64 x86_64)
out="$top/build/bench/live-secondary"
mkdir -p "$out"
status=0
for arch in "${arches[@]}"; do
	make -s -C "$top" "build/$arch/slat.efi" "guest-$arch" >"$out/make-$arch.out" 2>&1 || {
		cat "$out/make-$arch.out" >&2
		exit 1
	}
	g="$top/build/guest/$arch"
	con=ttyAMA0
	[ "$arch" = x86_64 ] && con=ttyS0
	bench_cfg "$out/$arch.cfg" \
		"console=$con panic=-1 slat.test=bench_secondary slat.bench=$runs,$sizes" \
		"hypervisor = on"
	EMU_ESP_CYL=128 emu_esp "$out/$arch.img" "$arch" "$top/build/$arch/slat.efi" \
		"$out/$arch.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" ||
		exit 1
	log="$out/serial-$arch.log"
	if [ "$arch" = aarch64 ]; then
		EMU_SMP=2 EMU_TIMEOUT=1500 emu_qemu_arm64 batch "$log" "$out/$arch.img" cortex-a72
	else
		EMU_SMP=2 EMU_TIMEOUT=1500 emu_qemu_x86 batch "$log" "$out/$arch.img" max
	fi
	n=$(tr -d '\r' <"$log" | sed -n 's/^SLAT-BENCH //p' | tee /dev/stderr | wc -l)
	tr -d '\r' <"$log" | sed -n 's/^SLAT-BENCH //p'
	if [ "$n" -eq 0 ] || ! grep -q 'SLAT-GUEST: bench done' "$log"; then
		echo "bench-live-secondary: $arch: $n results, no 'bench done' (see $log)" >&2
		status=1
	fi
done
exit $status
