/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel irqchip of /dev/kvm on x86 (KVM_CREATE_IRQCHIP;
 * docs/kvm-api.md): a local APIC per vCPU (slat_kvm_lapic.c) and an I/O APIC
 * per VM (slat_kvm_ioapic.c), emulated in the module as KVM emulates them in
 * its kernel, written from the Intel SDM (vol. 3, chapter 11) and the 82093AA
 * datasheet. Interrupts reach the guest through Slat's injection (ABI 1.4):
 * the module offers the highest deliverable vector in the run page before
 * each entry and moves it from IRR to ISR once Slat reports it delivered.
 */
#ifndef SLAT_KVM_IRQ_H
#define SLAT_KVM_IRQ_H

#include <linux/hrtimer.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "slat_kvm.h"

#define SLAT_APIC_BASE	     0xfee00000ull
#define SLAT_IOAPIC_BASE     0xfec00000ull
#define SLAT_IOAPIC_SIZE     0x100ull
#define SLAT_IOAPIC_PINS     24
#define SLAT_APIC_PAGE_BYTES 0x400 /* KVM_GET/SET_LAPIC's register image */

struct slat_lapic {
	spinlock_t lock;	       /* regs, timer state; taken with irqs off */
	u8 regs[SLAT_APIC_PAGE_BYTES]; /* the registers at their MMIO offsets */
	struct hrtimer timer;
	u64 period_ns;		  /* periodic timer: its period; one-shot 0 */
	u64 tsc_deadline;	  /* TSC-deadline mode: the armed deadline, 0 when none */
	u64 tsc_offset;		  /* the vCPU's: its TSC - the host's (the deadline's clock) */
	bool deadline_ok;	  /* the vCPU's CPUID offers TSC-deadline mode */
	ktime_t expires;	  /* the armed count's end (TMCCT) */
	int queued;		  /* vector offered to Slat, not yet delivered; -1 */
	struct slat_vm *vm;	  /* its VM (the vCPU holds a reference) */
	wait_queue_head_t wq;	  /* HLT waits here for an interrupt */
	struct task_struct *task; /* the thread in KVM_RUN, or NULL */
	struct rcu_head rcu;	  /* freed after RCU: IPIs find it by xa_load */
	/*
	 * INIT and STARTUP (under `lock`): the sender moves the state, the
	 * vCPU's own thread applies the registers (slat_lapic_take_start).
	 */
	u32 mp_state;	   /* KVM_MP_STATE_RUNNABLE, _UNINITIALIZED or _INIT_RECEIVED */
	bool bsp;	   /* vCPU 0: runnable again at the reset vector after INIT */
	bool init_pending; /* an INIT whose reset the thread has not applied */
	int sipi_vector;   /* a STARTUP accepted in INIT_RECEIVED, or -1 */
	atomic_t nmis;	   /* NMIs for the vCPU not yet offered to Slat (at most 2) */
	/*
	 * Split irqchip (the VMM's 8259s): KVM_INTERRUPT's vector, an ExtINT
	 * the LAPIC takes through LINT0, or -1 (the vCPU's thread only); and
	 * the level-triggered vector whose EOI goes to the VMM's I/O APIC
	 * (KVM_EXIT_IOAPIC_EOI), or -1.
	 */
	int extint;
	bool queued_extint; /* the vector offered to Slat is `extint` */
	int eoi_exit;
};

/* ICR and redirection-entry delivery modes the irqchip emulates. */
#define SLAT_DM_FIXED	0
#define SLAT_DM_LOWEST	1
#define SLAT_DM_NMI	4
#define SLAT_DM_INIT	5
#define SLAT_DM_STARTUP 6

/* The modes above are emulated; SMI and ExtINT are not. */
static inline bool slat_dm_emulated(u32 mode)
{
	return mode == SLAT_DM_FIXED || mode == SLAT_DM_LOWEST || mode == SLAT_DM_NMI ||
	       mode == SLAT_DM_INIT || mode == SLAT_DM_STARTUP;
}

/*
 * The 8259A pair (slat_kvm_pic.c): KVM's state image of the master (0) and
 * the slave (1), and the master's INT output.
 */
#define SLAT_PIC_PINS 16
struct slat_pic {
	spinlock_t lock; /* taken with irqs off */
	struct kvm_pic_state chip[2];
	bool output;
};

struct slat_ioapic {
	spinlock_t lock;
	u32 id, ioregsel;
	u64 redir[SLAT_IOAPIC_PINS];
	u32 level; /* the input lines (KVM_IRQ_LINE) */
};

