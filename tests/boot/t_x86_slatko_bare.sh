#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# slat.ko without Slat (x86, QEMU -cpu max TCG, no firmware, no Slat): CPUID
# 0x40000000 is not "SlatSlatSlat": the module refuses to load with one dmesg
# line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/secondary.sh"
secondary_bare x86_64
secondary_expect_refused "(hypervisor '.*' is not Slat|no hypervisor \\(CPUID.1:ECX\\[31\\] clear\\)): not loading$"
boot_done
