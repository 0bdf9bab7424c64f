#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Secondary VMs on arm64: tests/arch/arm64/hv.c runs as Slat's loader (EL1,
# primary VM) and drives Slat's hypercalls as a mini-VMM: discovery, DEPOSIT,
# a VM with two vCPUs over its own pages, a guest that writes a pattern and
# reports through MMIO, a hypercall, an UNDEF and WFI, slot MOVE / DELETE,
# hostile calls, and the teardown back to zero pages held. Every expected
# verdict must appear, in order; ARCHTEST-ABORT or anything UNEXPECTED fails.
# HV_CPU (cortex-a72) and HV_GIC (3) choose the machine.
. "$(dirname "$0")/lib.sh"
HV_CPU=${HV_CPU:-cortex-a72}
HV_GIC=${HV_GIC:-3}
make -s -C "$BOOT_TOP" archtest >"$BOOT_DIR/make-archtest.out" 2>&1 || {
	cat "$BOOT_DIR/make-archtest.out" >&2
	exit 1
}
printf '%s\n' 'loader  = \arch\hv.efi' 'initrd  =' 'cmdline =' >"$BOOT_DIR/slat.cfg"
boot_esp aarch64 "$BOOT_DIR/slat.cfg=slat.cfg" "$BOOT_TOP/build/aarch64/arch/hv.efi=arch/hv.efi"
EMU_SMP=2 EMU_ARM64_MACHINE="virt,virtualization=on,gic-version=$HV_GIC" BOOT_TIMEOUT=${BOOT_TIMEOUT:-150} \
	boot_qemu_arm64 "$HV_CPU"
# The virtual GIC: its list registers on GICv3 (ABI 1.6) and GICv2 (1.7).
if [ "$HV_GIC" = 3 ]; then
	vgic=(
		'^ARCHTEST vgic-lr-max: 4, GICv3$'
		'^ARCHTEST set-regs: OK$'
		'^ARCHTEST vgic-bad-group0: E_INVAL, pc kept$'
		'^ARCHTEST vgic-bad-intid: E_INVAL, pc kept$'
		'^ARCHTEST vgic-bad-res0: E_INVAL, pc kept$'
		'^ARCHTEST vgic-bad-hw-pintid: E_INVAL, pc kept$'
		'^ARCHTEST vgic-bad-count: E_INVAL, pc kept$'
		'^ARCHTEST vgic-bad-flags: E_INVAL, pc kept$'
		'^ARCHTEST vgic-lrs-while-off: E_INVAL, pc kept$'
		'^ARCHTEST vgic-v2-on-v3: E_INVAL, pc kept$'
		'^ARCHTEST vgic-sre: MMIO gpa 0x10000000 len 8 write data 0x7$'
		'^ARCHTEST vgic-lr-before-ack: state 1$'
		'^ARCHTEST vgic-iar: MMIO gpa 0x10000008 len 8 write data 0x28$'
		'^ARCHTEST vgic-lr-after-ack: state 2$'
		'^ARCHTEST vgic-iar-empty: MMIO gpa 0x10000010 len 8 write data 0x3ff$'
		'^ARCHTEST vgic-lr-after-eoi: state 0$'
		'^ARCHTEST vgic-sgi: SYSREG id 0x3a3016 write 1 data 0x5000001$'
		'^ARCHTEST vgic-mdscr: MMIO gpa 0x10000020 len 8 write data 0x1000$'
		'^ARCHTEST vgic-pmcr: MMIO gpa 0x10000028 len 8 write data 0x0$'
		'^ARCHTEST vgic-halt: HALT$'
		'^ARCHTEST vgic-vtimer-ctl: 0x3$'
	)
	verdicts=99 refused=28
