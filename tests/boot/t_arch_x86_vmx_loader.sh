#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The loader's view of the firmware on Intel VT-x (Bochs corei7_skylake_x, 1
# CPU): tests/arch/x86/loader.c sees one EfiLoaderCode region (its own image)
# and no load options, bare and under Slat. The VT-x subset of the
# differential harness for the hand-off (docs/boot-handoff.md); a Bochs run of
# every x86 payload can take this one over.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arch_diff.sh"
arch_diff_x86_bochs corei7_skylake_x loader
boot_done
