#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64 on a GICv2 machine (QEMU virt gic-version=2, like GIC-400 boards:
# memory-mapped CPU interface, no ICC_* system registers), cortex-a72, 2
# CPUs. The primary: Slat must not touch the GICv3 system registers at EL2
# (boot CPU and the CPU started through PSCI), says which GIC it found, and
# Debian's kernel boots as on GICv3 (tests/guest/primary.sh). Then a Linux
# secondary with a GICv2 (issue 18, ABI 1.7; tests/guest/vmm_gicv2.sh):
# slat-vmm's --gic auto picks slat.ko's GICv2, whose CPU interface Slat
# serves on GICV; the VM's GIC, timer, both vCPUs, disk and shell as in
# t_arm64_linux_secondary; a GICv3 asked for is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/arm64_primary.sh"
. "$(dirname "$0")/vmm_expect.sh"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
ARM64_INITRD=initrd-vmm.img EMU_MEM_MB=2048 EMU_ARM64_MACHINE=virt,virtualization=on,gic-version=2 \
	arm64_primary_boot cortex-a72 vmm_gicv2
arm64_primary_expect
expect_literal 'slat: HCR_EL2 0x80080001,' \
	'slat: GIC CPU interface: memory-mapped (GICv2; no GIC system registers), passed through' \
	'arm64: GIC from firmware: GICv2 (ACPI MADT)'
expect_absent 'GIC CPU interface: system registers'
vmm_arch aarch64
expect_in_order '^arm64: GICv2 virtual CPU interface: GICH 0x8030000, GICV 0x8040000 \(taken from the primary\), 4 list registers$' \
	'^SLAT-GUEST: MARKER primary-done' \
	'^SLAT-GUEST: vmm_gicv2 on aarch64' \
	"^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE," \
	'^SLAT-GUEST: vm1: slat-vmm: GICv2' \
	'^SLAT-GUEST: vm1: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
	'^SLAT-GUEST: vm1: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
	'^SLAT-GUEST: vm1: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
	'^SLAT-GUEST: vm1: VMM-SHELL: 42 from the console of a VM with 2 CPUs$' \
	'^SLAT-GUEST: vmm bad-arg ok: exit 2: slat-vmm: error: --gic v3' \
	'^SLAT-GUEST: kvmcheck: vgic: no GICv3 here: the GICv2 checks' \
	'^SLAT-GUEST: kvmcheck: vgic2: third GICC_IAR: PPI 27 \(the virtual timer\): ok' \
	'^SLAT-GUEST: kvmcheck: vgic2: \.\.\. GICC_IAR 0x405: SGI 5 from CPU 1: ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: GICD_TYPER 0x22 \(96 IRQs, 2 CPU interfaces: QEMU checks both\): ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: the guest.s GICC_PMR 0xf0: ok' \
	'^SLAT-GUEST: kvmcheck: vgic2 state: \.\.\. 0x15 \(0xa8 >> 3\): ok' \
	'^SLAT-GUEST: kvmcheck: PASS \([0-9]+ checks, 0 failed\)$' \
	'^SLAT-GUEST: slat-kvm-check exit 0$' \
	'^SLAT-GUEST: MARKER vmm_gicv2-done' \
	'^slat: secondary VMs: [0-9]+ created, [0-9]+ destroyed, 0 alive' \
	'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
vmm_expect_end vm1
# slat-kvm-check and the refused --gic v3 (asked once its VM exists) make VMs too.
expect_absent '^SLAT-GUEST: vm1: \[.*GICv3' 'exception at EL2' 'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'bad-arg WRONG' \
	'virtio-blk: guest error' 'failed to come online' 'rcu_sched detected stalls' 'spurious' \
	'WARNING:'
boot_done