else
	# GICv2 (ABI 1.7): the same list registers through GICH, the guest's
	# CPU interface served on GICV at EL2 (no exits for it).
	vgic=(
		'^ARCHTEST vgic-lr-max: 4, GICv2$'
		'^ARCHTEST set-regs: OK$'
		'^ARCHTEST vgic2-v3-form: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-cpuif-unaligned: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-cpuif-beyond-ipa: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-spi-with-source: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-intid-13-bits: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-bad-hw-pintid: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-bad-count: E_INVAL, pc kept$'
		'^ARCHTEST vgic2-ctlr: MMIO gpa 0x10000000 len 8 write data 0x1$'
		'^ARCHTEST vgic2-lrs-before: states 1 1$'
		'^ARCHTEST vgic2-iar-spi: MMIO gpa 0x10000008 len 8 write data 0x28$'
		'^ARCHTEST vgic2-lrs-after-spi: states 2 1$'
		'^ARCHTEST vgic2-iar-sgi: MMIO gpa 0x10000008 len 8 write data 0x805$'
		'^ARCHTEST vgic2-iar-empty: MMIO gpa 0x10000010 len 8 write data 0x3ff$'
		'^ARCHTEST vgic2-lrs-after-eoi: states 0 0, lr1 0xa0000000000805$'
		'^ARCHTEST vgic2-byte-read: MMIO gpa 0x10000010 len 8 write data 0x0$'
		'^ARCHTEST vgic2-halt: HALT$'
	)
	verdicts=96 refused=27
