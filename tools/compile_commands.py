#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes compile_commands.json (to stdout) for clangd and other editors.

Called by mk/hosted.mk with one compiler command and one source list per
build: hosted (generic code and unit tests), EFI x86_64 and EFI aarch64. A
file built in several ways gets the first of them in that order, so generic
code is seen with the hosted flags and arch code with its own EFI flags.
"""
import argparse
import json
import os
import shlex
import sys

DROP = {"-MMD", "-MP"}  # dependency-file flags: meaningless for an editor


def entries(command, sources, top, seen):
    argv = [a for a in shlex.split(command) if a not in DROP]
    if not argv:
        return []
    out = []
    for src in sources.split():
        if src in seen:
            continue
        seen.add(src)
        out.append({
            "directory": top,
            "file": os.path.join(top, src),
            "arguments": argv + ["-c", src],
        })
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    for name in ("hosted", "efi", "efi-arm64"):
        p.add_argument("--" + name, default="", help="compiler and flags")
        p.add_argument("--" + name + "-srcs", default="", help="source files")
    a = p.parse_args()
    top = os.getcwd()
    seen = set()
    db = []
    db += entries(a.hosted, a.hosted_srcs, top, seen)
    db += entries(a.efi, a.efi_srcs, top, seen)
    db += entries(a.efi_arm64, a.efi_arm64_srcs, top, seen)
    json.dump(db, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
