# SPDX-License-Identifier: Apache-2.0
# The verdicts of tests/arch/x86/hv.c that every x86 back end must give
# (sourced by t_hv_x86_svm.sh and t_hv_x86_vmx.sh after the boot).
expect '^slat: firmware continues as the primary VM on [0-9]+ CPU'
expect_absent '^ARCHTEST-ABORT' 'X64 Exception Type' 'slat: .*fault on Slat memory'
# The probes of the deposited pool (first and last page; a fault is reported
# once per page): the only faults of the run.
expect_count 2 '^(warning: )?slat: (NPT|EPT) fault on an unmapped address at GPA 0x[0-9a-f]+ \(read at CPL 0'
expect_count 2 'slat: .*fault on'
expect_in_order '^ARCHTEST hv-cpuid-signature: Slat$' \
	"^ARCHTEST hv-version: st 0 version $HC_VERSION_HEX\$" \
	'^ARCHTEST hv-stats-boot: st 0 deposited-as-counted 1 held-beyond-own_nodes 0 free 0 used-by-vms 0 vms 0 balanced 1$' \
	'^ARCHTEST hv-vm-create-empty-pool: -9$' \
	'^ARCHTEST hv-deposit: 0$' \
	'^ARCHTEST hv-deposit-again: -3$' \
	'^ARCHTEST hv-vm-create: st 0 id-nonzero 1$' \
	'^ARCHTEST hv-vcpu0-create: 0$' \
	'^ARCHTEST hv-vcpu1-create: 0$' \
	'^ARCHTEST hv-deposited-first-read: #GP\(0\) rip\+0$' \
	'^ARCHTEST hv-deposited-first-write: #GP\(0\) rip\+0$' \
	'^ARCHTEST hv-deposited-last-read: #GP\(0\) rip\+0$' \
	'^ARCHTEST hv-deposited-last-write: #GP\(0\) rip\+0$' \
	'^ARCHTEST hv-primary-tables: st 0 [0-2]$' \
	'^ARCHTEST hv-slot0-add: 0$' \
	'^ARCHTEST hv-slot1-add: 0$' \
	'^ARCHTEST hv-regs-pg-without-pe: -12$' \
	'^ARCHTEST hv-regs-svme: -12$' \
	'^ARCHTEST hv-regs-long-no-pae: -12$' \
	'^ARCHTEST hv-regs-rflags-reserved: -12$' \
	'^ARCHTEST hv-regs-nw-without-cd: -12$' \
	'^ARCHTEST hv-regs-vcpu0: 0$' \
	'^ARCHTEST hv-vcpu0-exit1: io port 0x1234 size 4 out 1 data 0x10$' \
	'^ARCHTEST hv-vcpu0-exit2: halt 0$' \
	'^ARCHTEST hv-pattern: 16 of 16 words$' \
	'^ARCHTEST hv-get-regs: st 0$' \
	'^ARCHTEST hv-get-regs-state: rip-after-hlt 1 edi 0x1840 eax 0x10$' \
	'^ARCHTEST hv-regs-vcpu1: 0$' \
	'^ARCHTEST hv-vcpu1-slot-exit1: io port 0x1234 size 4 out 1 data 0x11223344$' \
	'^ARCHTEST hv-vcpu1-slot-exit2: halt 0$' \
	'^ARCHTEST hv-vcpu1-slot-store: 0xbeef$' \
	'^ARCHTEST hv-slot1-move: 0$' \
	'^ARCHTEST hv-moved-exit1: mmio gpa 0x10000 len 4 write 0 data 0x0$' \
	'^ARCHTEST hv-moved-exit2: io port 0x1234 size 4 out 1 data 0x55667788$' \
	'^ARCHTEST hv-moved-exit3: mmio gpa 0x10004 len 4 write 1 data 0xbeef$' \
	'^ARCHTEST hv-moved-exit4: halt 0$' \
	'^ARCHTEST hv-slot1-delete: 0$' \
	'^ARCHTEST hv-deleted-exit1: mmio gpa 0x10000 len 4 write 0 data 0x0$' \
	'^ARCHTEST hv-deleted-exit2: io port 0x1234 size 4 out 1 data 0x99aabbcc$' \
	'^ARCHTEST hv-fpu-guest-xmm0: io port 0x1234 size 4 out 1 data 0x0$' \
	'^ARCHTEST hv-fpu-exit2: halt 0$' \
	'^ARCHTEST hv-fpu-primary-xmm0: kept$' \
	'^ARCHTEST hv-gs-guest-kgsbase: io port 0x1234 size 4 out 1 data 0x6000$' \
	'^ARCHTEST hv-gs-exit: halt 0$' \
	'^ARCHTEST hv-gs-primary: kept$' \
	'^ARCHTEST hv-kgsbase-primary: kept$' \
	'^ARCHTEST hv-gs-guest: st 0 base 0x5000$' \
	'^ARCHTEST hv-cpuid-1: st 0 hypervisor 1 vmx 0 xsave 0$' \
	'^ARCHTEST hv-cpuid-80000001: st 0 svm 0$' \
	'^ARCHTEST hv-cpuid-exit3: halt 0$' \
	'^ARCHTEST hv-guest-hypercall: hypercall nr 0x42 a0 7 a1 8$' \
	'^ARCHTEST hv-guest-hypercall-ret0: io port 0x1234 size 4 out 1 data 0x99$' \
	'^ARCHTEST hv-guest-hypercall-ret1: io port 0x1234 size 4 out 1 data 0x98$' \
	'^ARCHTEST hv-guest-hypercall-exit4: halt 0$' \
	'^ARCHTEST hv-in-exit1: io port 0x1234 size 4 out 0 data 0x0$' \
	'^ARCHTEST hv-in-exit2: io port 0x1234 size 4 out 1 data 0xfeedface$' \
	'^ARCHTEST hv-in-exit3: halt 0$' \
	'^ARCHTEST hv-msr-unknown: shutdown 0$' \
	'^ARCHTEST hv-nmi-exit1: io data 0x1, nmi 0 state 0$' \
	'^ARCHTEST hv-nmi-bad-value: -12$' \
	'^ARCHTEST hv-nmi-1-taken: io data 0x[0-9a-f]+, nmi 0 state 2$' \
	'^ARCHTEST hv-nmi-at: nop$' \
	'^ARCHTEST hv-nmi-2-after-iret: io data 0x[0-9a-f]+, nmi 0 state 2$' \
	'^ARCHTEST hv-nmi-2-at: nop$' \
	'^ARCHTEST hv-nmi-done: io data 0x2, nmi 0 state 0$' \
	'^ARCHTEST hv-nmi-halt: halt 0$' \
	'^ARCHTEST hv-nomem-setup: vm 0 vcpu\+slot 0$' \
	'^ARCHTEST hv-nomem-run: -9$' \
	'^ARCHTEST hv-nomem-steps: (-9 )(-9 )+io$' \
	'^ARCHTEST hv-nomem-exit1: io data 0x10$' \
	'^ARCHTEST hv-nomem-redeposit: all$' \
	'^ARCHTEST hv-nomem-exit2: halt 0$' \
	'^ARCHTEST hv-nomem-pattern: 16 of 16 words$' \
	'^ARCHTEST hv-nomem-destroy: 0$' \
	'^ARCHTEST hv-vm2-create: st 0$' \
	'^ARCHTEST hv-slot-deposited-frame: -3$' \
	'^ARCHTEST hv-slot-slat-region: 1 range\(s\)$' \
	'^ARCHTEST hv-slot-other-vm-frame: -4$' \
	'^ARCHTEST hv-vcpu-create-bad-vm: -10$' \
	'^ARCHTEST hv-vcpu-create-dup: -16$' \
	'^ARCHTEST hv-run-bad-vcpu: -14$' \
	'^ARCHTEST hv-run-bad-vm: -10$' \
	'^ARCHTEST hv-unknown-fn: -1$' \
	'^ARCHTEST hv-vcpu2-create: 0$' \
	'^ARCHTEST hv-vm2-destroy: 0$' \
	'^ARCHTEST hv-run-destroyed-vm: -10$' \
	'^ARCHTEST hv-vm-destroy: 0$' \
	'^ARCHTEST hv-run-after-destroy: -10$' \
	'^ARCHTEST hv-withdraw: st 0 pages [0-9]+$' \
	'^ARCHTEST hv-withdrawn-first-read: none rip\+0$' \
	'^ARCHTEST hv-withdrawn-first-write: none rip\+0$' \
	'^ARCHTEST hv-withdrawn-last-read: none rip\+0$' \
	'^ARCHTEST hv-withdrawn-last-write: none rip\+0$' \
	'^ARCHTEST hv-stats-end: st 0 deposited-as-counted 1 held-beyond-own_nodes 0 free 0 used-by-vms 0 vms 0 balanced 1$' \
	'^ARCHTEST-END [0-9]+ verdicts'
