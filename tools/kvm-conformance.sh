#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/kvm-conformance.sh [ARCH...] - the KVM conformance table (`make
# conformance`; issue 35): every KVM selftest of Debian's linux-source-6.1
# for ARCH (tools/kvm-selftests.sh ARCH all), each run once with its default
# arguments and a time limit, on Slat's /dev/kvm (the primary's Linux with
# slat.ko) and on Linux's own KVM (the same kernel and initramfs booted by
# QEMU itself), in the same emulator with the same CPU model, 2 vCPUs and
# 2 GiB; then tools/kvm_conformance.py writes docs/kvm-conformance.md and
# docs/kvm-conformance.json from the two serial logs.
#
# Only aarch64 so far (x86_64: not yet). Environment:
#   KVM_CONF_LIMIT=SECONDS  each test's limit (default 180); a test killed
#                           at the limit is "timeout" in the table
#   KVM_CONF_ONLY=A,B       only these tests (names as in /kvm-all/), to try
#                           the runner; the table is then written to
#                           build/test/conformance/ instead of docs/
#   KVM_CONF_SIDES="slat kvm"  which sides to boot (default both; a side not
#                           booted is read from its last serial log)
# The whole arm64 run took 50 minutes of a loaded 2-core machine (2026-11-29:
# 15 min of emulation for Slat, 19 for KVM, the rest building).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
arches=("$@")
[ "${#arches[@]}" -eq 0 ] && arches=(aarch64)
sides=${KVM_CONF_SIDES:-slat kvm}
out="$top/docs"
[ -n "${KVM_CONF_ONLY:-}" ] && out="$top/build/test/conformance"
mkdir -p "$out"

log() { printf 'kvm-conformance: %s\n' "$*"; }

# The guest's initramfs with every selftest in /kvm-all/: the image of
# tools/guest.sh with a second cpio archive appended (Linux unpacks each).
conf_initrd() {
	local arch=$1 g="$top/build/guest/$1" tmp
	bash "$top/tools/kvm-selftests.sh" "$arch" all
	make -s -C "$top" "guest-$arch"
	tmp=$(mktemp -d "$g/conf.XXXX")
	mkdir -p "$tmp/kvm-all"
	cp "$g"/kvm-selftests-all/* "$tmp/kvm-all/"
	(cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
		gzip -6 >"$tmp/extra.gz"
	cat "$g/initrd.img" "$tmp/extra.gz" >"$g/initrd-conf.img"
	rm -rf "$tmp"
	log "$arch: $(ls "$g"/kvm-selftests-all | wc -l) selftests in initrd-conf.img ($(du -h "$g/initrd-conf.img" | cut -f1))"
}

for arch in "${arches[@]}"; do
	case "$arch" in
	aarch64) short=arm64 ;;
	*)
		echo "kvm-conformance.sh: $arch: not yet (aarch64 only)" >&2
		exit 2
		;;
	esac
	conf_initrd "$arch"
	for side in $sides; do
		log "$arch on $side: booting (load: $(cut -d' ' -f1-3 /proc/loadavg))"
		# A boot that fails its checks still leaves the verdicts it got.
		bash "$top/tests/conformance/t_${short}_conf_$side.sh" || log "$arch on $side: the boot test failed (see above)"
	done
	python3 "$top/tools/kvm_conformance.py" --arch "$arch" \
		--slat "$top/build/test/boot/t_${short}_conf_slat/serial.log" \
		--kvm "$top/build/test/boot/t_${short}_conf_kvm/serial.log" \
		--limit "${KVM_CONF_LIMIT:-180}" --load "$(cut -d' ' -f1-3 /proc/loadavg)" \
		--commit "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)" \
		--date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
		--md "$out/kvm-conformance.md" --json "$out/kvm-conformance.json"
	log "$arch: table in ${out#"$top"/}/kvm-conformance.{md,json}"
done
