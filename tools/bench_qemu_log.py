#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/bench_qemu_log.py LOG ARCH SYSTEM RUN RC WALL - one JSON line of a
tools/bench-qemu-vmm.sh run from its serial log (tests/guest/qemu_bench.sh's
lines): the times, QEMU's `info stats` of the VM and of vCPUs 0 and 1, and on
Linux's KVM the kvm_exit / kvm_userspace_exit histograms by name. Exit status
1 when the run did not end with QEMU's clean exit and its figures."""
import json
import re
import sys

# ESR_ELx.EC of an arm64 KVM exit with ret ARM_EXCEPTION_TRAP (2).
ARM64_EC = {0x00: "unknown", 0x01: "wfx", 0x07: "fp_asimd", 0x16: "hvc64", 0x17: "smc64",
            0x18: "sys64", 0x20: "iabt_low", 0x24: "dabt_low", 0x30: "breakpt_low",
            0x32: "softstp_low", 0x3c: "brk64"}
# arm64 kvm_exit's ret (ARM_EXCEPTION_*): an IRQ's exit carries a stale EC.
ARM64_RET = {0: "irq", 1: "el1_serror", 3: "il"}
# AMD SVM exit codes (APM vol. 2, appendix C).
SVM_EXIT = {0x60: "intr", 0x61: "nmi", 0x62: "smi", 0x63: "init", 0x64: "vintr",
            0x65: "cr0_sel_write", 0x6e: "rdtsc", 0x70: "pushf", 0x72: "cpuid", 0x74: "iret",
            0x77: "pause", 0x78: "hlt", 0x79: "invlpg", 0x7b: "ioio", 0x7c: "msr",
            0x7f: "shutdown", 0x81: "vmmcall", 0x87: "rdtscp", 0x8b: "xsetbv",
            0x400: "npf", 0x401: "avic_incomplete_ipi", 0x402: "avic_unaccelerated"}
SVM_EXIT.update({i: f"cr{i}_read" for i in range(16)})
SVM_EXIT.update({0x10 + i: f"cr{i}_write" for i in range(16)})
SVM_EXIT.update({0x20 + i: f"dr{i}_read" for i in range(16)})
SVM_EXIT.update({0x30 + i: f"dr{i}_write" for i in range(16)})
SVM_EXIT.update({0x40 + i: f"excp{i}" for i in range(32)})
# struct kvm_run's exit_reason (include/uapi/linux/kvm.h).
KVM_EXIT = {0: "unknown", 1: "exception", 2: "io", 4: "debug", 5: "hlt", 6: "mmio",
            7: "irq_window_open", 8: "shutdown", 9: "fail_entry", 10: "intr",
            17: "internal_error", 24: "system_event", 29: "x86_rdmsr", 30: "x86_wrmsr"}


def hist_name(arch, event, keys):
    if event == "kvm_userspace_exit":
        return KVM_EXIT.get(keys["reason"], f"reason{keys['reason']}")
    if arch == "aarch64":
        if keys["ret"] != 2:
            return ARM64_RET.get(keys["ret"], f"ret{keys['ret']}")
        return ARM64_EC.get(keys["esr_ec"], f"ec{keys['esr_ec']:#x}")
    return SVM_EXIT.get(keys["exit_reason"], f"svm{keys['exit_reason']:#x}")


def parse(text, arch):
    res = {"stats": {}, "hist": {}}
    blocks = []
    in_block = False
    for line in text.splitlines():
        m = re.match(r"SLAT-BENCH-QEMU (\{.*\})$", line)
        if m:
            res.update(json.loads(m.group(1)))
            continue
        # QEMU's own output: `info stats` prints "provider: kvm" (after the
        # console's last bytes on the same line, the first time) and then
        # one "    name (type): value" line per figure.
        m = re.match(r"SLAT-GUEST: qemu: (.*)$", line)
        if m:
            body = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", m.group(1))
            if re.search(r"provider: kvm$", body):
                blocks.append({})
                in_block = True
                continue
            s = re.match(r" {4}([a-z_0-9]+) \(([^)]*)\): (.*)$", body)
            if s and blocks and in_block:
                val = s.group(3).strip()
                blocks[-1][s.group(1)] = int(val) if re.fullmatch(r"-?[0-9]+", val) else val
            else:
                in_block = False
            continue
        m = re.match(r"SLAT-GUEST: hist (kvm_exit|kvm_userspace_exit): \{(.*)\} hitcount: *([0-9]+)",
                     line)
        if m:
            keys = {k.strip(): int(v) for k, v in
                    (kv.split(":") for kv in m.group(2).split(",") if ":" in kv)}
            name = hist_name(arch, m.group(1), keys)
            h = res["hist"].setdefault(m.group(1), {})
            h[name] = h.get(name, 0) + int(m.group(3))
        m = re.match(r"SLAT-GUEST: qemu exit ([0-9]+)$", line)
        if m:
            res["qemu_exit"] = int(m.group(1))
    for name, block in zip(("vm", "vcpu0", "vcpu1"), blocks):
        res["stats"][name] = block
    return res


def main():
    log, arch, system, run, rc, wall = sys.argv[1:7]
    try:
        with open(log, errors="replace") as f:
            text = f.read().replace("\r", "")
    except OSError:
        text = ""
    res = parse(text, arch)
    row = {"bench": "qemu_vmm", "arch": arch, "system": system, "run": int(run),
           "emulator_exit": int(rc), "emulator_wall_s": float(wall),
           "boot_s": res.get("boot_s"), "off_s": res.get("off_s"), "exit_s": res.get("exit_s"),
           # the VM's life without the monitor's pause for info stats
           "life_s": (round(res["boot_s"] + res["off_s"], 2)
                      if res.get("boot_s") is not None and res.get("off_s") is not None
                      else None),
           "qemu_exit": res.get("qemu_exit"), "stats": res["stats"], "hist": res["hist"]}
    good = row["qemu_exit"] == 0 and row["boot_s"] is not None and \
        "SLAT-GUEST: MARKER qemu_bench-done" in text
    row["ok"] = good
    print(json.dumps(row, sort_keys=True))
    if not good:
        print(f"bench-qemu-vmm: {arch} {system} run {run}: no clean QEMU exit with its figures "
              f"(see {log})", file=sys.stderr)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
