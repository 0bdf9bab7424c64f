#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The KVM API benchmark (slat.test=kvm_bench, tools/bench-kvm-api.sh): the same
# Linux KVM selftest binaries on whichever /dev/kvm this kernel has: Linux's
# own KVM (the kernel booted at EL2 without Slat) or slat.ko's (the primary
# under Slat). One "SLAT-BENCH {json}" line per figure. Kernel argument
# slat.kvmbench=SECONDS,RUNS,MAX[,ONLY] (default 2,3,1,all): memslot_perf_test's
# -l and -r, whether to run it at the largest slot count too (1) or not (0),
# and which tests: all, or one of memslot, dirty_log_perf, page_table_thp.
arg=$(sed -n 's/.*slat\.kvmbench=\([0-9a-z_,]*\).*/\1/p' /proc/cmdline)
IFS=, read -r secs runs max only <<EOF_ARGS
$arg
EOF_ARGS
secs=${secs:-2}
runs=${runs:-3}
max=${max:-1}
only=${only:-all}
# wanted TEST: whether ONLY selects TEST.
wanted() { [ "$only" = all ] || [ "$only" = "$1" ]; }
ulimit -n 4096
# arm64: Linux's KVM is built in (/dev/kvm exists when the kernel runs at
# EL2). x86: the CPU offers SVM only without Slat (Slat hides it from its
# primary), so there Linux's KVM modules are loaded.
if [ ! -e /dev/kvm ] && grep -qw svm /proc/cpuinfo && ! sh /tests/linux_kvm.sh; then
	echo "SLAT-GUEST: bench done (failed)"
	exit 1
fi
if [ -e /dev/kvm ]; then
	system=kvm
else
	system=slat
	if ! insmod /lib/modules/slat.ko 2>/tmp/insmod.err; then
		echo "SLAT-GUEST: slat.ko refused to load: $(cat /tmp/insmod.err)"
		echo "SLAT-GUEST: bench done (failed)"
		exit 1
	fi
fi
arch=$(uname -m)
echo "SLAT-GUEST: kvm_bench on $arch, /dev/kvm from $system, -l $secs -r $runs, tests: $only"

up() { cut -d' ' -f1 /proc/uptime; }

# perf SLOTS: every memslot_perf_test sub-test with at most SLOTS slots.
perf() {
	/kvm/memslot_perf_test -s "$1" -l "$secs" -r "$runs" -f 0 -e 5 >/tmp/perf 2>&1
	rc=$?
	sed 's/^/SLAT-GUEST: perf: /' /tmp/perf | grep -E 'Testing|Best|Memslot|Assertion'
	awk -v arch="$arch" -v sys="$system" -v req="$1" -v rc="$rc" '
	/^Testing .* performance with/ {
		t = $0; sub(/^Testing /, "", t); sub(/ performance with.*/, "", t); setup = ""
	}
	/^Memslot count (may be )?too high/ {
		printf "SLAT-BENCH {\"bench\":\"kvm_api\",\"arch\":\"%s\",\"system\":\"%s\",\"test\":\"%s\",", arch, sys, t
		printf "\"slots_asked\":%s,\"best_s\":null,\"skipped\":\"slot count too high for this test\"}\n", req
	}
	/Test took .* for slot setup/ { setup = $3; sub(/s$/, "", setup) }
	/^Best runtime result was/ {
		best = $5; sub(/s$/, "", best)
		n = split($0, w, " ")
		for (i = 1; i <= n; i++) if (w[i] == "(with") iters = w[i + 1]
		printf "SLAT-BENCH {\"bench\":\"kvm_api\",\"arch\":\"%s\",\"system\":\"%s\",\"test\":\"%s\",", arch, sys, t
		printf "\"slots_asked\":%s,\"best_s\":%s,\"iterations\":%s,\"setup_s\":%s,\"exit\":%s}\n",
			req, best, iters, setup == "" ? "null" : setup, rc
	}' /tmp/perf
}

wanted memslot && perf 64
# The largest count both accept: KVM_CAP_NR_MEMSLOTS is 32764 on Slat and
# 32767 on arm64 KVM (x86 KVM: 32764), so -s 32764 (32763 test slots) on
# both, not -s -1.
wanted memslot && [ "$max" = 1 ] && perf 32764

