#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/bench-nested-churn.sh - issue 17's live benchmark: the L1 churn of
# nested SVM (linux/tests/slat-nested-churn.c: 60 cycles of a small VM on the
# primary's own kvm_amd, created, run and destroyed) under Slat, once with the
# shadow engine's recursive reclaim of orphans (the default) and once with
# nested_reclaim = none (the engine's non-recursive mode: orphans stay until
# the quota evicts them, as before KVM's 2020 fix). QEMU -cpu max, 2 CPUs,
# TCG. One JSON object per cycle on stdout:
#   {"bench":"nested_churn","mode":M,"cycle":N,"shadow_pages":U,
#    "longest_chain":C,"created":X,"orphans_reclaimed":O,"cycle_us":T}
# and one per mode for the final slot delete:
#   {"bench":"nested_churn","mode":M,"slot_delete_us":T,"pages_before":A,"pages_after":B}
# cycle_us is L1's wall time of one cycle under TCG: it shows the two modes'
# costs as this emulator runs them, not hardware.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
status=0
for mode in recursive none; do
	log="$top/build/test/boot/bench_nested/serial.log"
	NESTED_RECLAIM=$mode bash "$top/tests/boot/bench_nested.sh" >&2 || status=1
	tr -d '\r' <"$log" | sed -n 's/^SLAT-GUEST: bench: churn: //p' | awk -v m="$mode" '
	/^cycle [0-9]+: / {
		n = $2; sub(":", "", n)
		u = $5; c = $10; sub(",", "", c); x = $12; sub(",", "", x)
		o = $15; sub(",", "", o); t = $16
		printf("{\"bench\":\"nested_churn\",\"mode\":\"%s\",\"cycle\":%d,\"shadow_pages\":%d,\"longest_chain\":%d,\"created\":%d,\"orphans_reclaimed\":%d,\"cycle_us\":%d}\n", m, n, u, c, x, o, t)
	}
	/^slot delete done in / {
		printf("{\"bench\":\"nested_churn\",\"mode\":\"%s\",\"slot_delete_us\":%d,\"pages_before\":%d,\"pages_after\":%d}\n", m, $5, $9, $11)
	}'
done
exit "$status"
