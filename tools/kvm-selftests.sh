#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/kvm-selftests.sh ARCH [all] - build a few of Linux's KVM selftests for
# ARCH (aarch64 or x86_64) as static binaries, from Debian's linux-source-6.1,
# into build/guest/ARCH/kvm-selftests/ (the guest image's /kvm):
#
#   kvm_create_max_vcpus  memslot_modification_stress_test  memslot_perf_test
#   kvm_page_table_test  dirty_log_perf_test  dirty_log_test
#   set_memory_region_test, x86_64/xapic_ipi_test, x86_64/cpuid_test,
#   x86_64/sync_regs_test, x86_64/set_sregs_test, x86_64/platform_info_test,
#   x86_64/tsc_msrs_test (x86_64 only)
#   aarch64/psci_test, aarch64/get-reg-list (aarch64 only)
#
# The linux-source-6.1 .deb is downloaded once (apt-get download, into the
# build/guest/dl/ cache tools/guest.sh uses) and only the parts of its tarball
# that the selftests and `make headers` need are unpacked into
# build/kvm-selftests/src/ (stamped with the package version). Nothing from
# Debian is vendored in the repository.
#
# UAPI headers come from the same tree: `make headers` with O= per ARCH
# (build/kvm-selftests/ARCH/kbuild/usr/include), not linux-libc-dev, whose
# arm64 cross flavour lags the 6.1 stable release by far. Objects go to
# build/kvm-selftests/ARCH/obj/; make rebuilds only what changed, and the
# stamps force a clean rebuild when the source version changes.
#
# The 6.1 memslot_perf_test and set_memory_region_test give the vCPU 2 s
# (alarm(2), sem_timedwait +2 s) with no option to change it, far too little
# under a software-emulated CPU: the unpacked copy is patched (never the
# repository) to KVM_SELFTESTS_TIMEOUT seconds (default 300); the script logs
# each change, and the original is kept as FILE.orig. Likewise x86_64/
# xapic_ipi_test's sender guest gives the halting vCPU 2e9 TSC ticks (about
# 1 s: "current CPUs typically run at 2.x GHz") to take each IPI, wake and
# halt again; on a busy 2-CPU host the two emulated vCPUs' threads can miss
# that window (seen twice under load average 5-8), so the copy waits
# KVM_SELFTESTS_TIMEOUT / 10 times as long.
#
# Debian's 6.1 dirty_log_test.c uses TEST_ASSERT_EQ (a stable backport)
# which its test_util.h does not define: the build would fail. The unpacked
# copy gets a definition right after its includes, only when none exists
# (#ifndef): TEST_ASSERT of the equality, the same check; nothing else of the
# test changes.
#
# dirty_log_test.c of 6.1 lets the vCPU go on (sem_post) before it writes the
# next iteration number into the guest (sync_global_to_guest): a vCPU thread
# that waits for a host core between its load of the number and its store can
# store an old number after the next harvest, and the test fails with "Set
# page N value M incorrect" on any hypervisor (seen under load average 12 on
# Slat, arm64 64 KiB mode). Linux fixed the test in 6.14 (commit 67428ee7b746,
# the two lines swapped); the unpacked copy gets the same order.
#
# `all`: every selftest the 6.1 Makefile lists for ARCH (TEST_GEN_PROGS_ARCH)
# into build/guest/ARCH/kvm-selftests-all/ instead, for the conformance run
# (tools/kvm-conformance.sh; not in the guest image). Two more of them do not
# build from the unpacked package as it is, and get a fix here:
# aarch64/vgic_init.c includes <linux/bitfield.h>, a kernel header that 6.1's
# tools/include lacks: it gets a header of our own with the two macros the
# test uses (FIELD_PREP, FIELD_GET), in build/kvm-selftests/ARCH/fixinc/,
# given to the build through EXTRA_CFLAGS; rseq_test.c includes
# ../rseq/rseq.c: tools/testing/selftests/rseq is unpacked with the rest.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:?usage: tools/kvm-selftests.sh aarch64|x86_64}
base="$top/build/kvm-selftests"
src="$base/src"
dl="$top/build/guest/dl"
out="$top/build/guest/$arch/kvm-selftests"
all=0
case "${2:-}" in
all) all=1 out="$top/build/guest/$arch/kvm-selftests-all" ;;
"") ;;
*)
	echo "kvm-selftests.sh: unknown mode '$2' (all or nothing)" >&2
	exit 2
	;;
esac
pkg=linux-source-6.1
timeout=${KVM_SELFTESTS_TIMEOUT:-300}

