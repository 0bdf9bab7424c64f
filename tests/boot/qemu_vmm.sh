# SPDX-License-Identifier: Apache-2.0
#
# Shared set-up of the boot tests that run Debian's QEMU in the primary on
# Slat's /dev/kvm (sourced after lib.sh by t_x86_svm_qemu.sh,
# t_x86_svm_qemu_migrate.sh and t_arm64_qemu.sh, which runs arm64's migration
# in the same boot).
#
#   qemu_vmm_boot_x86 CMDLINE   builds the x86_64 guest and the initramfs
#                               with QEMU (tools/qemu-guest.sh), writes
#                               slat.cfg with the primary's kernel CMDLINE,
#                               and boots it on QEMU -cpu max (2 CPUs, 2 GiB)
#   qemu_vmm_boot_arm64 CMDLINE  the same for arm64: QEMU virt at EL2 with
#                               GICv3 (EMU_ARM64_MACHINE), -cpu cortex-a72
#                               (2 CPUs, 2 GiB)
#   arm64_qemu_test GIC         t_arm64_qemu's boot and verdicts with QEMU's
#                               in-kernel GICv3 (GIC 3) or, on a GICv2
#                               machine, GICv2 (GIC 2)
#   qemu_expect_arm64 KVM PSCI GIC  tests/guest/qemu_slat.sh's verdicts on
#                               arm64 (below), on Slat's or Linux's KVM
#   qemu_expect_x86 KVM         the same on x86
#   qemu_migrate_expect ARCH VMS the migration tests' common verdicts (below)
# _qemu_vmm_esp ARCH CMDLINE: the ARCH guest and its initramfs with QEMU,
# slat.cfg with the primary's kernel CMDLINE, and the ESP holding them
# (EMU_ESP_CYL set by the caller: the kernel and that initramfs are large).
_qemu_vmm_esp() {
	local arch=$1 g="$BOOT_TOP/build/guest/$1" cfg="$BOOT_DIR/slat.cfg"
	make -s -C "$BOOT_TOP" "guest-$arch" >"$BOOT_DIR/guest.out" 2>&1 || {
		cat "$BOOT_DIR/guest.out" >&2
		echo "boot: building the $arch guest failed" >&2
		exit 1
	}
	bash "$BOOT_TOP/tools/qemu-guest.sh" "$arch" || exit 1
	{
		echo "# written by tests/boot/$BOOT_NAME.sh"
		echo 'loader  = \slat\vmlinuz'
		echo 'initrd  = \slat\initrd.img'
		echo "cmdline = $2"
	} >"$cfg"
	boot_esp "$arch" "$cfg=slat.cfg" "$g/vmlinuz=slat/vmlinuz" "$g/initrd-qemu.img=slat/initrd.img"
}

qemu_vmm_boot_x86() {
	EMU_ESP_CYL=200 # the kernel and the initramfs with QEMU need a 100 MiB ESP
	_qemu_vmm_esp x86_64 "$1"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-1500}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_x86 max
}

qemu_vmm_boot_arm64() {
	EMU_ESP_CYL=128 # the kernel (27 MiB) and the initramfs with QEMU (29 MiB)
	_qemu_vmm_esp aarch64 "$1"
	BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
	EMU_MEM_MB=2048 EMU_SMP=2 boot_qemu_arm64 cortex-a72
}

