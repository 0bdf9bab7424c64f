#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_hv_arm64 on a GICv2 machine (QEMU virt gic-version=2): the same mini-VMM,
# with the GICv2 virtual CPU interface of ABI 1.7 (list registers through
# GICH, the guest's CPU interface served by Slat on GICV, an SGI's source).
HV_GIC=2
. "$(dirname "$0")/t_hv_arm64.sh"