# kvm_page_table_test, dirty_log_perf_test and dirty_log_test: dirty logging
# (ABI 1.9) as KVM's selftests use it; dirty_log_test's slot is 1 GiB and 3
# pages (lazy slots over 1 GiB: ABI 1.10).
tests=(kvm_create_max_vcpus kvm_binary_stats_test memslot_modification_stress_test
	memslot_perf_test kvm_page_table_test dirty_log_perf_test dirty_log_test
	demand_paging_test)
case "$arch" in
aarch64)
	karch=arm64 cross=aarch64-linux-gnu-
	tests+=(aarch64/psci_test aarch64/get-reg-list)
	;;
x86_64)
	karch=x86_64 cross=
	# kvm_page_table_test is also an L1 workload for nested SVM (tests/guest/nested.sh)
	tests+=(set_memory_region_test x86_64/xapic_ipi_test x86_64/cpuid_test
		x86_64/sync_regs_test x86_64/set_sregs_test x86_64/platform_info_test
		x86_64/tsc_msrs_test)
	;;
*)
	echo "kvm-selftests.sh: unknown arch '$arch' (aarch64 or x86_64)" >&2
	exit 2
	;;
esac

log() { printf 'kvm-selftests: %s\n' "$*"; }

# What of the kernel tarball is unpacked: the selftests with their includes
# and tools/lib/rbtree.c, and what `make headers` needs for both ARCHes (the
# top Makefile and scripts/, the UAPI trees, the arch Makefiles, and x86's
# syscall tables and relocs tool, which the headers target depends on).
members=(
	Makefile scripts include/uapi
	tools/build tools/include tools/lib tools/arch/x86/include tools/arch/arm64/include
	tools/testing/selftests/lib.mk tools/testing/selftests/kselftest.h
	tools/testing/selftests/kselftest_harness.h tools/testing/selftests/kvm tools/testing/selftests/rseq
	arch/x86/Makefile arch/x86/Makefile_32.cpu arch/x86/include/uapi
	arch/x86/entry/syscalls arch/x86/tools
	arch/arm64/Makefile arch/arm64/include/uapi
)

# The candidate version of linux-source-6.1 ("" when apt knows none).
candidate_version() {
	apt-cache show --no-all-versions "$pkg" 2>/dev/null | awk '/^Version:/{print $2; exit}'
}

# A tree unpacked before a member was added to the list (rseq): unpack the
# members it lacks from the cached .deb, without unpacking the rest again.
fetch_missing_members() {
	local m missing=() deb
	for m in "${members[@]}"; do
		[ -e "$src/$m" ] || missing+=("$pkg/$m")
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	deb=$(ls "$dl/${pkg}"_*_all.deb 2>/dev/null | head -1 || true)
	[ -n "$deb" ] || return 0 # fetch_source unpacks it all with the next version
	log "unpacking ${missing[*]#"$pkg"/} (not in the unpacked tree)"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" | xz -dc -T2 |
		tar -x -C "$src" --strip-components=1 "${missing[@]}"
}