/*
 * The VM's part (struct slat_vm.irqchip): made by KVM_CREATE_IRQCHIP. The
 * VM's kvcpus xarray holds the LAPICs by vCPU id on x86 (RCU-freed).
 */
struct slat_routes;
struct slat_irqchip {
	struct slat_ioapic ioapic;
	struct slat_pic pic; /* not with `split` (the VMM's 8259s) */
	struct slat_vm *vm;
	/* KVM_CAP_SPLIT_IRQCHIP: LAPICs only; the I/O APIC is the VMM's */
	bool split;
	u32 split_pins;
	spinlock_t route_lock;		  /* writers of `routes` */
	struct slat_routes __rcu *routes; /* KVM_SET_GSI_ROUTING's, NULL: the default */
};

/* ---- local APIC (slat_kvm_lapic.c) ---- */
/* The vCPU's local APIC (slat_kvm_x86.c), NULL without an irqchip. */
struct slat_lapic *slat_kvm_x86_lapic(struct slat_kvm_vcpu *v);
/* Where the vCPU's NMIs wait before the module offers one to Slat. */
atomic_t *slat_kvm_x86_nmis(struct slat_kvm_vcpu *v);
/* KVM_GET/SET_REGS and _SREGS on kernel copies (slat_kvm_x86.c). */
int slat_kvm_x86_regs_k(struct slat_kvm_vcpu *v, struct kvm_regs *k, bool set);
int slat_kvm_x86_sregs_k(struct slat_kvm_vcpu *v, struct kvm_sregs *s, bool set);
/* KVM_GET/SET_VCPU_EVENTS and kvm_run's sync_regs (slat_kvm_x86_state.c; ABI 1.11). */
#define SLAT_KVM_X86_SYNC_FIELDS (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS | KVM_SYNC_X86_EVENTS)
bool slat_kvm_x86_events_ok(void);
long slat_kvm_x86_vcpu_events(struct slat_kvm_vcpu *v, struct kvm_vcpu_events __user *up, bool set);
struct slat_lapic *slat_lapic_new(struct slat_kvm_vcpu *v);
void slat_lapic_free(struct slat_lapic *l);
/* An aligned 32-bit access at `off` in the APIC page; false for other forms. */
bool slat_lapic_mmio(struct slat_lapic *l, u32 off, bool write, u32 *val);
/* A fixed interrupt for this LAPIC (IOAPIC, IPI); wakes or kicks its vCPU. */
void slat_lapic_set_irq(struct slat_lapic *l, u8 vector, bool level);
/* The highest vector the guest would take now (IRR above PPR), or -1. */
int slat_lapic_pending(struct slat_lapic *l);
/* Slat delivered `vector`: IRR -> ISR. */
void slat_lapic_accept(struct slat_lapic *l, u8 vector);
/*
 * The TSC-deadline timer: whether the vCPU's CPUID offers it (KVM_SET_CPUID2),
 * and IA32_TSC_DEADLINE's reads and writes (Slat's HC_EXIT_MSR).
 */
void slat_lapic_set_deadline_ok(struct slat_lapic *l, bool ok);
u64 slat_lapic_tsc_deadline(struct slat_lapic *l);
void slat_lapic_set_tsc_deadline(struct slat_lapic *l, u64 deadline);
/* The vCPU's TSC offset changed (ABI 1.15): deadlines armed later count from it. */
void slat_lapic_set_tsc_offset(struct slat_lapic *l, u64 offset);
void slat_lapic_get(struct slat_lapic *l, u8 *regs);
int slat_lapic_set(struct slat_lapic *l, const u8 *regs);
/* One interrupt message of mode SLAT_DM_* for this LAPIC (IPI, I/O APIC). */
void slat_lapic_deliver(struct slat_lapic *l, u32 mode, u8 vector, bool level);
/* An NMI for the vCPU (KVM_NMI, an NMI IPI or MSI): counted, at most two
 * outstanding as in KVM, and the vCPU kicked; ABI 1.8 delivers them. */
void slat_lapic_nmi(struct slat_lapic *l);
/*
 * The vCPU's thread before each entry: an INIT to apply (the LAPIC is reset
 * here; *init says the registers must be), a STARTUP vector in *sipi (or -1).
 * Returns whether the vCPU may run (false: it waits for INIT or STARTUP).
 */
bool slat_lapic_take_start(struct slat_lapic *l, bool *init, int *sipi);
/* Something for slat_lapic_take_start (the thread's wait condition). */
bool slat_lapic_start_event(struct slat_lapic *l);
u32 slat_lapic_mp_state(struct slat_lapic *l);
/* KVM_SET_MP_STATE: RUNNABLE, UNINITIALIZED, INIT_RECEIVED; else -EINVAL. */
int slat_lapic_set_mp_state(struct slat_lapic *l, u32 state);

