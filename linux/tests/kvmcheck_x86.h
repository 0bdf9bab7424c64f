// SPDX-License-Identifier: Apache-2.0
//
// The x86 slat-kvm-check's shared part: the guests' layout (identity-mapped
// long mode in slot 0), the vCPU and exit helpers and the instruction pieces
// the guests are assembled from (kvmcheck_x86.c), and the feature sections
// main() runs, one file each. The check helpers themselves are kvmcheck.h's
// (both architectures).
#ifndef SLAT_KVMCHECK_X86_H
#define SLAT_KVMCHECK_X86_H

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvmcheck.h"

// The guests' layout (guest-physical = offset in slot 0).
#define MEM_SZ	  (2ul << 20) // slot 0: guest-physical 0..2 MiB
#define PML4	  0x1000u
#define PDPT	  0x2000u
#define PD0	  0x3000u
#define PD1	  0x4000u
#define GDT	  0x5000u
#define IDT	  0x6000u
#define CODE	  0x10000u
#define STACK_TOP 0x9000u
#define MMIO_GPA  0x40000000ull // no region: an MMIO exit

// The irqchip guest (kvmcheck_x86_irqchip.c, kvmcheck_x86_timer.c).
#define PD3	   0xa000u
#define CODE2	   0x11000u
#define STUBS2	   0x11800u // vectors 0x40-0x44: 0x20 bytes apart
#define TIMER_VEC  0x40
#define IPI_VEC	   0x41
#define PIN_VEC	   0x42
#define MSI_VEC	   0x43
#define SPIN_VEC   0x44 // its handler also ends the spin loop (ESI = 1)
#define IOAPIC_PIN 5
#define AP_VEC	   0x0c // STARTUP vector: real mode at 0xc000
#define AP_EARLY   0x0d // the STARTUP sent before INIT: 0xd000, must not run

#define RUN_LIMIT_S 30 // a KVM_RUN that has not returned by then is ended by SIGALRM

// ---- kvmcheck_x86.c -------------------------------------------------------
struct kvm_cpuid2 *cpuid_alloc(unsigned n);
struct kvm_cpuid_entry2 *leaf(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx);
// Identity map of the first 2 MiB (one large page) and of MMIO_GPA; the GDT.
void write_tables(uint8_t *mem);
// The IDT gate of `vector`: a 64-bit interrupt gate to `at` in CS 8.
void idt_gate(uint8_t *mem, unsigned vector, uint64_t at);
// mov ecx, addr; mov dword [rcx], val
size_t put_store(uint8_t *p, uint32_t addr, uint32_t val);
size_t put(uint8_t *p, const uint8_t *b, size_t n);
// vCPU `id` of `vm` and its mapped struct kvm_run (the whole mmap size: KVM
// has the PIO data on the second page), or NULL.
struct kvm_run *new_vcpu(int kvm, int vm, int id, int *vcpu);
// SIGALRM's handler (main installs it): ends a KVM_RUN that hangs.
void on_alarm(int sig);
// KVM_RUN, which must end with `reason` within RUN_LIMIT_S.
bool run_to(int vcpu, struct kvm_run *run, uint32_t reason, const char *what);
// The value of an OUT of 4 bytes to `port`, else 0xdeadbeef (and why).
uint32_t io_out(const struct kvm_run *run, uint16_t port);
bool out_exit(int vcpu, struct kvm_run *run, uint16_t port, const char *what);
// The next exit's OUT to `port` (0xdeadbeef: another exit).
uint32_t expect_out(int vcpu, struct kvm_run *run, uint16_t port, const char *what);

// ---- the feature sections --------------------------------------------------
// kvmcheck_x86_irq.c: the first guest's interrupts without an in-kernel
// irqchip (KVM_INTERRUPT, the interrupt window) and its two NMIs. The guest
// code continues at `c` (guest-physical `at`), after the first guest's HLT.
size_t put_irq_code(uint8_t *mem, uint8_t *c, uint32_t at);
void check_interrupts(int vcpu, struct kvm_run *run);
void check_nmis(int vcpu, struct kvm_run *run);
// kvmcheck_x86_events.c: KVM_GET/SET_VCPU_EVENTS in the first guest, after
// check_nmis (its code and #GP handler put in place by put_events_code).
void put_events_code(uint8_t *mem);
void check_events(int kvm, int vcpu, struct kvm_run *run);
// kvmcheck_x86_msr.c: MSRs the module answers (ABI 1.13) in the first
// guest, after check_events (its code put in place by put_msr_code).
void put_msr_code(uint8_t *mem);
void check_msr_exits(int kvm, int vm, int vcpu, struct kvm_run *run, uint8_t *mem);
// kvmcheck_x86_irqchip.c: the in-kernel irqchip (a second VM with local APIC
// and I/O APIC) with the long-mode SREGS `s`.
void check_irqchip(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup);
// kvmcheck_x86_pic.c: the 8259 pair and the 8254 PIT (a third VM).
void check_pic_pit(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup);
// kvmcheck_thp.c: huge pages of the VMM's, 2 MiB leaves (a fourth VM).
void check_thp(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup);
// kvmcheck_x86_timer.c: the LAPIC's TSC-deadline timer in the irqchip guest.
size_t put_deadline(uint8_t *c, uint32_t code_at);
size_t put_deadline_spin(uint8_t *c, uint32_t code_at);
void put_spin_handler(uint8_t *mem);
void set_deadline_cpuid(int kvm, int vcpu, struct kvm_cpuid2 *sup);
void run_deadline_part(int vcpu, struct kvm_run *run);
// kvmcheck_x86_ap.c: INIT and STARTUP: the irqchip guest starts vCPU 1,
// whose thread waits in KVM_RUN.
struct ap_run {
	int vcpu;
	struct kvm_run *run;
	pthread_t thread;
	long rc;
	int err;
	volatile int done;
};
bool ap_start(struct ap_run *a);
void check_ap_started(struct ap_run *a);

#endif
