#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Guest smoke test: the kernel reached userspace and sees its CPUs.
echo "SLAT-GUEST: cpus online $(cat /sys/devices/system/cpu/online)"
echo "SLAT-GUEST: MARKER smoke-ok uptime $(cut -d' ' -f1 /proc/uptime)"
