#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/bench_run.py - run Slat's benchmarks once and record everything.

Called by `make bench` (mk/bench.mk). Runs every hosted scenario program of
tools/bench/ (built into --bindir), each of which prints one JSON object on
stdout and a progress line on stderr, and the emulator boot-time scripts
tools/bench-*-boot.sh (all of them in a full run; one arm64 machine, one boot
per mode, in a QUICK run). Writes

  <out>/<UTC timestamp>.json   machine facts, git commit, parameters, every figure
  <out>/latest.json            a copy of the same
  <out>/*.png                  plots (tools/bench_plot.py)

A scenario whose program cannot run yet (the engine API it needs is not in the
tree) reports status "unavailable" with the reason; nothing is invented.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The scenarios, in run order. tools/bench_check.py holds the same names.
SCENARIOS = [
    ("b1_slot_perf", "B1 memslot_perf_test scenarios, SLOT vs ALL zap mode"),
    ("b2_mod_stress", "B2 slot add/delete under vCPU writes, SLOT vs ALL"),
    ("b3_root_load", "B3 root-load latency after invalidate-all, lock-light vs write lock"),
    ("b4_teardown", "B4 teardown of 64 GiB at 4K and 2M: per-leaf vs no-CMO vs batched, floor"),
    ("b5_nested_churn", "B5 nested churn, recursive vs non-recursive orphan reclaim"),
    ("b6_delete_vs_size", "B6 slot delete cost vs VM size"),
    ("b7_dirty_harvest", "B7 dirty-log harvest cost vs slot size and dirty fraction (get-and-clear "
     "vs get + clear), and turning logging on over 4 KiB vs 2 MiB leaves"),
]
# Engine functions each program calls: it is built and run only once they are
# all defined in libslat.a; until then the scenario is "unavailable" (and says
# which are missing). Engine mode switches are listed too: a baseline that
# cannot be selected is not measured.
COMMON = ["s2_vm_create", "s2_vm_destroy", "s2_vm_stats", "s2_root_get", "s2_root_put",
          "s2_root_is_invalid", "s2_translate", "s2_fault", "s2_slot_add", "s2_slot_delete"]
REQUIRES = {
    "b1_slot_perf": COMMON + ["s2_slot_move", "s2_unmap"],
    "b2_mod_stress": COMMON,
    "b3_root_load": COMMON + ["s2_roots_invalidate_all", "s2_vm_set_root_lock_write"],
    "b4_teardown": COMMON + ["s2_map", "s2_unmap", "s2_root_teardown"],
    "b5_nested_churn": ["sh_create", "sh_set_recursive", "shsim_create", "shsim_cycle",
                        "shsim_delete_slot0"],
    "b6_delete_vs_size": COMMON + ["s2_map"],
    "b7_dirty_harvest": COMMON + ["s2_slot_dirty_get", "s2_slot_dirty_clear", "s2_slot_set_flags"],
}
LIVE = ("live_secondary", "Secondary VMs live in the emulator: one slot delete's latency and the "
        "vCPU's refaults vs VM size, slot-scoped vs zap-all; VM destroy time vs SLAT table "
        "bytes (tools/bench-live-secondary.sh)")
KVM_API = ("kvm_api", "The same Linux KVM selftest binaries on Slat's /dev/kvm (slat.ko, VMs as "
           "Slat secondaries) and on Linux's own KVM (the same kernel booted by the emulator "
           "itself: arm64 at EL2, x86 with kvm-amd on the emulated SVM), per architecture in "
           "one emulator: memslot_perf_test's sub-tests at 64 and at the most slots, "
           "memslot_modification_stress_test (tools/bench-kvm-api.sh)")
SEC_BOOT = ("secondary_boot", "A Linux secondary's boot: slat-vmm boots Debian's kernel as a "
            "2-vCPU VM to its power-off on Slat's /dev/kvm (a Slat secondary: SVM, arm64) and on Linux's "
            "own KVM in the same emulator (tools/bench-secondary-boot.sh)")
QEMU_VMM = ("qemu_vmm", "A VM's life under Debian's unmodified QEMU 7.2 (-smp 2, a virtio disk, "
            "QEMU's start to its exit after the VM's power-off) on Slat's /dev/kvm and on Linux's "
            "own KVM in the same emulator, per architecture, with exits per reason on both "
            "(QEMU's info stats; KVM's kvm_exit tracepoint) (tools/bench-qemu-vmm.sh)")
NESTED = ("nested_live", "Nested SVM live: the primary's own kvm_amd creates, runs and destroys a "
          "small L2 VM 60 times under Slat; Slat's shadow pages and L1's time per cycle, the "
          "shadow engine's recursive reclaim of orphans vs its non-recursive mode "
          "(nested_reclaim = none), then one slot delete (tools/bench-nested-churn.sh)")
BOOT = ("boot", "Boot time to the guest marker and exits per reason, under Slat vs the same "
        "firmware and loader with hypervisor = off (emulated)")


def sh(cmd):
    try:
        return subprocess.run(cmd, cwd=TOP, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "cpu_model": cpu or platform.processor() or "unknown",
        "cores": os.cpu_count() or 0,
        "memory_bytes": mem_kib * 1024,
        "kernel": platform.release(),
        "os": sh(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "hostname": platform.node(),
        "compiler": sh(["clang", "--version"]).splitlines()[0] if sh(["clang", "--version"]) else "",
    }


def git_facts():
    return {
        "commit": sh(["git", "rev-parse", "HEAD"]),
        "describe": sh(["git", "describe", "--always", "--dirty", "--tags"]),
    }


def defined_symbols(make, lib):
    """Builds the bench variant of libslat.a; returns its defined globals."""
    p = subprocess.run(make.split() + ["-s", lib], cwd=TOP, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return None, p.stdout[-2000:]
    nm = subprocess.run(["llvm-nm", "-g", "--defined-only", "--format=just-symbols", lib],
                        cwd=TOP, capture_output=True, text=True)
    return set(nm.stdout.split()), ""


def build_program(name, bindir, make, syms):
    """None when built, else (status, reason)."""
    if not os.path.exists(os.path.join(TOP, "tools", "bench", name + ".c")):
        return "unavailable", f"program tools/bench/{name}.c is not in the tree yet"
    missing = [f for f in REQUIRES.get(name, []) if f not in syms]
    if missing:
        return "unavailable", ("engine functions not in the tree yet: " + ", ".join(missing))
    p = subprocess.run(make.split() + ["-s", os.path.join(bindir, name)], cwd=TOP,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:])
        return "failed", "does not build (see the compiler output above)"
    return None


def run_program(name, title, bindir, quick, timeout):
    prog = os.path.join(bindir, name)
    entry = {"scenario": name, "title": title}
    args = [prog] + (["quick=1"] if quick else [])
    start = time.monotonic()
    try:
        # stderr goes straight to the terminal: it carries the progress line.
        p = subprocess.run(args, cwd=TOP, stdout=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        entry.update(status="failed", reason=f"timed out after {timeout} s")
        return entry
    elapsed = time.monotonic() - start
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError as e:
        data = None
        err = str(e)
    else:
        err = "no JSON on stdout"
    if p.returncode != 0 or not isinstance(data, dict):
        entry.update(status="failed",
                     reason=f"exit status {p.returncode}" + ("" if data else f"; {err}"))
        return entry
    if data.get("scenario") != name:
        entry.update(status="failed", reason=f"program reported scenario {data.get('scenario')!r}")
        return entry
    data["title"] = title
    data["elapsed_s"] = round(elapsed, 3)
    return data


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if n == 0 else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


# The QUICK run boots one machine once per mode (the smoke of `make test`: the
# JSON fields exist and the exit summary parses), the full run every script.
QUICK_BOOT = ("bench-arm64-boot.sh", ["1", "cortex-a72"])
BOOT_MODES = ("slat", "hv_off")


def boot_summary(raw):
    """One row per (bench, cpu, mode): medians over runs that reached the marker."""
    groups = {}
    for r in raw:
        groups.setdefault((r.get("bench"), str(r.get("cpu", r.get("cpus", ""))), r.get("mode")),
                          []).append(r)
    summary = []
    for (bench, cpu, mode), rs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        ok = [r for r in rs if isinstance(r.get("marker_s"), (int, float))]
        totals = [r["exits_total"] for r in ok if isinstance(r.get("exits_total"), int)]
        summary.append({
            "bench": bench, "cpu": cpu, "mode": mode, "runs": len(rs), "reached_marker": len(ok),
            "marker_s_median": median([r["marker_s"] for r in ok]),
            "kernel_uptime_s_median": median([r["kernel_uptime_s"] for r in ok
                                              if isinstance(r.get("kernel_uptime_s"), (int, float))]),
            "exits_total_median": median(totals),
        })
    return summary


def boot_cost(summary):
    """Slat's cost per machine: slat minus hv_off medians (null when one is missing)."""
    by = {(r["bench"], r["cpu"], r["mode"]): r for r in summary}
    cost = []
    for bench, cpu in dict.fromkeys((r["bench"], r["cpu"]) for r in summary):
        on, off = by.get((bench, cpu, "slat")), by.get((bench, cpu, "hv_off"))

        def diff(key):
            a, b = (on or {}).get(key), (off or {}).get(key)
            return round(a - b, 3) if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
                else None
        cost.append({"bench": bench, "cpu": cpu, "marker_s_added": diff("marker_s_median"),
                     "kernel_uptime_s_added": diff("kernel_uptime_s_median")})
    return cost


def run_boot(quick, runs):
    entry = {"scenario": BOOT[0], "title": BOOT[1]}
    scripts = sorted(glob.glob(os.path.join(TOP, "tools", "bench-*-boot.sh")))
    if quick:
        scripts = [os.path.join(TOP, "tools", QUICK_BOOT[0])]
    if not scripts:
        entry.update(status="unavailable", reason="no tools/bench-*-boot.sh script")
        return entry
    raw, failures = [], []
    for s in scripts:
        rel = os.path.relpath(s, TOP)
        args = QUICK_BOOT[1] if quick else [str(runs)]
        print(f"[boot] {rel} {' '.join(args)} (emulated, slow)", file=sys.stderr, flush=True)
        try:
            p = subprocess.run(["bash", s] + args, cwd=TOP, stdout=subprocess.PIPE,
                               text=True, timeout=3600)
        except subprocess.TimeoutExpired:
            failures.append(f"{rel}: timed out")
            continue
        got = 0
        for line in p.stdout.splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and "bench" in obj:
                obj["script"] = rel
                raw.append(obj)
                got += 1
        if p.returncode != 0 or got == 0:
            failures.append(f"{rel}: exit status {p.returncode}, {got} result line(s)")
    summary = boot_summary(raw)
    entry.update(status="ok" if raw else "failed", runs_per_cpu_mode=1 if quick else runs,
                 modes=list(BOOT_MODES),
                 baseline="hv_off: the same firmware, ESP, slat.efi, kernel and initramfs "
                          "with hypervisor = off in slat.cfg (no virtualization mode taken)",
                 results=raw, summary=summary, cost=boot_cost(summary))
    if quick:
        entry["quick"] = f"{QUICK_BOOT[0]} {' '.join(QUICK_BOOT[1])} only"
    if failures:
        entry["failures"] = failures
    return entry


def median_of(rows, key):
    xs = sorted(r[key] for r in rows)
    return xs[len(xs) // 2] if xs else None


def run_guest_script(tag, script, args, bench, timeout):
    """Runs a tools/bench-*.sh emulator script; its JSON lines of `bench`, or None on timeout."""
    print(f"[{tag}] {os.path.relpath(script, TOP)} {' '.join(args)} (emulated, slow)",
          file=sys.stderr, flush=True)
    try:
        p = subprocess.run(["bash", script] + args, cwd=TOP, stdout=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None
    raw = []
    for line in p.stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("bench") == bench:
            raw.append(obj)
    return p.returncode, raw


def run_live(quick, runs):
    """tools/bench-live-secondary.sh: the guest's SLAT-BENCH lines, medians per point."""
    entry = {"scenario": LIVE[0], "title": LIVE[1]}
    script = os.path.join(TOP, "tools", "bench-live-secondary.sh")
    args = ["1", "2", "aarch64"] if quick else [str(runs), "4"]
    rc, raw = run_guest_script("live", script, args, "live_secondary", 3600)
    if rc is None:
        entry.update(status="failed", reason="timed out")
        return entry
    summary = []
    for key in dict.fromkeys((r["arch"], r["mode"], r["slots"]) for r in raw):
        rows = [r for r in raw if (r["arch"], r["mode"], r["slots"]) == key]
        summary.append({"arch": key[0], "mode": key[1], "slots": key[2],
                        "vm_kib": rows[0]["vm_kib"], "runs": len(rows),
                        **{f"{k}_median": median_of(rows, k)
                           for k in ("delete_us", "refaults", "zapped", "destroy_us",
                                     "table_bytes")}})
    entry.update(status="ok" if raw and rc == 0 else "failed",
                 baseline="zap-all: the same VM made with VM_CREATE flag ZAP_ALL (every slot "
                          "delete zaps the whole SLAT, as before slot-scoped invalidation)",
                 results=raw, summary=summary)
    if rc != 0:
        entry["reason"] = f"exit status {rc}, {len(raw)} result line(s)"
    return entry


def run_kvm_api(quick, runs):
    """tools/bench-kvm-api.sh: best times per sub-test on both systems and their ratio."""
    entry = {"scenario": KVM_API[0], "title": KVM_API[1]}
    script = os.path.join(TOP, "tools", "bench-kvm-api.sh")
    # QUICK (make test's smoke run): arm64 alone; x86's unmap sub-test alone
    # takes two minutes per system on QEMU's one TCG thread.
    # BENCH_KVM_API_ONLY: one group of tests (memslot, dirty_log_perf or
    # page_table_thp), run BENCH_BOOT_RUNS times; BENCH_KVM_API_ARCHES: a
    # subset of "aarch64 x86_64". The full run keeps at most 2 runs.
    only = os.environ.get("BENCH_KVM_API_ONLY", "all")
    arches = os.environ.get("BENCH_KVM_API_ARCHES", "aarch64 x86_64")
    if quick:
        args = ["1", "1", "0", "aarch64"]
    elif only != "all":
        args = ["1", str(runs), "0", arches, only]
    else:
        args = ["1", str(min(runs, 2)), "1", arches]
    entry["only"] = only
    rc, raw = run_guest_script("kvm_api", script, args, "kvm_api", 9000)
    if rc is None:
        entry.update(status="failed", reason="timed out")
        return entry
    summary = []
    keys = dict.fromkeys((r.get("arch", "aarch64"), r["test"], r.get("slots_asked"))
                         for r in raw)
    for arch, test, slots in keys:
        row = {"arch": arch, "test": test, "slots_asked": slots}
        for system in ("slat", "kvm"):
            rs = [r for r in raw if r["system"] == system and r["test"] == test
                  and r.get("arch", "aarch64") == arch and r.get("slots_asked") == slots]
            if test == "memslot_modification_stress":
                ok_rs = [r for r in rs if r.get("exit") == 0]
                row[system] = median_of(ok_rs, "wall_s") if ok_rs else None
            elif test.startswith(("dirty_log_perf ", "page_table_thp ")):
                ok_rs = [r for r in rs if r.get("exit") == 0]
                row[system] = median_of(ok_rs, "value_s") if ok_rs else None
            else:
                vals = [r["best_s"] for r in rs if r.get("best_s") is not None
                        and r.get("exit") == 0]
                row[system] = min(vals) if vals else None
        row["ratio_slat_over_kvm"] = (round(row["slat"] / row["kvm"], 3)
                                      if row["slat"] and row["kvm"] else None)
        summary.append(row)
    pairs = {(r.get("arch", "aarch64"), r["system"]) for r in raw}
    arches = {a for a, _ in pairs}
    good = rc == 0 and bool(arches) and all((a, sy) in pairs for a in arches
                                            for sy in ("slat", "kvm"))
    entry.update(status="ok" if good else "failed",
                 baseline="Linux's own KVM, the same Debian kernel booted by the same QEMU "
                          "without firmware or Slat (arm64: at EL2, nVHE; x86: kvm-amd.ko on "
                          "the emulated SVM with NPT), running the same binaries",
                 unit="seconds: memslot_perf_test's best time per loop iteration (lower is "
                      "better); memslot_modification_stress_test's median wall time; "
                      "dirty_log_perf_test's phases and kvm_page_table_test's stages over "
                      "transparent huge pages (their own times): median seconds",
                 results=raw, summary=summary)
    if not good:
        entry["reason"] = f"exit status {rc}, {len(raw)} result line(s)"
    return entry


def run_qemu_vmm(quick, runs):
    """tools/bench-qemu-vmm.sh: the VM's boot and life on each system, medians per arch."""
    entry = {"scenario": QEMU_VMM[0], "title": QEMU_VMM[1]}
    if quick:
        entry.update(status="skipped", reason="not in QUICK: about 10 min of emulation per run")
        return entry
    script = os.path.join(TOP, "tools", "bench-qemu-vmm.sh")
    # BENCH_QEMU_ARCHES: a subset of "aarch64 x86_64" (the default, both).
    arches = os.environ.get("BENCH_QEMU_ARCHES", "aarch64 x86_64")
    rc, raw = run_guest_script("qemu_vmm", script, [str(runs), arches], "qemu_vmm", 3 * 3600)
    if rc is None:
        entry.update(status="failed", reason="timed out")
        return entry
    summaries = []
    for arch in sorted({r["arch"] for r in raw}):
        summary = {"arch": arch}
        for system in ("slat", "kvm"):
            ok_rows = [r for r in raw if r["arch"] == arch and r["system"] == system and r["ok"]]
            summary[f"{system}_runs_ok"] = len(ok_rows)
            for key in ("boot_s", "off_s", "life_s", "exit_s"):
                summary[f"{system}_{key}_median"] = median([r[key] for r in ok_rows])
        if summary["slat_life_s_median"] and summary["kvm_life_s_median"]:
            summary["life_ratio_slat_over_kvm"] = round(
                summary["slat_life_s_median"] / summary["kvm_life_s_median"], 3)
        summaries.append(summary)
    good = bool(summaries) and all(x["slat_runs_ok"] > 0 and x["kvm_runs_ok"] > 0
                                   for x in summaries)
    entry.update(status="ok" if good else "failed",
                 baseline="Linux's own KVM: the same kernel and initramfs booted by the same QEMU "
                          "without firmware or Slat (arm64 at EL2, nVHE; x86 kvm-amd.ko on the "
                          "emulated SVM with one emulated CPU), the same QEMU command line",
                 unit="seconds of the primary's uptime: boot_s QEMU's start to the VM's shell, "
                      "off_s the shell's poweroff to QEMU's exit, life_s their sum (the "
                      "figure compared), exit_s QEMU's whole run "
                      "(with the monitor's 5 s pause for info stats); lower is better",
                 results=raw, summary=summaries)
    if not good:
        entry["reason"] = f"exit status {rc}, {len(raw)} result line(s)"
    elif rc != 0:
        entry["note"] = "some runs failed: see 'ok' in results"
    return entry


def run_nested(quick):
    """tools/bench-nested-churn.sh: per-cycle shadow pages and times, both reclaim modes."""
    entry = {"scenario": NESTED[0], "title": NESTED[1]}
    if quick:
        entry.update(status="skipped", reason="two 2-CPU SVM boots: full run only")
        return entry
    script = os.path.join(TOP, "tools", "bench-nested-churn.sh")
    rc, raw = run_guest_script("nested", script, [], "nested_churn", 3600)
    if rc is None:
        entry.update(status="failed", reason="timed out")
        return entry
    cycles = [r for r in raw if "cycle" in r]
    deletes = [r for r in raw if "slot_delete_us" in r]
    summary = []
    for mode in dict.fromkeys(r["mode"] for r in cycles):
        rows = [r for r in cycles if r["mode"] == mode]
        summary.append({"mode": mode, "cycles": len(rows),
                        "shadow_pages_first": rows[0]["shadow_pages"],
                        "shadow_pages_last": rows[-1]["shadow_pages"],
                        "shadow_pages_max": max(r["shadow_pages"] for r in rows),
                        "longest_chain_max": max(r["longest_chain"] for r in rows),
                        "cycle_us_median": median_of(rows, "cycle_us"),
                        "slot_delete": next((d for d in deletes if d["mode"] == mode), None)})
    entry.update(status="ok" if cycles and rc == 0 else "failed",
                 baseline="nested_reclaim = none: the shadow engine's non-recursive mode, "
                          "orphans left until the quota evicts them (KVM before 2020)",
                 results=cycles, summary=summary)
    if rc != 0:
        entry["reason"] = f"exit status {rc}, {len(cycles)} cycle line(s)"
    return entry


def run_secondary_boot(quick, runs):
    """tools/bench-secondary-boot.sh: the VM's life in seconds on each system, medians."""
    entry = {"scenario": SEC_BOOT[0], "title": SEC_BOOT[1]}
    if quick:
        entry.update(status="skipped", reason="not in QUICK: about 2 min of emulation per run")
        return entry
    script = os.path.join(TOP, "tools", "bench-secondary-boot.sh")
    # BENCH_SECONDARY_ARCHES: a subset of "x86_64 aarch64" (the default, both).
    arches = os.environ.get("BENCH_SECONDARY_ARCHES", "x86_64 aarch64")
    rc, raw = run_guest_script("secondary_boot", script, [str(runs), arches], "secondary_boot",
                               5400)
    if rc is None:
        entry.update(status="failed", reason="timed out")
        return entry
    summaries = []
    for arch in sorted({r.get("arch", "x86_64") for r in raw}):
        summary = {"arch": arch}
        for system in ("slat", "kvm"):
            ok_rows = [r for r in raw if r.get("arch", "x86_64") == arch and r["system"] == system
                       and r["exit"] == 0 and r["boot_s"] is not None]
            summary[f"{system}_median_s"] = median_of(ok_rows, "boot_s") if ok_rows else None
            summary[f"{system}_runs_ok"] = len(ok_rows)
        if summary["slat_median_s"] and summary["kvm_median_s"]:
            summary["ratio_slat_over_kvm"] = round(
                summary["slat_median_s"] / summary["kvm_median_s"], 3)
        summaries.append(summary)
    # A failed run (its test's verdict) stays in the results with its exit
    # status and is counted out of the medians; an architecture without one
    # good run on each system fails the scenario.
    good = bool(summaries) and all(x["slat_runs_ok"] > 0 and x["kvm_runs_ok"] > 0
                                   for x in summaries)
    entry.update(status="ok" if good else "failed",
                 baseline="Linux's own KVM: the same kernel booted by the same QEMU without "
                          "firmware or Slat (x86: kvm-amd.ko on the emulated SVM, the VM with "
                          "kvmclock, on Slat told its TSC rate; arm64: KVM at EL2, nVHE), "
                          "the same slat-vmm and VM",
                 unit="seconds of the primary's uptime around slat-vmm (lower is better)",
                 results=raw, summary=summaries)
    if not good:
        entry["reason"] = f"exit status {rc}, {len(raw)} result line(s)"
    elif rc != 0:
        entry["note"] = "some runs failed: see their exit status in results"
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--lib", required=True, help="the bench variant of libslat.a")
    ap.add_argument("--make", default="make")
    ap.add_argument("--only", default="", help="comma-separated prefixes (b1,b4,boot)")
    ap.add_argument("--boot-runs", type=int, default=int(os.environ.get("BENCH_BOOT_RUNS", "3")))
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]

    def wanted(name):
        return not only or any(name.startswith(o) for o in only)

    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    os.makedirs(args.out, exist_ok=True)
    doc = {
        "schema": "slat-bench/1",
        "timestamp": started.isoformat(timespec="seconds"),
        "quick": args.quick,
        "only": only,
        "machine": machine_facts(),
        "git": git_facts(),
        "scenarios": [],
    }
    t0 = time.monotonic()
    syms, lib_err = defined_symbols(args.make, args.lib)
    if syms is None:
        sys.stderr.write(lib_err)
    todo = SCENARIOS + [LIVE, KVM_API, SEC_BOOT, QEMU_VMM, NESTED, BOOT]
    for i, (name, title) in enumerate(todo, 1):
        if not wanted(name):
            doc["scenarios"].append({"scenario": name, "title": title, "status": "skipped",
                                     "reason": f"not selected (--only {args.only})"})
            continue
        print(f"[bench] {i}/{len(todo)} {name}: {title}", file=sys.stderr, flush=True)
        if name == BOOT[0]:
            entry = run_boot(args.quick, args.boot_runs)
        elif name == LIVE[0]:
            entry = run_live(args.quick, args.boot_runs)
        elif name == KVM_API[0]:
            entry = run_kvm_api(args.quick, args.boot_runs)
        elif name == SEC_BOOT[0]:
            entry = run_secondary_boot(args.quick, args.boot_runs)
        elif name == QEMU_VMM[0]:
            entry = run_qemu_vmm(args.quick, args.boot_runs)
        elif name == NESTED[0]:
            entry = run_nested(args.quick)
        elif syms is None:
            entry = {"scenario": name, "title": title, "status": "failed",
                     "reason": f"{args.lib} does not build"}
        else:
            why = build_program(name, args.bindir, args.make, syms)
            if why:
                entry = {"scenario": name, "title": title, "status": why[0], "reason": why[1]}
            else:
                timeout = 300 if args.quick else 3600
                entry = run_program(name, title, args.bindir, args.quick, timeout)
        print(f"[bench] {name}: {entry['status']}"
              + (f" ({entry['reason']})" if entry.get("reason") else "")
              + (f" in {entry['elapsed_s']} s" if "elapsed_s" in entry else ""),
              file=sys.stderr, flush=True)
        doc["scenarios"].append(entry)
    doc["elapsed_s"] = round(time.monotonic() - t0, 3)

    path = os.path.join(args.out, f"{stamp}.json")
    latest = os.path.join(args.out, "latest.json")

    def write():
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, allow_nan=False)
            f.write("\n")
        shutil.copyfile(path, latest)

    write()
    plot = subprocess.run([sys.executable, os.path.join(TOP, "tools", "bench_plot.py"), path,
                           "--out", args.out], cwd=TOP, stdout=subprocess.PIPE, text=True)
    doc["plots"] = [l for l in plot.stdout.splitlines() if l.endswith(".png")]
    if plot.returncode != 0:
        doc["plot_error"] = f"tools/bench_plot.py exited with status {plot.returncode}"
    write()
    bad = [s["scenario"] for s in doc["scenarios"] if s["status"] == "failed"]
    print(f"[bench] wrote {os.path.relpath(path, TOP)} and {os.path.relpath(latest, TOP)}, "
          f"{len(doc['plots'])} plot(s), {doc['elapsed_s']} s"
          + (f"; FAILED: {', '.join(bad)}" if bad else ""), file=sys.stderr)
    return 1 if bad or plot.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