# qemu_expect_arm64 KVM PSCI GIC: tests/guest/qemu_slat.sh's verdicts on
# arm64, on Slat's /dev/kvm (t_arm64_qemu) or Linux's (the reference in
# tests/slow): KVM, PSCI and GIC are the regexes of the line that names the
# /dev/kvm, of the VM's PSCI version and of its interrupt controller's CPU 0
# line. The VM boots with both vCPUs, its timer, the disk read and written
# and a command typed at its shell; the monitor's info registers shows vCPU
# 0's state, its system_reset reboots the VM once, which does it all again
# and powers off from its shell; QEMU ends with status 0 and the primary
# finds the disk as the VM left it.
qemu_expect_arm64() {
	expect_in_order '^SLAT-GUEST: qemu_slat on aarch64' \
		'^SLAT-GUEST: QEMU emulator version 7\.2\.' \
		"$1" \
		'^SLAT-GUEST: qemu: .*Linux version [0-9]' \
		"$2" "$3" \
		'^SLAT-GUEST: qemu: .*arch_timer: cp15 timer\(s\) running at' \
		'^SLAT-GUEST: qemu: .*smp: Brought up 1 node, 2 CPUs' \
		'^SLAT-GUEST: qemu: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
		'^SLAT-GUEST: qemu: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
		'^SLAT-GUEST: qemu: .*virtio-pci 0000:00:01\.0: enabling device' \
		'^SLAT-GUEST: qemu: .*virtio_blk virtio0: \[vda\] 8192 512-byte logical blocks' \
		'^SLAT-GUEST: qemu: VMM-GUEST: disk vda 8192 sectors sha256 [0-9a-f]+$' \
		'^SLAT-GUEST: qemu: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$' \
		'^SLAT-GUEST: qemu: VMM-GUEST: shell ready' \
		'^SLAT-GUEST: qemu: VMM-SHELL: 42 from the console of a VM with 2 CPUs' \
		'^SLAT-GUEST: qemu: .*QEMU 7\.2\.[0-9]+ monitor' \
		'^SLAT-GUEST: qemu: .*PC=[0-9a-f]+ +X00=[0-9a-f]+' \
		'^SLAT-GUEST: qemu: .*PSTATE=[0-9a-f]+ .* EL1h +FPCR=[0-9a-f]+ +FPSR=[0-9a-f]+' \
		'^SLAT-GUEST: qemu: .*Q00=[0-9a-f]+:[0-9a-f]+ +Q01=' \
		'^SLAT-GUEST: qemu: .*Linux version [0-9]' \
		'^SLAT-GUEST: qemu: .*smp: Brought up 1 node, 2 CPUs' \
		'^SLAT-GUEST: qemu: VMM-GUEST: up, 2 CPUs online \(0-1\)' \
		'^SLAT-GUEST: qemu: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep' \
		'^SLAT-GUEST: qemu: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$' \
		'^SLAT-GUEST: qemu: VMM-GUEST: shell ready' \
		'^SLAT-GUEST: qemu: VMM-SHELL: 42 again after system_reset' \
		'^SLAT-GUEST: qemu: .*reboot: Power down' \
		'^SLAT-GUEST: qemu exit 0 after [0-9]+\.[0-9] s$' \
		'^SLAT-GUEST: disk checksum matches the image.s$' \
		'^SLAT-GUEST: the VM.s write is in the image$' \
		'^SLAT-GUEST: MARKER qemu_slat-done'
	# Two boots: the first, and the one after the monitor's system_reset.
	expect_count 2 '^SLAT-GUEST: qemu: .*Linux version [0-9]'
	expect_count 2 '^SLAT-GUEST: qemu: VMM-GUEST: up, 2 CPUs online \(0-1\)'
	expect_count 2 '^SLAT-GUEST: qemu: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts'
	expect_count 2 '^SLAT-GUEST: qemu: VMM-GUEST: shell ready'
	expect_count 1 '^SLAT-GUEST: qemu: .*reboot: Power down'
	# "no disk" only from this run's VM: the migration's VMs (t_arm64_qemu's
	# second test in the same log) have none.
	expect_absent 'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'soft lockup' 'rcu_sched detected stalls' \
		'^SLAT-GUEST: qemu: VMM-GUEST: no disk' 'failed to come online' 'WARNING:' \
		'SLAT-GUEST: qemu: .*qemu-system-aarch64: ' 'Segmentation fault'
}

