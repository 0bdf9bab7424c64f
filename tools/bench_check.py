#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/bench_check.py RUN.json [--strict] - validate one benchmark run's JSON.

Checks the shape, never the timings: the top-level facts (schema, machine,
git commit), that every scenario is present exactly once with a known status,
that a scenario reported "ok" carries its parameters and the result fields
listed below with finite numbers, that no number anywhere is NaN/Infinity, and
that the plots the run lists exist. "unavailable" (the engine API a scenario
needs is not in the tree) and "skipped" (not selected, or boots in a QUICK run)
are accepted with a reason and listed; the boot scenario (one emulator boot
per mode even in a QUICK run) must have both modes (slat, hv_off) per machine
and Slat's exit counts per reason; --strict refuses them (full runs for
docs/benchmarks.md). "failed" is always an error.

Exit status 0 when valid; messages on stdout.
"""
import json
import math
import os
import sys

SCENARIOS = ["b1_slot_perf", "b2_mod_stress", "b3_root_load", "b4_teardown",
             "b5_nested_churn", "b6_delete_vs_size", "b7_dirty_harvest", "live_secondary", "kvm_api",
             "secondary_boot", "qemu_vmm", "nested_live", "boot"]
STATUSES = {"ok", "unavailable", "skipped", "failed"}

# For each scenario: keys every element of "results" must have (results is a
# non-empty list of objects). Latency objects are checked separately.
RESULT_KEYS = {
    "b1_slot_perf": ["test", "mode", "slots", "iterations", "ns_per_iter", "setup_ns"],
    "b2_mod_stress": ["mode", "vcpus", "bytes_per_vcpu", "iterations", "add_delete",
                      "refaulted_pages_per_iter"],
    "b3_root_load": ["design", "threads", "load", "histogram"],
    "b4_teardown": ["page_size", "policy", "mapped_bytes", "teardown_ns", "range_invalidations",
                    "cmos", "context_invalidations"],
    "b5_nested_churn": ["mode", "cycles", "per_cycle", "final_slot0_delete_ns"],
    "b6_delete_vs_size": ["mode", "vm_bytes", "delete"],
    "b7_dirty_harvest": ["test", "slot_bytes"],
    "live_secondary": ["bench", "arch", "mode", "slots", "vm_kib", "run", "delete_us", "zapped",
                       "refaults", "destroy_us", "table_bytes", "zap_all"],
    "kvm_api": ["bench", "system", "test"],
    "secondary_boot": ["bench", "system", "run", "boot_s", "exit"],  # arch: x86_64 when absent
    "qemu_vmm": ["bench", "arch", "system", "run", "ok", "boot_s", "off_s", "life_s", "exit_s", "stats",
                 "hist"],
    "nested_live": ["bench", "mode", "cycle", "shadow_pages", "longest_chain", "created",
                    "orphans_reclaimed", "cycle_us"],
    "boot": ["bench", "mode", "run", "marker_s", "kernel_uptime_s", "exit_s", "status",
             "exits_total", "exits", "io_exits_by_port", "slat_uptime_s"],
}
LATENCY_KEYS = ["n", "min_ns", "p50_ns", "p99_ns", "max_ns", "mean_ns"]
MACHINE_KEYS = ["cpu_model", "cores", "memory_bytes", "kernel"]


class Checker:
    def __init__(self):
        self.errors = []
        self.notes = []

    def err(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    def finite(self, obj, where):
        """Every number is finite; null only where a figure legitimately has no value."""
        if isinstance(obj, bool) or obj is None or isinstance(obj, str):
            return
        if isinstance(obj, (int, float)):
            if not math.isfinite(obj):
                self.err(where, f"non-finite number {obj!r}")
            return
        if isinstance(obj, list):
            for i, x in enumerate(obj):
                self.finite(x, f"{where}[{i}]")
            return
        if isinstance(obj, dict):
            for k, x in obj.items():
                self.finite(x, f"{where}.{k}")
            return
        self.err(where, f"unexpected JSON value {type(obj).__name__}")

    def latency(self, obj, where):
        if not isinstance(obj, dict):
            self.err(where, "latency summary is not an object")
            return
        for k in LATENCY_KEYS:
            if not isinstance(obj.get(k), (int, float)) or isinstance(obj.get(k), bool):
                self.err(where, f"latency field '{k}' missing or not a number")

    def histogram(self, obj, where):
        if not isinstance(obj, dict):
            self.err(where, "histogram is not an object")
            return
        e, c = obj.get("edges_ns"), obj.get("counts")
        if not isinstance(e, list) or not isinstance(c, list) or len(e) != len(c) + 1:
            self.err(where, "histogram needs edges_ns (n+1) and counts (n)")

    def scenario(self, s):
        name = s.get("scenario")
        where = f"scenario {name}"
        status = s.get("status")
        if status not in STATUSES:
            self.err(where, f"unknown status {status!r}")
            return
        if status in ("unavailable", "skipped"):
            if not isinstance(s.get("reason"), str) or not s["reason"]:
                self.err(where, f"status {status} without a reason")
            self.notes.append(f"{status.upper()}: {name}: {s.get('reason')}")
            return
        if status == "failed":
            self.err(where, f"failed: {s.get('reason')}")
            return
        if name not in ("boot", "live_secondary", "kvm_api", "secondary_boot", "qemu_vmm") and not isinstance(s.get("params"),
                                                                                dict):
            self.err(where, "no params object")
        results = s.get("results")
        if not isinstance(results, list) or not results:
            self.err(where, "results must be a non-empty list")
            return
        for i, r in enumerate(results):
            w = f"{where} results[{i}]"
            if not isinstance(r, dict):
                self.err(w, "not an object")
                continue
            for k in RESULT_KEYS.get(name, []):
                if k not in r:
                    self.err(w, f"missing '{k}'")
            for k, v in r.items():
                if k in ("add_delete", "delete", "load", "teardown", "per_iter") or k.endswith(
                        "_latency"):
                    self.latency(v, f"{w}.{k}")
                if k == "histogram":
                    self.histogram(v, f"{w}.{k}")
        self.finite(s, where)
        self.extra(name, s, where)

    def extra(self, name, s, where):
        """Scenario-specific structure beyond the per-result keys."""
        res = s["results"]
        if name == "b1_slot_perf":
            tests = {r.get("test") for r in res}
            want = {"map", "unmap", "unmap_chunked", "move_active", "move_inactive", "rw"}
            if not want <= tests:
                self.err(where, f"missing memslot_perf tests {sorted(want - tests)}")
            self.both_modes(res, where, "mode", {"slot", "all"})
        elif name == "b2_mod_stress":
            self.both_modes(res, where, "mode", {"slot", "all"})
        elif name == "b3_root_load":
            self.both_modes(res, where, "design", {"lock_light", "write_lock"})
        elif name == "b4_teardown":
            self.both_modes(res, where, "policy", {"per_leaf", "no_cmo", "batched"})
            self.both_modes(res, where, "page_size", {4096, 2097152})
            if not isinstance(s.get("floor"), list) or not s["floor"]:
                self.err(where, "no physical floor measurements")
        elif name == "b5_nested_churn":
            self.both_modes(res, where, "mode", {"recursive", "non_recursive"})
            for i, r in enumerate(res):
                pc = r.get("per_cycle")
                if not isinstance(pc, list) or len(pc) != r.get("cycles"):
                    self.err(f"{where} results[{i}]", "per_cycle must have one entry per cycle")
        elif name == "boot":
            self.boot(s, res, where)
        elif name == "live_secondary":
            self.both_modes(res, where, "mode", {"slot", "all"})
            for i, r in enumerate(res):
                # The engine's promise, exact: a slot-scoped delete disturbs
                # nothing else; zap-all zaps once per delete.
                if r.get("mode") == "slot" and (r.get("refaults") != 0 or r.get("zap_all") != 0):
                    self.err(f"{where} results[{i}]", "slot mode: refaults and zap_all must be 0")
                if r.get("mode") == "all" and r.get("zap_all") != 1:
                    self.err(f"{where} results[{i}]", "all mode: exactly one zap-all per delete")
        elif name == "kvm_api":
            groups = {"memslot": {"map", "unmap", "unmap chunked", "move active area",
                                  "move inactive area", "RW", "memslot_modification_stress"},
                      "dirty_log_perf": {"dirty_log_perf get per iteration",
                                         "dirty_log_perf clear per iteration"}}
            # A run of one group (BENCH_KVM_API_ONLY) is checked for that group.
            only = s.get("only", "all")
            want = set().union(*groups.values()) if only == "all" else groups.get(only, set())
            # Per architecture: both systems, every test (rows before x86 have no arch).
            for arch in sorted({r.get("arch", "aarch64") for r in res}):
                rows = [r for r in res if r.get("arch", "aarch64") == arch]
                self.both_modes(rows, f"{where} {arch}", "system", {"slat", "kvm"})
                tests = {r.get("test") for r in rows}
                if not want <= tests:
                    self.err(where, f"{arch}: missing tests {sorted(want - tests)}")
            if not isinstance(s.get("summary"), list) or not s["summary"]:
                self.err(where, "no summary list")
        elif name == "secondary_boot":
            for arch in sorted({r.get("arch", "x86_64") for r in res}):
                rows = [r for r in res if r.get("arch", "x86_64") == arch]
                self.both_modes(rows, f"{where} {arch}", "system", {"slat", "kvm"})
        elif name == "qemu_vmm":
            for arch in sorted({r.get("arch") for r in res}):
                rows = [r for r in res if r.get("arch") == arch]
                self.both_modes(rows, f"{where} {arch}", "system", {"slat", "kvm"})
                # Exits per reason on both systems: QEMU's stats of the VM
                # and of both vCPUs, and KVM's kvm_exit histogram.
                for i, r in enumerate(rows):
                    if not r.get("ok"):
                        continue
                    if set(r.get("stats", {})) != {"vm", "vcpu0", "vcpu1"}:
                        self.err(f"{where} {arch}", f"run {r.get('run')} {r.get('system')}: "
                                 "no info stats of the VM and both vCPUs")
                    if r.get("system") == "kvm" and not r.get("hist", {}).get("kvm_exit"):
                        self.err(f"{where} {arch}", f"run {r.get('run')}: no kvm_exit histogram")
        elif name == "b6_delete_vs_size":
            if len({r.get("vm_bytes") for r in res}) < 2:
                self.err(where, "needs at least two VM sizes")

    def boot(self, s, res, where):
        """Both modes per machine; Slat's exit counts per reason add up to its total."""
        machines = {}
        for r in res:
            machines.setdefault((r.get("bench"), str(r.get("cpu", r.get("cpus")))), set()).add(
                r.get("mode"))
        for m, modes in machines.items():
            if not {"slat", "hv_off"} <= modes:
                self.err(where, f"{m[0]} {m[1]}: modes {sorted(map(str, modes))}, want slat and hv_off")
        summarised = 0
        for i, r in enumerate(res):
            w = f"{where} results[{i}]"
            ex, ports = r.get("exits"), r.get("io_exits_by_port")
            if not isinstance(ex, dict) or not isinstance(ports, dict):
                self.err(w, "exits and io_exits_by_port must be objects")
                continue
            if any(not isinstance(v, int) or isinstance(v, bool) for v in
                   list(ex.values()) + list(ports.values())):
                self.err(w, "exit counts must be integers")
                continue
            if r.get("mode") == "hv_off" and (ex or r.get("exits_total") is not None):
                self.err(w, "hv_off run reports Slat exits: the hypervisor was not off")
            if ex:
                summarised += 1
                if r.get("exits_total") != sum(ex.values()):
                    self.err(w, f"exits_total {r.get('exits_total')} != sum of reasons {sum(ex.values())}")
        if not summarised:
            self.err(where, "no run carries Slat's exit summary (exits per reason)")
        for k in ("summary", "cost"):
            if not isinstance(s.get(k), list) or not s[k]:
                self.err(where, f"no {k} list")

    def both_modes(self, res, where, key, want):
        got = {r.get(key) for r in res}
        if not want <= got:
            self.err(where, f"'{key}' must cover {sorted(want, key=str)}, got {sorted(got, key=str)}")

    def run(self, doc, base, strict):
        if doc.get("schema") != "slat-bench/1":
            self.err("top", f"schema is {doc.get('schema')!r}, want 'slat-bench/1'")
        m = doc.get("machine")
        if not isinstance(m, dict):
            self.err("top", "no machine facts")
        else:
            for k in MACHINE_KEYS:
                if k not in m or m[k] in ("", 0, None):
                    self.err("machine", f"missing '{k}'")
        g = doc.get("git")
        if not isinstance(g, dict) or not g.get("commit"):
            self.err("top", "no git commit")
        if not isinstance(doc.get("timestamp"), str):
            self.err("top", "no timestamp")
        scen = doc.get("scenarios")
        if not isinstance(scen, list):
            self.err("top", "no scenarios list")
            return
        names = [s.get("scenario") for s in scen if isinstance(s, dict)]
        for n in SCENARIOS:
            if names.count(n) != 1:
                self.err("top", f"scenario {n} present {names.count(n)} times, want once")
        for n in names:
            if n not in SCENARIOS:
                self.err("top", f"unknown scenario {n!r}")
        for s in scen:
            if isinstance(s, dict):
                self.scenario(s)
        for p in doc.get("plots", []):
            if not os.path.isfile(os.path.join(base, os.path.basename(p))) and not os.path.isfile(p):
                self.err("plots", f"{p} does not exist")
        if doc.get("plot_error"):
            self.err("plots", doc["plot_error"])
        self.finite(doc, "top")
        if strict:
            for s in scen:
                if isinstance(s, dict) and s.get("status") != "ok":
                    self.err(f"scenario {s.get('scenario')}", f"--strict: status {s.get('status')}")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    strict = "--strict" in argv
    if len(args) != 1:
        print(__doc__.splitlines()[0])
        return 2
    try:
        with open(args[0]) as f:
            doc = json.load(f, parse_constant=lambda c: float(c))
    except (OSError, json.JSONDecodeError) as e:
        print(f"bench_check: cannot read {args[0]}: {e}")
        return 1
    c = Checker()
    c.run(doc, os.path.dirname(os.path.abspath(args[0])), strict)
    for n in c.notes:
        print(f"bench_check: {n}")
    for e in c.errors:
        print(f"bench_check: ERROR {e}")
    ok = not c.errors
    n_ok = sum(1 for s in doc.get("scenarios", []) if isinstance(s, dict) and s.get("status") == "ok")
    print(f"bench_check: {args[0]}: {'valid' if ok else 'INVALID'} "
          f"({n_ok}/{len(SCENARIOS)} scenarios ok, {len(c.errors)} error(s))")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
