#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/bench_plot.py RUN.json [--out DIR] - PNG plots of one benchmark run.

Uses Debian's python3-matplotlib (Agg backend, no display). Prints the path of
every PNG written, one per line. A scenario that did not run ("unavailable",
"skipped") gets no plot.
"""
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    # A python3 earlier on PATH (pyenv, venv) may lack Debian's package.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("bench_plot: matplotlib is missing (apt-get install python3-matplotlib)",
          file=sys.stderr)
    sys.exit(1)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODE_COLOURS = {"slot": "tab:blue", "all": "tab:orange", "lock_light": "tab:blue",
                "write_lock": "tab:orange", "recursive": "tab:blue",
                "non_recursive": "tab:orange", "none": "tab:orange", "per_leaf": "tab:red", "no_cmo": "tab:orange",
                "batched": "tab:green", "slat": "tab:blue", "hv_off": "tab:gray"}


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}"
    return f"{n} B"


def ok(doc, name):
    for s in doc["scenarios"]:
        if s.get("scenario") == name and s.get("status") == "ok":
            return s
    return None


def subtitle(doc):
    m = doc["machine"]
    return (f"{m['cpu_model']}, {m['cores']} cores, {human_bytes(m['memory_bytes'])}; "
            f"{doc['git'].get('describe', '')}{' (QUICK)' if doc.get('quick') else ''}")


def save(fig, doc, out, name, title):
    fig.suptitle(title, fontsize=11)
    fig.text(0.5, 0.005, subtitle(doc), ha="center", fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)


def grouped_bars(ax, groups, series, values, colours, ylabel, log=True):
    """values[(group, series)] -> number; one cluster per group."""
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [values.get((grp, s), 0) for grp in groups]
        ax.bar(xs, ys, width, label=str(s), color=colours.get(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups], rotation=20, fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_b1(doc, out):
    s = ok(doc, "b1_slot_perf")
    if not s:
        return
    # One group per scenario and slot count; a scenario with fewer guest
    # pages than slots is skipped (as in the Linux test).
    res = [r for r in s["results"] if "skipped" not in r]
    label = lambda r: f'{r["test"]}\n{r["slots"]} slots'
    tests = list(dict.fromkeys(label(r) for r in res))
    modes = list(dict.fromkeys(r["mode"] for r in res))
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(tests)), 4.5))
    vals = {(label(r), r["mode"]): r["ns_per_iter"] / 1e3 for r in res}
    grouped_bars(ax, tests, modes, vals, MODE_COLOURS, "time per iteration (us, log)")
    save(fig, doc, out, "b1_slot_perf.png", "B1 memslot_perf_test scenarios: SLOT vs ALL zap mode")


def plot_b2(doc, out):
    s = ok(doc, "b2_mod_stress")
    if not s:
        return
    res = s["results"]
    cfg = lambda r: f"{r['vcpus']}v x {human_bytes(r['bytes_per_vcpu'])}"
    groups = list(dict.fromkeys(cfg(r) for r in res))
    modes = list(dict.fromkeys(r["mode"] for r in res))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.5))
    for ax, pct in zip(axes[:2], ("p50_ns", "p99_ns")):
        vals = {(cfg(r), r["mode"]): r["add_delete"][pct] / 1e3 for r in res}
        grouped_bars(ax, groups, modes, vals, MODE_COLOURS, f"add+delete {pct[:3]} (us, log)")
    vals = {(cfg(r), r["mode"]): max(r["refaulted_pages_per_iter"], 0.1) for r in res}
    grouped_bars(axes[2], groups, modes, vals, MODE_COLOURS, "refaulted pages / iteration (log)")
    save(fig, doc, out, "b2_mod_stress.png",
         "B2 one-page slot add+delete while vCPUs write: latency and refaults")


def plot_hist(ax, h, label, colour):
    e, c = h["edges_ns"], h["counts"]
    if not c:
        return
    total = sum(c) or 1
    ax.stairs([x / total for x in c], [x / 1e3 for x in e], label=label, color=colour)


def plot_b3(doc, out):
    s = ok(doc, "b3_root_load")
    if not s:
        return
    res = s["results"]
    threads = sorted({r["threads"] for r in res})
    fig, axes = plt.subplots(1, len(threads), figsize=(4 * len(threads), 4), squeeze=False)
    for ax, t in zip(axes[0], threads):
        for r in res:
            if r["threads"] == t:
                plot_hist(ax, r["histogram"], f"{r['design']} (max {r['load']['max_ns'] / 1e3:.1f} us)",
                          MODE_COLOURS.get(r["design"]))
        ax.set_xscale("log")
        ax.set_xlabel("root load latency (us, log2 buckets)")
        ax.set_ylabel("fraction of loads")
        ax.set_title(f"{t} threads", fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    save(fig, doc, out, "b3_root_load.png",
         "B3 root reload after invalidate-all while the zapper runs")


def plot_b4(doc, out):
    s = ok(doc, "b4_teardown")
    if not s:
        return
    res = s["results"]
    sizes = list(dict.fromkeys(r["page_size"] for r in res))
    policies = list(dict.fromkeys(r["policy"] for r in res))
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.5), squeeze=False)
    floors = {f["page_size"]: f["read_ns"] for f in s.get("floor", [])}
    for ax, ps in zip(axes[0], sizes):
        rs = [r for r in res if r["page_size"] == ps]
        xs = range(len(rs))
        ax.bar(xs, [r["teardown_ns"] / 1e6 for r in rs],
               color=[MODE_COLOURS.get(r["policy"]) for r in rs])
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["policy"] for r in rs])
        for x, r in zip(xs, rs):
            ax.text(x, r["teardown_ns"] / 1e6, f"{r['teardown_ns'] / 1e6:.3g} ms",
                    ha="center", va="bottom", fontsize=8)
        if ps in floors:
            ax.axhline(floors[ps] / 1e6, color="black", ls="--", lw=1,
                       label=f"floor: read tables once ({floors[ps] / 1e6:.3g} ms)")
            ax.legend(fontsize=8, loc="lower left")
        ax.set_yscale("log")
        ax.set_ylabel("teardown time (ms, log)")
        mapped = rs[0]["mapped_bytes"] if rs else 0
        ax.set_title(f"{human_bytes(mapped)} mapped at {human_bytes(ps)}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    _ = policies
    save(fig, doc, out, "b4_teardown.png", "B4 teardown: per-leaf inval+CMO vs no CMO vs batched")


def plot_b5(doc, out):
    s = ok(doc, "b5_nested_churn")
    if not s:
        return
    keys = [("cycle_ns", "time per cycle (ms)", 1e6), ("used_pages", "used shadow pages", 1),
            ("longest_chain", "longest hash chain", 1)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for ax, (k, label, div) in zip(axes, keys):
        for r in s["results"]:
            ys = [c.get(k, 0) / div for c in r["per_cycle"]]
            ax.plot(range(1, len(ys) + 1), ys, label=f"{r['mode']} (final slot-0 delete "
                    f"{r['final_slot0_delete_ns'] / 1e6:.3g} ms)", color=MODE_COLOURS.get(r["mode"]))
        ax.set_xlabel("cycle")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    save(fig, doc, out, "b5_nested_churn.png",
         "B5 nested churn: L2 contexts created and destroyed, recursive vs non-recursive reclaim")


def plot_b6(doc, out):
    s = ok(doc, "b6_delete_vs_size")
    if not s:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for mode in dict.fromkeys(r["mode"] for r in s["results"]):
        rs = sorted((r for r in s["results"] if r["mode"] == mode), key=lambda r: r["vm_bytes"])
        ax.plot([r["vm_bytes"] / (1 << 30) for r in rs], [r["delete"]["p50_ns"] / 1e3 for r in rs],
                marker="o", label=f"{mode} (p50)", color=MODE_COLOURS.get(mode))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("VM memory mapped (GiB, log2)")
    ax.set_ylabel("delete of one small slot (us, log)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save(fig, doc, out, "b6_delete_vs_size.png", "Slot delete cost vs VM size")


def plot_boot(doc, out):
    s = ok(doc, "boot")
    if not s or not s.get("summary"):
        return
    rows = [r for r in s["summary"] if r.get("marker_s_median") is not None]
    if not rows:
        return
    groups = list(dict.fromkeys(f"{r['bench']}\n{r['cpu']}" for r in rows))
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    vals = {(f"{r['bench']}\n{r['cpu']}", r["mode"]): r["marker_s_median"] for r in rows}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    grouped_bars(ax, groups, modes, vals, MODE_COLOURS, "seconds to guest marker (median)",
                 log=False)
    save(fig, doc, out, "boot.png", "Boot time under emulation: Slat vs hypervisor = off")


def plot_live(doc, out):
    s = ok(doc, "live_secondary")
    if not s or not s.get("summary"):
        return
    rows = s["summary"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    for arch in dict.fromkeys(r["arch"] for r in rows):
        for mode in dict.fromkeys(r["mode"] for r in rows):
            rs = sorted((r for r in rows if r["arch"] == arch and r["mode"] == mode),
                        key=lambda r: r["vm_kib"])
            if not rs:
                continue
            style = "-" if arch == "aarch64" else "--"
            label = f"{arch} {mode}"
            xs = [r["vm_kib"] / 1024 for r in rs]
            axes[0].plot(xs, [r["delete_us_median"] for r in rs], style, marker="o",
                         label=label, color=MODE_COLOURS.get(mode))
            axes[1].plot(xs, [max(r["refaults_median"], 0.5) for r in rs], style, marker="o",
                         label=label, color=MODE_COLOURS.get(mode))
            axes[2].plot([r["table_bytes_median"] / 1024 for r in rs],
                         [r["destroy_us_median"] for r in rs], style, marker="o", label=label,
                         color=MODE_COLOURS.get(mode))
    axes[0].set_xlabel("VM memory in slots (MiB)")
    axes[0].set_ylabel("one slot delete (us, median)")
    axes[1].set_xlabel("VM memory in slots (MiB)")
    axes[1].set_ylabel("refaults after the delete (0 drawn at 0.5)")
    axes[1].set_yscale("log")
    axes[2].set_xlabel("SLAT table KiB at destroy")
    axes[2].set_ylabel("VM_DESTROY (us, median)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, doc, out, "live_secondary.png",
         "Secondary VMs live (TCG): slot delete, refaults, destroy")


def plot_kvm_api(doc, out):
    s = ok(doc, "kvm_api")
    if not s or not s.get("summary"):
        return
    rows = [r for r in s["summary"] if r["slat"] and r["kvm"]]
    arches = list(dict.fromkeys(r.get("arch", "aarch64") for r in rows))
    if not arches:
        return
    # One row per architecture: the two systems' times, then their ratio.
    fig, grid = plt.subplots(len(arches), 2, figsize=(14, 5 * len(arches)), squeeze=False)
    w = 0.4
    for arch, axes in zip(arches, grid):
        mine = [r for r in rows if r.get("arch", "aarch64") == arch]
        labels = [r["test"] if r["slots_asked"] is None
                  else f"{r['test']}\n{'max' if r['slots_asked'] == -1 else r['slots_asked']} slots"
                  for r in mine]
        xs = range(len(mine))
        axes[0].bar([x - w / 2 for x in xs], [r["slat"] for r in mine], w,
                    label="Slat (slat.ko)", color=MODE_COLOURS["slat"])
        axes[0].bar([x + w / 2 for x in xs], [r["kvm"] for r in mine], w, label="Linux KVM",
                    color="tab:gray")
        axes[0].set_yscale("log")
        axes[0].set_ylabel(f"{arch}: seconds (best per iteration; stress: wall)")
        axes[1].bar(list(xs), [r["ratio_slat_over_kvm"] for r in mine],
                    color=MODE_COLOURS["slat"])
        axes[1].axhline(1.0, color="black", linewidth=0.8)
        axes[1].set_ylabel(f"{arch}: Slat / KVM (lower: Slat faster)")
        axes[1].set_yscale("log")
        for ax in axes:
            ax.set_xticks(list(xs))
            ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
            ax.grid(alpha=0.3, axis="y")
        axes[0].legend(fontsize=8)
    save(fig, doc, out, "kvm_api.png",
         f"KVM selftests on Slat's /dev/kvm vs Linux's KVM ({', '.join(arches)}, TCG)")


def plot_nested(doc, out):
    s = ok(doc, "nested_live")
    if not s:
        return
    keys = [("shadow_pages", "Slat's shadow pages in use"), ("cycle_us", "L1 time per cycle (ms)")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (k, label) in zip(axes, keys):
        for mode in dict.fromkeys(r["mode"] for r in s["results"]):
            rows = [r for r in s["results"] if r["mode"] == mode]
            div = 1000 if k == "cycle_us" else 1
            ax.plot([r["cycle"] for r in rows], [r[k] / div for r in rows], label=mode,
                    color=MODE_COLOURS.get(mode))
        ax.set_xlabel("cycle")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, title="reclaim of orphans")
    save(fig, doc, out, "nested_live.png",
         "Nested SVM live: L2 VMs of the primary's kvm_amd, recursive vs no reclaim (QEMU TCG)")


def main(argv):
    args = [a for a in argv[1:]]
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    with open(args[0]) as f:
        doc = json.load(f)
    out = out or os.path.dirname(os.path.abspath(args[0]))
    os.makedirs(out, exist_ok=True)
    for fn in (plot_b1, plot_b2, plot_b3, plot_b4, plot_b5, plot_b6, plot_live, plot_kvm_api,
               plot_nested, plot_boot):
        fn(doc, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
