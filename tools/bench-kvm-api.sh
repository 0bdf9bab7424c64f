#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-kvm-api.sh [SECONDS [RUNS [MAX]]] - issue 16's benchmark: the same
# Linux KVM selftest binaries (tools/kvm-selftests.sh) on the two /dev/kvm
# implementations in the same emulator (QEMU aarch64 -M virt,virtualization=on
# -cpu cortex-a72, 2 CPUs, 2 GiB, TCG):
#   slat  Slat boots Debian's kernel as its primary (at EL1), slat.ko answers
#         /dev/kvm, VMs are Slat secondaries;
#   kvm   the same kernel and initramfs booted straight at EL2 by QEMU (no
#         firmware, no Slat): Linux's own KVM (nVHE) answers /dev/kvm.
# The guest runs tests/guest/kvm_bench.sh: memslot_perf_test's six sub-tests
# at 64 slots and (MAX=1, the default) at the largest count both accept
# (-s 32764: Slat's KVM_CAP_NR_MEMSLOTS; arm64 KVM's is 32767), -l SECONDS -r RUNS (default 2 and 3), and RUNS timed
# memslot_modification_stress_test
# runs. One JSON object per figure on stdout. TCG wall time: the ratio shows
# the two designs' costs as this emulator executes them, not hardware.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=emu.sh
. "$top/tools/emu.sh"
# shellcheck source=bench_boot_lib.sh
. "$top/tools/bench_boot_lib.sh"
secs=${1:-2}
runs=${2:-3}
max=${3:-1}
out="$top/build/bench/kvm-api"
mkdir -p "$out"
make -s -C "$top" build/aarch64/slat.efi guest-aarch64 >"$out/make.out" 2>&1 || {
	cat "$out/make.out" >&2
	exit 1
}
g="$top/build/guest/aarch64"
cmdline="console=ttyAMA0 panic=-1 slat.test=kvm_bench slat.kvmbench=$secs,$runs,$max"
status=0
export EMU_MEM_MB=2048 EMU_SMP=2 EMU_TIMEOUT=2400

bench_cfg "$out/slat.cfg" "$cmdline" "hypervisor = on"
EMU_ESP_CYL=128 emu_esp "$out/slat.img" aarch64 "$top/build/aarch64/slat.efi" \
	"$out/slat.cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd.img=slat/initrd.img" || exit 1
emu_qemu_arm64 batch "$out/serial-slat.log" "$out/slat.img" cortex-a72
_emu_qemu batch "$out/serial-kvm.log" qemu-system-aarch64 -accel tcg \
	-M virt,virtualization=on,gic-version=3 -cpu cortex-a72 -m "$EMU_MEM_MB" -smp "$EMU_SMP" \
	-kernel "$g/vmlinuz" -initrd "$g/initrd.img" -append "$cmdline"

for sys in slat kvm; do
	log="$out/serial-$sys.log"
	n=$(tr -d '\r' <"$log" | sed -n 's/^SLAT-BENCH //p' | tee /dev/stderr | wc -l)
	tr -d '\r' <"$log" | sed -n 's/^SLAT-BENCH //p'
	text=$(tr -d '\r' <"$log")
	if [ "$n" -eq 0 ] || ! grep -q "^SLAT-GUEST: kvm_bench on .*/dev/kvm from $sys" <<<"$text" ||
		! grep -q '^SLAT-GUEST: bench done$' <<<"$text"; then
		echo "bench-kvm-api: $sys: $n results, no 'bench done' from /dev/kvm of $sys (see $log)" >&2
		status=1
	fi
done
exit $status