/* Whether LINT0 takes an ExtINT now (unmasked, mode ExtINT): the VMM's 8259s
 * (split irqchip) or the module's. */
bool slat_lapic_accepts_extint(struct slat_lapic *l);
/* Wake the vCPU from HLT or out of Slat: something for it is pending. */
void slat_lapic_kick(struct slat_lapic *l);

/* ---- GSI routing and the split irqchip (slat_kvm_route.c) ---- */
int slat_msi_deliver(struct slat_vm *vm, u32 addr_lo, u32 addr_hi, u32 data);
/* Module parameter irq_trace: one dmesg line for each of the first N events. */
void slat_irq_trace(const char *what, u32 a, u32 b, u32 c, int r);
long slat_route_set(struct slat_irqchip *c, struct kvm_irq_routing __user *up);
void slat_route_free(struct slat_irqchip *c);
int slat_route_irq_line(struct slat_irqchip *c, u32 gsi, bool level, int *status);
long slat_irqchip_install(struct slat_vm *vm, bool split, u32 pins, long busy);
long slat_route_enable_split(struct slat_vm *vm, u64 pins);
/*
 * KVM's ack and mask notifiers, for the one user the module has (the PIT on
 * GSI 0): pin `pin` of chip `chip` (KVM_IRQCHIP_*) was acknowledged (an EOI)
 * or unmasked; the routes say whether it is GSI 0.
 */
void slat_irq_acked(struct slat_irqchip *c, u32 chip, u32 pin);
void slat_irq_unmasked(struct slat_irqchip *c, u32 chip, u32 pin);

/* ---- the 8259A pair (slat_kvm_pic.c) ---- */
void slat_pic_init(struct slat_pic *p);
/* An input (0-15, slave's 8-15) to `level`: KVM's status (-1 masked, 0 coalesced, 1). */
int slat_pic_set_line(struct slat_irqchip *c, u32 pin, bool level);
bool slat_pic_output(struct slat_irqchip *c);
/* INTA: the vector of the best request, now in service. */
int slat_pic_intack(struct slat_irqchip *c);
/* Ports 0x20/0x21, 0xa0/0xa1, 0x4d0/0x4d1; false for any other port. */
bool slat_pic_port(struct slat_irqchip *c, u16 port, u32 size, bool out, u32 *val);
void slat_pic_get(struct slat_irqchip *c, u32 chip, struct kvm_pic_state *st);
void slat_pic_set(struct slat_irqchip *c, u32 chip, const struct kvm_pic_state *st);

/* ---- the 8254 PIT (slat_kvm_pit.c), the VM's vm->pit ---- */
long slat_pit_ioctl(struct slat_vm *vm, unsigned int cmd, void __user *up);
/* Ports 0x40-0x43 (and 0x61 with KVM_PIT_SPEAKER_DUMMY); false for others. */
bool slat_pit_port(struct slat_vm *vm, u16 port, bool out, u32 *val);
/* GSI 0 was acknowledged / unmasked (reinjection of lost ticks). */
void slat_pit_acked(struct slat_vm *vm);
void slat_pit_unmasked(struct slat_vm *vm);
void slat_pit_free(struct slat_pit *p);

/* ---- I/O APIC (slat_kvm_ioapic.c) ---- */
void slat_ioapic_init(struct slat_ioapic *io);
bool slat_ioapic_mmio(struct slat_irqchip *c, u32 off, bool write, u32 *val);
/* KVM_IRQ_LINE: pin `pin` to `level`. -EINVAL for a pin it does not have. */
int slat_ioapic_set_line(struct slat_irqchip *c, u32 pin, bool level);
/* A LAPIC's EOI of a level-triggered vector: remote IRR clears, re-delivery. */
/* Edge pins of the vector are only acknowledged (slat_irq_acked). */
void slat_ioapic_eoi(struct slat_irqchip *c, u8 vector);
/*
 * Delivery to LAPICs, mode SLAT_DM_* (lowest priority: the first matching
 * one). Returns how many LAPICs it reached.
 */
int slat_irq_deliver(struct slat_vm *vm, u32 dest, bool logical, u32 mode, u8 vector, bool level);
/* KVM_GET/SET_IRQCHIP's I/O APIC image (struct kvm_ioapic_state). */
void slat_ioapic_get(struct slat_irqchip *c, struct kvm_ioapic_state *s);
int slat_ioapic_set(struct slat_irqchip *c, const struct kvm_ioapic_state *s);

#endif