# memslot_modification_stress_test: wall time of a fixed amount of work.
mode=
[ "$arch" = aarch64 ] && mode="-m 5" # P40V48_4K, as tests/guest/kvm.sh
wanted memslot && for r in $(seq 1 "$runs"); do
	t0=$(up)
	# shellcheck disable=SC2086
	/kvm/memslot_modification_stress_test $mode -i 100 -v 2 -b 8M >/tmp/mod 2>&1
	rc=$?
	t1=$(up)
	[ "$rc" -ne 0 ] && tail -5 /tmp/mod | sed 's/^/SLAT-GUEST: stress: /'
	echo "SLAT-BENCH {\"bench\":\"kvm_api\",\"arch\":\"$arch\",\"system\":\"$system\",\"test\":\"memslot_modification_stress\",\"run\":$r,\"wall_s\":$(echo "$t1 $t0" | awk '{printf "%.2f", $1 - $2}'),\"exit\":$rc}"
done
# dirty_log_perf_test (dirty logging, issue 36): its own phase times, 2 vCPUs
# of 64 MiB, 5 iterations: populate, enable logging, dirty memory per
# iteration (the vCPUs' write faults), get and clear per iteration (the
# harvest: KVM_GET_DIRTY_LOG, then KVM_CLEAR_DIRTY_LOG), disable logging.
wanted dirty_log_perf && for r in $(seq 1 "$runs"); do
	# shellcheck disable=SC2086
	/kvm/dirty_log_perf_test $mode -b 64M -v 2 -i 5 >/tmp/dlp 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && tail -5 /tmp/dlp | sed 's/^/SLAT-GUEST: dirty_log_perf: /'
	awk -v a="$arch" -v sys="$system" -v r="$r" -v rc="$rc" '
	function emit(t, v) {
		printf "SLAT-BENCH {\"bench\":\"kvm_api\",\"arch\":\"%s\",\"system\":\"%s\",\"test\":\"dirty_log_perf %s\",\"run\":%d,\"value_s\":%s,\"exit\":%d}\n", a, sys, t, r, v, rc
	}
	function secs(w) { sub(/s\.?$/, "", w); return w + 0 }
	/^Populate memory time:/ { emit("populate", secs($NF)) }
	/^Enabling dirty logging time:/ { emit("enable", secs($NF)) }
	/^Disabling dirty logging time:/ { emit("disable", secs($NF)) }
	/^Iteration [0-9]+ dirty memory time:/ { dirty += secs($NF); n++ }
	/^(Get|Clear) dirty log over/ { match($0, /Avg [0-9.]+s/); emit(tolower($1) " per iteration", secs(substr($0, RSTART + 4, RLENGTH - 4))) }
	END { if (n) emit("dirty memory per iteration", dirty / n) }' /tmp/dlp
done
# kvm_page_table_test over the VMM's transparent huge pages (issue 37): its
# three stages' own times, 2 vCPUs of 256 MiB (one guest mode: arm64's
# P40V48_4K, as above; x86 has one): create (first touch), update (dirty
# logging on: 4 KiB leaves), adjust (logging off: huge leaves again).
wanted page_table_thp && for r in $(seq 1 "$runs"); do
	# shellcheck disable=SC2086
	/kvm/kvm_page_table_test $mode -s anonymous_thp -b 256M -v 2 >/tmp/ptt 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && tail -5 /tmp/ptt | sed 's/^/SLAT-GUEST: page_table_thp: /'
	awk -v a="$arch" -v sys="$system" -v r="$r" -v rc="$rc" '
	/^KVM_(CREATE|UPDATE|ADJUST)_MAPPINGS: total execution time:/ {
		t = tolower($1); sub(/^kvm_/, "", t); sub(/_mappings:$/, "", t)
		v = $NF; sub(/s$/, "", v)
		printf "SLAT-BENCH {\"bench\":\"kvm_api\",\"arch\":\"%s\",\"system\":\"%s\",\"test\":\"page_table_thp %s\",\"run\":%d,\"value_s\":%s,\"exit\":%d}\n", a, sys, t, r, v + 0, rc
	}' /tmp/ptt
done
echo "SLAT-GUEST: bench done"