# Download (once) and unpack (once per version) the kernel source.
fetch_source() {
	local stamp="$base/src.stamp" ver deb tmp before
	# apt-cache takes a second here (no pkgcache.bin): ask it only when
	# apt's lists changed since the version was last checked.
	if [ -f "$stamp" ] && [ -z "$(find /var/lib/apt/lists -maxdepth 1 -newer "$stamp" -name '*Packages*' 2>/dev/null | head -1)" ]; then
		fetch_missing_members
		return 0
	fi
	ver=$(candidate_version)
	if [ -z "$ver" ]; then
		log "apt-cache does not know $pkg; apt-get update"
		apt-get update -qq || true
		ver=$(candidate_version)
	fi
	if [ -z "$ver" ]; then
		if [ -f "$stamp" ]; then
			log "$pkg not in apt's lists; keeping the unpacked $(cat "$stamp")"
			return 0
		fi
		echo "kvm-selftests.sh: cannot resolve $pkg (apt-get update failed?)" >&2
		exit 1
	fi
	if [ "$(cat "$stamp" 2>/dev/null)" = "$ver" ]; then
		touch "$stamp"
		fetch_missing_members
		return 0
	fi

	mkdir -p "$dl" "$base"
	deb="$dl/${pkg}_${ver//:/%3a}_all.deb"
	if [ ! -f "$deb" ]; then
		log "downloading $pkg $ver"
		(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$ver" >/dev/null)
		# One version is enough: drop the ones it replaces (139 MB each).
		find "$dl" -maxdepth 1 -name "${pkg}_*_all.deb" ! -path "$deb" -delete
	fi
	log "unpacking $(basename "$deb") (selftests and headers subset)"
	before=$(date +%s)
	rm -f "$stamp"
	rm -rf "$src" "$base"/src.tmp.*
	tmp=$(mktemp -d "$base/src.tmp.XXXX")
	chmod 755 "$tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" | xz -dc -T2 |
		tar -x -C "$tmp" --strip-components=1 "${members[@]/#/$pkg/}"
	mv "$tmp" "$src"
	echo "$ver" >"$stamp"
	log "unpacked $ver into ${src#"$top"/} in $(($(date +%s) - before)) s ($(du -sh "$src" | cut -f1))"
}

# Replace exactly one occurrence of $2 by $3 in selftests/kvm/$1, or fail.
patch_one() {
	local f="$src/tools/testing/selftests/kvm/$1" from=$2 to=$3 n
	n=$(grep -cF -- "$from" "$f" || true)
	if [ "$n" != 1 ]; then
		echo "kvm-selftests.sh: $1: expected one '$from', found $n; the 6.1 source changed" >&2
		exit 1
	fi
	sed -i "s/$(printf '%s' "$from" | sed 's/[][\.*^$/]/\\&/g')/$to/" "$f"
	log "patched $1: '$from' -> '$to'"
}

# TEST_ASSERT_EQ for dirty_log_test.c (see the header): a guarded definition
# after its last include line.
patch_assert_eq() {
	local f="$src/tools/testing/selftests/kvm/dirty_log_test.c" at='#include "processor.h"' def
	[ "$(grep -cxF -- "$at" "$f" || true)" = 1 ] || {
		echo "kvm-selftests.sh: dirty_log_test.c: expected one '$at'; the 6.1 source changed" >&2
		exit 1
	}
	def=$(
		cat <<'EOF'
#ifndef TEST_ASSERT_EQ /* tools/kvm-selftests.sh: the test_util.h of 6.1 lacks it */
#define TEST_ASSERT_EQ(a, b) TEST_ASSERT((a) == (b), "%s == %s failed", #a, #b)
#endif
EOF
	)
	awk -v at="$at" -v def="$def" '{ print } $0 == at { print def }' "$f" >"$f.new"
	mv "$f.new" "$f"
	log "patched dirty_log_test.c: TEST_ASSERT_EQ defined where test_util.h lacks it"
}

# dirty_log_test's iteration number written before the vCPU goes on (see the
# header): the one place where sem_post is followed by the sync, swapped.
patch_iteration_order() {
	local f="$src/tools/testing/selftests/kvm/dirty_log_test.c"
	awk '
		prev != "" && $0 == "\t\tsync_global_to_guest(vm, iteration);" { print; print prev; prev = ""; n++; next }
		prev != "" { print prev; prev = "" }
		$0 == "\t\tsem_post(&sem_vcpu_cont);" { prev = $0; next }
		{ print }
		END { if (prev != "") print prev; exit n != 1 }' "$f" >"$f.new" || {
		echo "kvm-selftests.sh: dirty_log_test.c: expected one sem_post before the iteration sync; the 6.1 source changed" >&2
		exit 1
	}
	mv "$f.new" "$f"
	log "patched dirty_log_test.c: the iteration number reaches the guest before the vCPU goes on"
}