# arm64_qemu_test GIC: t_arm64_qemu's run (GIC 3: make test) or the same on
# a GICv2 machine (GIC 2: the outer QEMU virt with gic-version=2, the inner
# -M virt,gic-version=2: slat.ko's GICv2 with its save/restore groups;
# tests/slow/t_arm64_qemu_gicv2.sh). Two VMs: QEMU's scratch VM for -cpu host
# and the machine.
arm64_qemu_test() {
	local gic=$1 outer=virt,virtualization=on,gic-version=$1 inner=virt,gic-version=3,its=off more=
	local gic_line='^SLAT-GUEST: qemu: .*GICv3: CPU0: found redistributor 0 region 0:0x0*80a0000$'
	if [ "$gic" = 2 ]; then
		# Slower than GICv3 here: the first run, at a host load of 20, took 9 min
		# to the monitor (docs/kvm-api.md); QEMU's own limit (qto) and the boot's.
		inner=virt,gic-version=2 more=' slat.qemu_timeout=1500'
		BOOT_TIMEOUT=${BOOT_TIMEOUT:-1800}
		gic_line='^SLAT-GUEST: qemu: .*GICv2m: range\[mem 0x0*8020000-0x0*8020fff\], SPI\[80:143\]$'
	fi
	# GICv3 (make test): the live migration after the QEMU run, in the same
	# boot (tests/guest/qemu_migrate.sh; t_arm64_qemu.sh says what it proves).
	local tests=qemu_slat
	[ "$gic" = 2 ] || tests=qemu_slat+qemu_migrate
	EMU_ARM64_MACHINE=$outer qemu_vmm_boot_arm64 "console=ttyAMA0 panic=-1 quiet slat.test=$tests slat.qemu_machine=$inner$more${QEMU_TRACE:+ slat.qemu_trace=$QEMU_TRACE}${EMU_QEMU_EXTRA:+ $EMU_QEMU_EXTRA}"
	qemu_expect_arm64 "^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE," \
		'^SLAT-GUEST: qemu: .*psci: PSCIv1\.0 detected in firmware' "$gic_line"
	if [ "$gic" = 2 ]; then
		expect_in_order '^SLAT-GUEST: MARKER qemu_slat-done' \
			'^slat: secondary VMs: 2 created, 2 destroyed, 0 alive' \
			'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
	else
		expect '^SLAT-GUEST: qemu: .*GICv3: CPU1: found redistributor 1 region 0:0x0*80c0000$'
		# Both tests ran to their end, in that order, each with status 0;
		# Slat's summary (in qemu_migrate_expect) accounts all six VMs.
		expect_in_order '^SLAT-GUEST: MARKER qemu_slat-done' '^SLAT-GUEST: test qemu_slat exit 0$' \
			'^SLAT-GUEST: qemu_migrate on aarch64' '^SLAT-GUEST: MARKER qemu_migrate-done' \
			'^SLAT-GUEST: test qemu_migrate exit 0$'
		qemu_migrate_expect aarch64 6
		expect_absent 'NOT go on' 'Migration status: failed' 'qemu-system-aarch64: '
	fi
	expect_absent 'Synchronous Exception' '^error: (slat|arm64|hv):' 'exception at EL2' \
		'insmod .* failed'
	expect_exit
	boot_done
}

# The x86 tests' QEMU machines (tests/guest/qemu_slat.sh's
# slat.qemu_machine and slat.qemu_more): the main run on -M pc without the
# HPET (the in-kernel irqchip and PIT, the monitor's system_reset; another
# with EMU_QEMU_MACHINE, but qemu_expect_x86's IRQ 0 checks are for it), then
# one short run per machine of EMU_QEMU_MORE, "+" between them (default
# none in make test, for its time: the split irqchip runs in make test's
# migration test, q35,kernel-irqchip=split; make test-slow's
# t_x86_svm_qemu_q35 adds -M q35 with the in-kernel irqchip and QEMU's HPET
# and -M pc,kernel-irqchip=split, about 30 s each).
QEMU_X86_MORE=${EMU_QEMU_MORE:-none}
[ "$QEMU_X86_MORE" != none ] || QEMU_X86_MORE=
QEMU_X86_MACHINES="slat.qemu_machine=${EMU_QEMU_MACHINE:-pc,hpet=off}${QEMU_X86_MORE:+ slat.qemu_more=$QEMU_X86_MORE}"