fi
# The guest's code layout (offsets of its labels) is fixed by tests/arch/arm64/hv.c.
expect_in_order '^slat: firmware dropped to EL1 on cpu 0; vm primary running$' \
	'^ARCHTEST-BEGIN' \
	'^ARCHTEST uid-hvc: 74616c53 3158564d 2d6d7261 76736263$' \
	'^ARCHTEST uid-smc: 74616c53 3158564d 2d6d7261 76736263$' \
	"^ARCHTEST version: OK $HC_VERSION_HEX\$" \
	'^ARCHTEST hvc-keeps-x7-x17: yes$' \
	'^ARCHTEST unknown-vendor-fn: E_UNKNOWN$' \
	'^ARCHTEST vm-create-before-deposit: E_NOMEM$' \
	'^ARCHTEST deposit: OK$' \
	'^ARCHTEST vm-create: OK$' \
	'^ARCHTEST vcpu-create-0: OK$' \
	'^ARCHTEST vcpu-create-1: OK$' \
	'^ARCHTEST vcpu-create-again: E_EXISTS$' \
	'^ARCHTEST vcpu-create-over-limit: E_BAD_VCPU$' \
	'^ARCHTEST deposited-first-read: abort EC 0x25 FSC 0x10 WnR 0 far the page$' \
	'^ARCHTEST deposited-first-write: abort EC 0x25 FSC 0x10 WnR 1 far the page$' \
	'^ARCHTEST deposited-last-read: abort EC 0x25 FSC 0x10 WnR 0 far the page$' \
	'^ARCHTEST deposited-last-write: abort EC 0x25 FSC 0x10 WnR 1 far the page$' \
	'^ARCHTEST primary-tables: OK [12]$' \
	'^ARCHTEST get-regs-1: OK$' \
	'^ARCHTEST reset-state-1: pc 0x0 pstate 0x3c5 mpidr 0x80000001 sctlr.M 0$' \
	'^ARCHTEST slot-add-code: OK$' \
	'^ARCHTEST slot-add-data: OK$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST p1-exit-1: MMIO gpa 0x10000000 len 8 write data 0x5a17c0de00ff1234$' \
	'^ARCHTEST p1-exit-2: MMIO gpa 0x10000008 len 8 read data 0x0$' \
	'^ARCHTEST p1-exit-3: HYPERCALL nr 0x1234abcd a0 0x102000$' \
	'^ARCHTEST p1-exit-4: MMIO gpa 0x10000010 len 8 write data 0x77$' \
	'^ARCHTEST p1-exit-5: MMIO gpa 0x10000018 ESR_EL1.EC 0x0$' \
	'^ARCHTEST p1-exit-6: HALT$' \
	'^ARCHTEST pattern: 1024 of 1024 words$' \
	'^ARCHTEST regs-after-halt: pc at \+0x28 x4 0x1234abcd x0 0x77$' \
	'^ARCHTEST slot-move: OK$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST p2-exit-1: MMIO gpa 0x100000 len 8 read data 0x0$' \
	'^ARCHTEST p2-exit-2: MMIO gpa 0x10000000 len 8 write data 0x5a17c0de00ff1234$' \
	'^ARCHTEST p2-exit-3: HALT$' \
	'^ARCHTEST slot-delete: OK$' \
	'^ARCHTEST slot-delete-again: E_BAD_SLOT$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST p3-exit-1: MMIO gpa 0x200000 len 8 read data 0x0$' \
	'^ARCHTEST p3-exit-ldp: INTERNAL EC 0x24 ISV 0 ipa 0x10000000$' \
	'^ARCHTEST p3-exit-2: SHUTDOWN fn 0x84000008$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST vcpu1-exit-1: MMIO gpa 0x10000000 len 8 write data 0x5a17c0de00ff1234$' \
	'^ARCHTEST vcpu1-preempted: yes$' \
	'^ARCHTEST vcpu1-exit-2: HALT$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST vcpu1-tick-exit: MMIO gpa 0x10000000 len 8 write data 0x5a17c0de00ff1234$' \
	'^ARCHTEST vcpu1-preempted-by-firmware-tick: yes$' \
	"${vgic[@]}" \
	'^ARCHTEST slot-add-2: OK$' \
	'^ARCHTEST set-regs: OK$' \
	'^ARCHTEST cpu1-on: 0$' \
	'^ARCHTEST cross-cpu-delete: MMIO gpa 0x100000, 0 preempted$' \
	'^ARCHTEST cpu1-slot-delete: OK$' \
	'^ARCHTEST deposit-slat-frame: E_SLAT$' \
	'^ARCHTEST run-page-in-slat: E_SLAT$' \
	'^ARCHTEST deposit-flash: E_RANGE$' \
	'^ARCHTEST vm-create-2: OK$' \
	'^ARCHTEST slot-add-other-vms-frame: E_OTHER_VM$' \
	'^ARCHTEST deposit-slot-frame: E_OTHER_VM$' \
	'^ARCHTEST vm-destroy-2: OK$' \
	'^ARCHTEST vm-destroy-bad: E_BAD_VM$' \
	'^ARCHTEST run-bad-vcpu: E_BAD_VCPU$' \
	'^ARCHTEST run-bad-vm: E_BAD_VM$' \
	'^ARCHTEST slot-delete-bad: E_BAD_SLOT$' \
	'^ARCHTEST set-regs-bad-pstate: 5 of 5 refused with E_INVAL$' \
	'^ARCHTEST bad-pstate-left-state: pstate 0x3c5$' \
	'^ARCHTEST vm-stats: OK$' \
	'^ARCHTEST vm-stats-vcpus-slots: 2 vCPUs, 1 slots, 1 slot pages$' \
	'^ARCHTEST vm-destroy: OK$' \
	'^ARCHTEST run-after-destroy: E_BAD_VM$' \
	'^ARCHTEST withdrawn: 64 of 64 pages$' \
	'^ARCHTEST withdrawn-first-read: read ok$' \
	'^ARCHTEST withdrawn-first-write: write ok$' \
	'^ARCHTEST withdrawn-last-read: read ok$' \
	'^ARCHTEST withdrawn-last-write: write ok$' \
	'^ARCHTEST hv-stats: OK$' \
	'^ARCHTEST hv-stats: deposited 64 withdrawn 64 free 0 used 0 own_nodes 0 vms 0$' \
	'^ARCHTEST hv-stats-vms: created 2 destroyed 2$' \
	"^ARCHTEST-END $verdicts verdicts\$" \
	"^slat: secondary VMs: 2 created, 2 destroyed, 0 alive; [0-9]+ calls \($refused refused\)$" \
	'^slat: deposited pages: 64 in, 64 withdrawn, 0 held = 0 free \+ 0 used \(0 ownership nodes\)$' \
	'^slat: powering off$'
expect_absent '^ARCHTEST-ABORT' 'UNEXPECTED' 'exception at EL2' 'Synchronous Exception' \
	'^ARCHTEST run:' '^ARCHTEST withdraw:'
expect_exit
boot_done