# The fixed vCPU timeouts (see the header) and TEST_ASSERT_EQ, applied to
# pristine copies so that changing KVM_SELFTESTS_TIMEOUT re-patches without
# unpacking again.
patch_timeouts() {
	local stamp="$src/.slat-patch" want="timeout=$timeout assert_eq ipi_window iteration_order" f
	[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
	[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || {
		echo "kvm-selftests.sh: KVM_SELFTESTS_TIMEOUT must be a number of seconds" >&2
		exit 2
	}
	for f in memslot_perf_test.c set_memory_region_test.c dirty_log_test.c x86_64/xapic_ipi_test.c; do
		f="$src/tools/testing/selftests/kvm/$f"
		if [ -f "$f.orig" ]; then cp -p "$f.orig" "$f"; else cp -p "$f" "$f.orig"; fi
	done
	# host_perform_sync(): SIGALRM (kills the test) if the guest takes
	# more than 2 s to reach its next sync point.
	patch_one memslot_perf_test.c 'alarm(2);' "alarm($timeout);"
	# wait_for_vcpu(): sem_timedwait() for the guest's first GUEST_SYNC.
	patch_one memslot_perf_test.c 'ts.tv_sec += 2;' "ts.tv_sec += $timeout;"
	patch_one set_memory_region_test.c 'ts.tv_sec += 2;' "ts.tv_sec += $timeout;"
	# The sender's wait for the halter's IPI, wake-up and halt (see the header).
	patch_one x86_64/xapic_ipi_test.c 'rdtsc() - tsc_start < 2000000000' \
		"rdtsc() - tsc_start < 2000000000ull * $((timeout / 10 > 1 ? timeout / 10 : 1))"
	patch_assert_eq
	patch_iteration_order
	echo "$want" >"$stamp"
}

# The ARCH's UAPI headers from the same tree, into kbuild/usr/include.
build_headers() {
	local kb="$base/$arch/kbuild" ver before
	ver=$(cat "$base/src.stamp")
	[ "$(cat "$kb/.slat-stamp" 2>/dev/null)" = "$ver" ] && return 0
	log "make headers ARCH=$karch ($ver)"
	before=$(date +%s)
	rm -rf "$kb"
	mkdir -p "$kb"
	make -s -j2 -C "$src" O="$kb" ARCH="$karch" headers >/dev/null
	echo "$ver" >"$kb/.slat-stamp"
	log "headers for $karch in $(($(date +%s) - before)) s"
}

# Every test the Makefile lists for ARCH (the `all` mode).
all_tests() {
	sed -n "s/^TEST_GEN_PROGS_$arch += *\([^ ]*\) *\$/\1/p" \
		"$src/tools/testing/selftests/kvm/Makefile"
}

# <linux/bitfield.h> for aarch64/vgic_init.c (see the header): our own two
# macros, the field's mask shifted to bit 0 and back.
write_fixinc() {
	local d="$base/$arch/fixinc/linux"
	mkdir -p "$d"
	cat >"$d/bitfield.h.new" <<'EOF'
/* Written by tools/kvm-selftests.sh: 6.1's tools/include has no bitfield.h. */
#ifndef SLAT_FIXINC_BITFIELD_H
#define SLAT_FIXINC_BITFIELD_H
#define FIELD_PREP(mask, val) \
	((((__typeof__(mask))(val)) << __builtin_ctzll(mask)) & (mask))
#define FIELD_GET(mask, reg) \
	((__typeof__(mask))(((reg) & (mask)) >> __builtin_ctzll(mask)))
#endif
EOF
	if cmp -s "$d/bitfield.h.new" "$d/bitfield.h"; then
		rm "$d/bitfield.h.new"
	else
		mv "$d/bitfield.h.new" "$d/bitfield.h"
	fi
}

build_tests() {
	local obj="$base/$arch/obj" hdr="$base/$arch/kbuild/usr" cfg t changed=0
	[ -x "$(command -v "${cross}gcc")" ] || {
		echo "kvm-selftests.sh: ${cross}gcc missing (run tools/deps.sh)" >&2
		exit 1
	}
	# make does not track headers or flags: start over when they change.
	cfg="$(cat "$base/src.stamp") ARCH=$karch CROSS_COMPILE=$cross USERLDFLAGS=-static"
	if [ "$(cat "$obj/.slat-stamp" 2>/dev/null)" != "$cfg" ]; then
		rm -rf "$obj"
		mkdir -p "$obj"
		echo "$cfg" >"$obj/.slat-stamp"
	fi
	# USERLDFLAGS is appended to the Makefile's LDFLAGS (-pthread -no-pie);
	# LDFLAGS= on the command line would replace them. INSTALL_HDR_PATH and
	# KHDR_INCLUDES point the -I and -isystem at this ARCH's headers.
	make -s -j2 -C "$src/tools/testing/selftests/kvm" ARCH="$karch" CROSS_COMPILE="$cross" \
		OUTPUT="$obj" INSTALL_HDR_PATH="$hdr" KHDR_INCLUDES="-isystem $hdr/include" \
		EXTRA_CFLAGS="-I$base/$arch/fixinc" USERLDFLAGS=-static "${tests[@]/#/$obj/}"
	mkdir -p "$out"
	for t in "${tests[@]}"; do # flat in the image: /kvm/NAME
		if ! cmp -s "$obj/$t" "$out/${t##*/}"; then
			cp "$obj/$t" "$out/${t##*/}"
			changed=$((changed + 1))
		fi
	done
	log "$arch: ${#tests[@]} static tests in ${out#"$top"/} ($changed updated)"
}

mkdir -p "$base"
# One run at a time: both ARCHes share the unpacked tree.
exec 9>"$base/.lock"
flock 9
fetch_source
patch_timeouts
build_headers
if [ "$all" = 1 ]; then
	mapfile -t tests < <(all_tests)
	write_fixinc
fi
build_tests