# qemu_expect_x86 KVM [TIMER]: tests/guest/qemu_slat.sh's verdicts on x86, on
# Slat's /dev/kvm (t_x86_svm_qemu) or Linux's (the reference in tests/slow):
# KVM is the regex of the line that names the /dev/kvm. TIMER "pit" (the
# default, Slat) expects IRQ 0 below; "kvmclock" (Linux's KVM) expects the
# VM on kvm-clock with no IRQ 0 at all: told its TSC rate by kvmclock and
# with the TSC-deadline timer, the VM's Linux never sets up the PIT
# (apic_needs_pit() is false), so the in-kernel PIT is not exercised there.
# The first QEMU
# (-M pc,hpet=off, the in-kernel irqchip) boots the VM with both vCPUs, its
# timers (IRQ 0: the in-kernel PIT through the I/O APIC), the disk read and
# written and a command typed at its shell; the monitor's info registers
# shows vCPU 0's state in long mode, its system_reset reboots the VM once,
# which does it all again and powers off from its shell; each short run's
# QEMU (qemu2, qemu3, ...: QEMU_X86_MORE) boots to the VM's checks and powers
# off; all end with status 0 and the primary finds the disk as the VMs left
# it.
qemu_expect_x86() {
	local irq0='^SLAT-GUEST: qemu: VMM-GUEST: irq0: 0: [1-9][0-9]* [0-9]+ IO-APIC 2-edge timer'
	local clock='^SLAT-GUEST: qemu: .*\.\.TIMER: vector=0x[0-9a-fA-F]+ apic1=0 pin1=2 '
	if [ "${2:-pit}" = kvmclock ]; then
		irq0='^SLAT-GUEST: qemu: VMM-GUEST: irq0: none$'
		clock='^SLAT-GUEST: qemu: .*kvm-clock: Using msrs '
	fi
	local boot1=('^SLAT-GUEST: qemu: .*Linux version [0-9]'
		"$clock"
		'^SLAT-GUEST: qemu: .*smp: Brought up 1 node, 2 CPUs'
		'^SLAT-GUEST: qemu: VMM-GUEST: up, 2 CPUs online \(0-1\)'
		'^SLAT-GUEST: qemu: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep'
		"$irq0"
		'^SLAT-GUEST: qemu: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$'
		'^SLAT-GUEST: qemu: VMM-GUEST: shell ready')
	# a short run's (qemu2, qemu3 ...: qemuNN), with its own power-off
	local short=('^SLAT-GUEST: qemuNN: .*Linux version [0-9]'
		'^SLAT-GUEST: qemuNN: .*smp: Brought up 1 node, 2 CPUs'
		'^SLAT-GUEST: qemuNN: VMM-GUEST: up, 2 CPUs online \(0-1\)'
		'^SLAT-GUEST: qemuNN: VMM-GUEST: timer: [1-9][0-9]* local timer interrupts in a 1 s sleep'
		'^SLAT-GUEST: qemuNN: VMM-GUEST: disk wrote vm-wrote-[0-9a-f-]+ at sector 8, status 0$'
		'^SLAT-GUEST: qemuNN: .*reboot: Power down'
		'^SLAT-GUEST: qemuNN exit 0 after [0-9]+\.[0-9] s$')
	local runs=() n_more=0 m i
	for m in ${QEMU_X86_MORE//+/ }; do
		runs+=("${short[@]/qemuNN/qemu$((n_more + 2))}")
		n_more=$((n_more + 1))
	done
	expect_in_order '^SLAT-GUEST: qemu_slat on x86_64' \
		'^SLAT-GUEST: QEMU emulator version 7\.2' \
		"${boot1[@]}" \
		'^SLAT-GUEST: qemu: VMM-SHELL: 42 from the console of a VM with 2 CPUs' \
		'^SLAT-GUEST: qemu: .*QEMU 7\.2\.[0-9]+ monitor' \
		'^SLAT-GUEST: qemu: .*RAX=[0-9a-f]+ RBX=[0-9a-f]+' \
		'^SLAT-GUEST: qemu: .*EFER=0*d01' \
		"${boot1[@]}" \
		'^SLAT-GUEST: qemu: VMM-SHELL: 42 again after system_reset' \
		'^SLAT-GUEST: qemu: .*reboot: Power down' \
		'^SLAT-GUEST: qemu exit 0 after [0-9]+\.[0-9] s$' \
		'^SLAT-GUEST: disk checksum matches the image.s' \
		'^SLAT-GUEST: the VM.s write is in the image' \
		"${runs[@]}" \
		'^SLAT-GUEST: MARKER qemu_slat-done'
	# Two boots in the first QEMU (the first, and the one after the monitor's
	# system_reset), one in each short run.
	expect_count 2 '^SLAT-GUEST: qemu: .*Linux version [0-9]'
	expect_count 2 "$irq0"
	expect_count 2 '^SLAT-GUEST: qemu: VMM-GUEST: shell ready'
	expect_count 1 '^SLAT-GUEST: qemu: .*reboot: Power down'
	for ((i = 2; i < 2 + n_more; i++)); do
		expect_count 1 "^SLAT-GUEST: qemu$i: .*Linux version [0-9]"
	done
	expect_absent 'Kernel panic' 'Oops' 'BUG' 'MISMATCH' 'VMM-GUEST: no disk' \
		'MP-BIOS bug' 'trying to set up timer' 'timer doesn.t work' 'spurious 8259A interrupt' \
		'SLAT-GUEST: qemu[0-9]*: .*qemu-system-x86_64: ' 'Segmentation fault'
}

# qemu_migrate_expect ARCH VMS: tests/guest/qemu_migrate.sh's verdicts, in
# order: B listens, A's VM runs rounds, the migration, B's VM goes on with
# every buffer intact and stops, both QEMUs exit 0, QEMU's dirty syncs, and
# Slat's summary (VMS VMs made and destroyed, every page back). arm64 also:
# slat.ko's ABI line and B's VM powering off.
qemu_migrate_expect() {
	local r='VMM-GUEST: migrate round [0-9]+' abi=() off=()
	if [ "$1" = aarch64 ]; then
		abi=("^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE,")
		off=('^SLAT-GUEST: qemu b: .*reboot: Power down')
	fi
	expect_in_order "^SLAT-GUEST: qemu_migrate on $1" \
		'^SLAT-GUEST: QEMU emulator version 7\.2' \
		"${abi[@]}" \
		'^SLAT-GUEST: QEMU B listens on /tmp/mig\.sock: yes' \
		'^SLAT-GUEST: qemu a: .*VMM-GUEST: up, 2 CPUs online' \
		"^SLAT-GUEST: qemu a: $r ok" \
		"^SLAT-GUEST: qemu a: $r ok" \
		'^SLAT-GUEST: migration took [0-9.]+ s' \
		"^SLAT-GUEST: qemu b: $r ok" \
		"^SLAT-GUEST: qemu b: $r ok" \
		"^SLAT-GUEST: qemu b: $r ok" \
		'^SLAT-GUEST: qemu b: VMM-GUEST: migrate stopped after [0-9]+ rounds, 0 with a mismatch' \
		"${off[@]}" \
		'^SLAT-GUEST: qemu A exit 0, qemu B exit 0' \
		'^SLAT-GUEST: the VM went on in B: ' \
		'^SLAT-GUEST: migration stats: dirty sync count: ([2-9]|[1-9][0-9]+)$' \
		'^SLAT-GUEST: MARKER qemu_migrate-done' \
		"^slat: secondary VMs: $2 created, $2 destroyed, 0 alive" \
		'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
	expect 'Migration status: completed'
}

# t_x86_svm_qemu's boot and verdicts (make test; tests/slow's q35 run too).
x86_svm_qemu_test() {
	qemu_vmm_boot_x86 "console=ttyS0 panic=-1 quiet slat.test=qemu_slat $QEMU_X86_MACHINES${EMU_QEMU_EXTRA:+ $EMU_QEMU_EXTRA}"
	local vms
	vms=$((1 + $(tr '+' '\n' <<<"$QEMU_X86_MORE" | grep -c .)))
	qemu_expect_x86 "^SLAT-GUEST: dmesg: slat: Slat ABI $HC_VERSION_RE,"
	expect_in_order '^SLAT-GUEST: MARKER qemu_slat-done' \
		"^slat: secondary VMs: $vms created, $vms destroyed, 0 alive" \
		'^slat: deposited pages: [0-9]+ in, [0-9]+ withdrawn, 0 held = 0 free \+ 0 used'
	expect_absent 'X64 Exception Type' '^error: (slat|svm|x86|hv):' 'host exception' 'insmod .* failed'
	expect_exit
	boot_done
}
