// SPDX-License-Identifier: GPL-2.0
/*
 * The local APIC of a /dev/kvm vCPU on x86 (slat_kvm_irq.h): xAPIC registers
 * in MMIO at 0xfee00000 (x2APIC is not offered), fixed interrupts with IRR,
 * ISR, TMR and the priority rules, EOI (level-triggered vectors go back to
 * the I/O APIC), fixed and lowest-priority IPIs with every shorthand and
 * physical or flat logical destinations, INIT and STARTUP IPIs (a guest
 * starts its other vCPUs: KVM's wait-for-SIPI states), the timer in one-shot,
 * periodic and (when the vCPU's CPUID offers it) TSC-deadline mode. Not
 * emulated: NMI and SMI IPIs (logged once, dropped), LINT0/LINT1 inputs,
 * thermal and performance LVTs (kept, never fire). The timer counts at 1 GHz
 * divided by TDCR, as KVM's does; the TSC-deadline mode counts in the guest's
 * TSC, which is the host's (Slat neither offsets nor scales it).
 */
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <asm/tsc.h>

#include "slat_kvm_irq.h"

#define LA_ID	 0x20
#define LA_LVR	 0x30
#define LA_TPR	 0x80
#define LA_APR	 0x90
#define LA_PPR	 0xa0
#define LA_EOI	 0xb0
#define LA_LDR	 0xd0
#define LA_DFR	 0xe0
#define LA_SVR	 0xf0
#define LA_ISR	 0x100
#define LA_TMR	 0x180
#define LA_IRR	 0x200
#define LA_ESR	 0x280
#define LA_ICR	 0x300
#define LA_ICR2	 0x310
#define LA_LVTT	 0x320
#define LA_LVT0	 0x350
#define LA_LVTE	 0x370
#define LA_TMICT 0x380
#define LA_TMCCT 0x390
#define LA_TDCR	 0x3e0

#define SVR_ENABLE	 (1u << 8)
#define LVT_MASKED	 (1u << 16)
#define LVTT_MODE	 (3u << 17)
#define LVTT_PERIODIC	 (1u << 17)
#define LVTT_DEADLINE	 (2u << 17)
#define ICR_PENDING	 (1u << 12)
#define ICR_ASSERT	 (1u << 14)
#define ICR_LEVEL	 (1u << 15)
#define ESR_RECV_ILLEGAL (1u << 6)

static u32 reg(const struct slat_lapic *l, u32 off)
{
	return *(const u32 *)(l->regs + off);
}

static void set_reg(struct slat_lapic *l, u32 off, u32 val)
{
	*(u32 *)(l->regs + off) = val;
}

/* Bit `vec` of a 256-bit register (ISR, TMR, IRR): eight 32-bit words 16 bytes apart. */
static u32 *vec_word(struct slat_lapic *l, u32 base, u8 vec)
{
	return (u32 *)(l->regs + base + (vec / 32) * 0x10);
}

static bool vec_test(struct slat_lapic *l, u32 base, u8 vec)
{
	return *vec_word(l, base, vec) >> (vec % 32) & 1;
}

static void vec_set(struct slat_lapic *l, u32 base, u8 vec, bool on)
{
	u32 *w = vec_word(l, base, vec);

	*w = on ? *w | 1u << (vec % 32) : *w & ~(1u << (vec % 32));
}

static int vec_highest(struct slat_lapic *l, u32 base)
{
	int i;

	for (i = 7; i >= 0; i--) {
		u32 w = *(u32 *)(l->regs + base + i * 0x10);
		if (w)
			return i * 32 + fls(w) - 1;
	}
	return -1;
}

/* PPR: the TPR or the class of the highest in-service vector, the larger. */
static u32 ppr(struct slat_lapic *l)
{
	u32 tpr = reg(l, LA_TPR) & 0xff;
	int isr = vec_highest(l, LA_ISR);
	u32 isrv = isr < 0 ? 0 : (u32)isr & 0xf0;

	return (tpr & 0xf0) >= isrv ? tpr : isrv;
}

/* ---- waking the vCPU ---- */

/*
 * The vCPU's thread waits in HLT (woken) or runs in Slat's guest mode on
 * another CPU: a reschedule IPI there makes Slat return PREEMPTED, and the
 * next entry offers the vector. task_structs are freed after RCU, and the
 * thread clears l->task before it leaves KVM_RUN.
 */
static void kick(struct slat_lapic *l)
{
	struct task_struct *t;

	wake_up_interruptible(&l->wq);
	rcu_read_lock();
	t = READ_ONCE(l->task);
	if (t)
		kick_process(t);
	rcu_read_unlock();
}

void slat_lapic_kick(struct slat_lapic *l)
{
	kick(l);
}

/*
 * An interrupt into IRR (lock held). Vectors 0-15 are illegal: the APIC
 * records "received illegal vector" in ESR and takes nothing (SDM 11.5.3),
 * so an exception vector is never injected as an interrupt.
 */
static void set_irr(struct slat_lapic *l, u8 vector, bool level)
{
	if (!(reg(l, LA_SVR) & SVR_ENABLE))
		return;
	if (vector < 16) {
		set_reg(l, LA_ESR, reg(l, LA_ESR) | ESR_RECV_ILLEGAL);
		return;
	}
	vec_set(l, LA_IRR, vector, true);
	vec_set(l, LA_TMR, vector, level);
}

void slat_lapic_set_irq(struct slat_lapic *l, u8 vector, bool level)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	set_irr(l, vector, level);
	spin_unlock_irqrestore(&l->lock, f);
	kick(l);
}

int slat_lapic_pending(struct slat_lapic *l)
{
	unsigned long f;
	int v;

	spin_lock_irqsave(&l->lock, f);
	v = vec_highest(l, LA_IRR);
	if (v >= 0 && ((u32)v & 0xf0) <= (ppr(l) & 0xf0))
		v = -1;
	spin_unlock_irqrestore(&l->lock, f);
	return v;
}

void slat_lapic_accept(struct slat_lapic *l, u8 vector)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	vec_set(l, LA_IRR, vector, false);
	vec_set(l, LA_ISR, vector, true);
	spin_unlock_irqrestore(&l->lock, f);
}

/* ---- the timer ---- */

static u64 timer_ns(struct slat_lapic *l, u32 count)
{
	u32 d = reg(l, LA_TDCR);
	u32 shift = ((d & 3) | (d >> 1 & 4)) + 1; /* TDCR bits 3,1,0: 2^(n+1), 7 = 1 */

	return (u64)count << (shift == 8 ? 0 : shift);
}

static bool deadline_mode(const struct slat_lapic *l)
{
	return (reg(l, LA_LVTT) & LVTT_MODE) == LVTT_DEADLINE;
}

static enum hrtimer_restart timer_fire(struct hrtimer *t)
{
	struct slat_lapic *l = container_of(t, struct slat_lapic, timer);
	enum hrtimer_restart again = HRTIMER_NORESTART;
	unsigned long f;
	u32 lvt;

	spin_lock_irqsave(&l->lock, f);
	lvt = reg(l, LA_LVTT);
	if (!(lvt & LVT_MASKED))
		set_irr(l, lvt & 0xff, false);
	l->tsc_deadline = 0; /* fired: IA32_TSC_DEADLINE reads 0, as on hardware */
	if (l->period_ns) {
		hrtimer_forward_now(t, ns_to_ktime(l->period_ns));
		l->expires = hrtimer_get_expires(t);
		again = HRTIMER_RESTART;
	}
	spin_unlock_irqrestore(&l->lock, f);
	kick(l);
	return again;
}

/* TMICT written (lock held): 0 stops, else counts down from now. */
static void timer_start(struct slat_lapic *l, u32 count)
{
	u64 ns = timer_ns(l, count);

	hrtimer_try_to_cancel(&l->timer);
	l->period_ns = 0;
	if (!count)
		return;
	if (reg(l, LA_LVTT) & LVTT_PERIODIC)
		l->period_ns = max_t(u64, ns, 10000); /* KVM's floor against storms */
	l->expires = ktime_add_ns(ktime_get(), ns);
	hrtimer_start(&l->timer, l->expires, HRTIMER_MODE_ABS);
}

/*
 * IA32_TSC_DEADLINE written in TSC-deadline mode (lock held): 0 disarms; a
 * deadline already passed fires at once. The guest's TSC is the host's plus
 * the vCPU's offset.
 */
static void deadline_start(struct slat_lapic *l, u64 deadline)
{
	u64 now = rdtsc_ordered() + READ_ONCE(l->tsc_offset), ns = 0;

	hrtimer_try_to_cancel(&l->timer);
	l->period_ns = 0;
	l->tsc_deadline = deadline;
	if (!deadline)
		return;
	if (deadline > now && tsc_khz)
		ns = mul_u64_u32_div(deadline - now, NSEC_PER_MSEC, tsc_khz);
	l->expires = ktime_add_ns(ktime_get(), ns);
	hrtimer_start(&l->timer, l->expires, HRTIMER_MODE_ABS);
}

static u32 timer_current(struct slat_lapic *l)
{
	s64 left = ktime_to_ns(ktime_sub(l->expires, ktime_get()));
	u64 per = timer_ns(l, 1);

	if (deadline_mode(l) || !reg(l, LA_TMICT) || left <= 0 || !hrtimer_active(&l->timer))
		return 0;
	return (u32)min_t(u64, div64_u64(left, per), reg(l, LA_TMICT));
}

/* ---- IPIs ---- */

/*
 * INIT (sender's side, as KVM): the target waits for STARTUP from now on; its
 * own thread resets its registers and LAPIC before it would run again.
 */
static void init_ipi(struct slat_lapic *l)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	l->init_pending = true;
	l->sipi_vector = -1;
	l->mp_state = KVM_MP_STATE_INIT_RECEIVED;
	spin_unlock_irqrestore(&l->lock, f);
	kick(l);
}

/* STARTUP: taken only by a vCPU waiting after INIT, else ignored (as KVM). */
static void startup_ipi(struct slat_lapic *l, u8 vector)
{
	unsigned long f;
	bool taken;

	spin_lock_irqsave(&l->lock, f);
	taken = l->mp_state == KVM_MP_STATE_INIT_RECEIVED && l->sipi_vector < 0;
	if (taken)
		l->sipi_vector = vector;
	spin_unlock_irqrestore(&l->lock, f);
	if (taken)
		kick(l);
}

void slat_lapic_nmi(struct slat_lapic *l)
{
	atomic_add_unless(&l->nmis, 1, 2);
	kick(l);
}

void slat_lapic_deliver(struct slat_lapic *l, u32 mode, u8 vector, bool level)
{
	if (mode == SLAT_DM_NMI)
		slat_lapic_nmi(l);
	else if (mode == SLAT_DM_INIT)
		init_ipi(l);
	else if (mode == SLAT_DM_STARTUP)
		startup_ipi(l, vector);
	else
		slat_lapic_set_irq(l, vector, level);
}

static void send_ipi(struct slat_lapic *l, u32 icr, u32 dest)
{
	u32 mode = icr >> 8 & 7, shorthand = icr >> 18 & 3;
	u8 vec = icr & 0xff;
	struct slat_vm *vm = l->vm;
	struct slat_lapic *o;
	unsigned long id;

	if (!slat_dm_emulated(mode)) {
		pr_info_once("slat: LAPIC: ICR delivery mode %u (SMI, ExtINT) not emulated\n",
			     mode);
		return;
	}
	/* INIT level de-assert (level-triggered, not asserted) does nothing. */
	if (mode == SLAT_DM_INIT && (icr & ICR_LEVEL) && !(icr & ICR_ASSERT))
		return;
	if (shorthand == 0) {
		slat_irq_deliver(vm, dest, icr & (1u << 11), mode, vec, false);
		return;
	}
	if (shorthand == 1) {
		slat_lapic_deliver(l, mode, vec, false);
		return;
	}
	rcu_read_lock();
	xa_for_each (&vm->kvcpus, id, o)
		if (shorthand == 2 || o != l)
			slat_lapic_deliver(o, mode, vec, false);
	rcu_read_unlock();
}

/* ---- registers ---- */

static void eoi(struct slat_lapic *l)
{
	unsigned long f;
	bool level = false;
	int v;

	spin_lock_irqsave(&l->lock, f);
	v = vec_highest(l, LA_ISR);
	if (v >= 0) {
		vec_set(l, LA_ISR, v, false);
		level = vec_test(l, LA_TMR, v);
	}
	spin_unlock_irqrestore(&l->lock, f);
	if (level && l->vm->irqchip && l->vm->irqchip->split)
		WRITE_ONCE(l->eoi_exit, v); /* the VMM's I/O APIC: KVM_EXIT_IOAPIC_EOI */
	else if (v >= 0 && l->vm->irqchip && !l->vm->irqchip->split)
		slat_ioapic_eoi(l->vm->irqchip, v); /* edge vectors too: the PIT's ack */
	if (v >= 0)
		kick(l); /* a lower vector may be deliverable now */
}

static u32 read_reg(struct slat_lapic *l, u32 off)
{
	switch (off) {
	case LA_PPR:
		return ppr(l);
	case LA_TMCCT:
		return timer_current(l);
	case LA_EOI:
		return 0;
	default:
		return reg(l, off);
	}
}

/*
 * The timer's LVT (lock held): vector, mask and mode; the TSC-deadline mode
 * only when the vCPU's CPUID offers it (else bit 18 reads 0). A mode change
 * stops the timer, and switching into or out of TSC-deadline mode clears the
 * count too, as KVM does.
 */
static void write_lvtt(struct slat_lapic *l, u32 val)
{
	u32 old = reg(l, LA_LVTT);

	if (!(reg(l, LA_SVR) & SVR_ENABLE))
		val |= LVT_MASKED; /* software-disabled: LVTs stay masked */
	val &= 0x100ffu | (l->deadline_ok ? LVTT_MODE : LVTT_PERIODIC);
	set_reg(l, LA_LVTT, val);
	if ((old & LVTT_MODE) == (val & LVTT_MODE))
		return;
	hrtimer_try_to_cancel(&l->timer);
	l->period_ns = 0;
	l->tsc_deadline = 0;
	if (((old ^ val) & LVTT_MODE) & LVTT_DEADLINE)
		set_reg(l, LA_TMICT, 0);
}

/* A write to a register that only changes the page (lock held). */
static void write_plain(struct slat_lapic *l, u32 off, u32 val)
{
	switch (off) {
	case LA_TPR:
		set_reg(l, off, val & 0xff);
		break;
	case LA_LDR:
		set_reg(l, off, val & 0xff000000);
		break;
	case LA_DFR:
		set_reg(l, off, val | 0x0fffffff);
		break;
	case LA_SVR:
		set_reg(l, off, val & 0x3ff);
		if (!(val & SVR_ENABLE)) /* software-disabled: every LVT masked */
			for (off = LA_LVTT; off <= LA_LVTE; off += 0x10)
				set_reg(l, off, reg(l, off) | LVT_MASKED);
		break;
	case LA_ESR:
		set_reg(l, off, 0); /* a write clears it */
		break;
	case LA_ICR2:
		set_reg(l, off, val & 0xff000000);
		break;
	case LA_LVTT:
		write_lvtt(l, val);
		break;
	case LA_LVTT + 0x10 ... LA_LVTE:
		if (!(reg(l, LA_SVR) & SVR_ENABLE))
			val |= LVT_MASKED; /* software-disabled: LVTs stay masked */
		/* Writable bits: vector, mask, delivery mode, polarity, trigger;
		 * delivery status and remote IRR read 0. */
		set_reg(l, off, val & 0x1a7ffu);
		break;
	case LA_TDCR:
		set_reg(l, off, val & 0xb);
		break;
	case LA_ID: /* read-only here, as on most CPUs since the P4 */
	default:
		break;
	}
}

bool slat_lapic_mmio(struct slat_lapic *l, u32 off, bool write, u32 *val)
{
	unsigned long f;

	if ((off & 0xf) || off >= SLAT_APIC_PAGE_BYTES)
		return off < 0x1000 && !(off & 3); /* reserved: reads 0, writes ignored */
	if (!write) {
		spin_lock_irqsave(&l->lock, f);
		*val = read_reg(l, off);
		spin_unlock_irqrestore(&l->lock, f);
		return true;
	}
	if (off == LA_EOI) {
		eoi(l);
		return true;
	}
	if (off == LA_ICR) {
		u32 dest;

		spin_lock_irqsave(&l->lock, f);
		set_reg(l, LA_ICR, *val & ~ICR_PENDING);
		dest = reg(l, LA_ICR2) >> 24;
		spin_unlock_irqrestore(&l->lock, f);
		send_ipi(l, *val, dest);
		return true;
	}
	spin_lock_irqsave(&l->lock, f);
	if (off == LA_TMICT) {
		if (!deadline_mode(l)) { /* ignored in TSC-deadline mode */
			set_reg(l, off, *val);
			timer_start(l, *val);
		}
	} else {
		write_plain(l, off, *val);
	}
	spin_unlock_irqrestore(&l->lock, f);
	if (off == LA_TPR)
		kick(l); /* a lower TPR may let a vector through */
	return true;
}

/* ---- life ---- */

static void reset(struct slat_lapic *l, u32 id)
{
	u32 off;

	memset(l->regs, 0, sizeof(l->regs));
	set_reg(l, LA_ID, id << 24);
	set_reg(l, LA_LVR, 0x14 | 5u << 16); /* an integrated APIC, 6 LVT entries */
	set_reg(l, LA_DFR, 0xffffffff);
	set_reg(l, LA_SVR, 0xff);
	for (off = LA_LVTT; off <= LA_LVTE; off += 0x10)
		set_reg(l, off, LVT_MASKED);
	/* KVM's reset (quirk LINT0_REENABLED): the boot vCPU's LINT0 takes the
	 * 8259's ExtINT, the virtual wire a BIOS expects. */
	if (l->bsp)
		set_reg(l, LA_LVT0, 7u << 8);
	l->queued = -1;
	l->queued_extint = false;
	l->extint = -1;
	l->eoi_exit = -1;
}

/* LINT0 unmasked in ExtINT mode (SDM 11.5.1); the APIC is always enabled in
 * IA32_APIC_BASE here (Slat keeps no other value). */
bool slat_lapic_accepts_extint(struct slat_lapic *l)
{
	u32 lvt0 = READ_ONCE(*(u32 *)(l->regs + LA_LVT0));

	return !(lvt0 & LVT_MASKED) && (lvt0 >> 8 & 7) == 7;
}

bool slat_lapic_take_start(struct slat_lapic *l, bool *init, int *sipi)
{
	unsigned long f;
	bool run;

	*init = false;
	*sipi = -1;
	/* Every entry comes here: a running vCPU with nothing new takes no lock
	 * (an INIT or STARTUP set meanwhile kicks it back to this check). */
	if (READ_ONCE(l->mp_state) == KVM_MP_STATE_RUNNABLE && !slat_lapic_start_event(l))
		return true;
	spin_lock_irqsave(&l->lock, f);
	*init = l->init_pending;
	*sipi = l->sipi_vector;
	l->init_pending = false;
	l->sipi_vector = -1;
	if (*init) {
		hrtimer_try_to_cancel(&l->timer);
		l->period_ns = 0;
		l->tsc_deadline = 0;
		reset(l, reg(l, LA_ID) >> 24);
		if (l->bsp) /* KVM: the boot vCPU restarts at the reset vector */
			l->mp_state = KVM_MP_STATE_RUNNABLE;
	}
	if (*sipi >= 0)
		l->mp_state = KVM_MP_STATE_RUNNABLE;
	run = l->mp_state == KVM_MP_STATE_RUNNABLE;
	spin_unlock_irqrestore(&l->lock, f);
	return run;
}

bool slat_lapic_start_event(struct slat_lapic *l)
{
	return READ_ONCE(l->init_pending) || READ_ONCE(l->sipi_vector) >= 0;
}

u32 slat_lapic_mp_state(struct slat_lapic *l)
{
	return READ_ONCE(l->mp_state);
}

int slat_lapic_set_mp_state(struct slat_lapic *l, u32 state)
{
	unsigned long f;

	if (state != KVM_MP_STATE_RUNNABLE && state != KVM_MP_STATE_UNINITIALIZED &&
	    state != KVM_MP_STATE_INIT_RECEIVED)
		return -EINVAL;
	spin_lock_irqsave(&l->lock, f);
	l->mp_state = state;
	l->init_pending = false;
	l->sipi_vector = -1;
	spin_unlock_irqrestore(&l->lock, f);
	return 0;
}

struct slat_lapic *slat_lapic_new(struct slat_kvm_vcpu *v)
{
	struct slat_lapic *l = kzalloc(sizeof(*l), GFP_KERNEL);

	if (!l)
		return NULL;
	spin_lock_init(&l->lock);
	init_waitqueue_head(&l->wq);
	hrtimer_init(&l->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	l->timer.function = timer_fire;
	l->vm = v->vc->vm;
	/* With an in-kernel irqchip only the boot vCPU runs from the start. */
	l->bsp = v->id == 0;
	reset(l, v->id);
	l->mp_state = l->bsp ? KVM_MP_STATE_RUNNABLE : KVM_MP_STATE_UNINITIALIZED;
	l->sipi_vector = -1;
	return l;
}

/* After the vCPU left the VM's kvcpus: an IPI may still hold it until RCU ends. */
void slat_lapic_free(struct slat_lapic *l)
{
	if (!l)
		return;
	hrtimer_cancel(&l->timer);
	kfree_rcu(l, rcu);
}

void slat_lapic_get(struct slat_lapic *l, u8 *regs)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	memcpy(regs, l->regs, SLAT_APIC_PAGE_BYTES);
	*(u32 *)(regs + LA_TMCCT) = timer_current(l);
	spin_unlock_irqrestore(&l->lock, f);
}

int slat_lapic_set(struct slat_lapic *l, const u8 *regs)
{
	unsigned long f;

	/* The ID is the vCPU's (Slat has no APIC ID of its own to move). */
	if (*(const u32 *)(regs + LA_ID) != reg(l, LA_ID))
		return -EINVAL;
	spin_lock_irqsave(&l->lock, f);
	memcpy(l->regs, regs, SLAT_APIC_PAGE_BYTES);
	set_reg(l, LA_LVR, 0x14 | 5u << 16); /* read only: KVM sets it back too */
	l->queued = -1;
	l->queued_extint = false;
	if (!l->deadline_ok) /* a mode the CPUID does not offer: one-shot */
		set_reg(l, LA_LVTT, reg(l, LA_LVTT) & ~LVTT_DEADLINE);
	if (deadline_mode(l)) /* the deadline is the MSR's: armed as it was */
		deadline_start(l, l->tsc_deadline);
	else
		timer_start(l, reg(l, LA_TMICT));
	spin_unlock_irqrestore(&l->lock, f);
	kick(l);
	return 0;
}

/* ---- IA32_TSC_DEADLINE ---- */

void slat_lapic_set_deadline_ok(struct slat_lapic *l, bool ok)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	l->deadline_ok = ok;
	if (!ok && deadline_mode(l)) /* the mode goes with the CPUID bit */
		write_lvtt(l, reg(l, LA_LVTT) & ~LVTT_MODE);
	spin_unlock_irqrestore(&l->lock, f);
}

/* The armed deadline; 0 when none or in another mode (SDM: reads 0). */
u64 slat_lapic_tsc_deadline(struct slat_lapic *l)
{
	unsigned long f;
	u64 d;

	spin_lock_irqsave(&l->lock, f);
	d = deadline_mode(l) ? l->tsc_deadline : 0;
	spin_unlock_irqrestore(&l->lock, f);
	return d;
}

/* A write outside TSC-deadline mode is ignored (SDM). */
void slat_lapic_set_tsc_deadline(struct slat_lapic *l, u64 deadline)
{
	unsigned long f;

	spin_lock_irqsave(&l->lock, f);
	if (deadline_mode(l))
		deadline_start(l, deadline);
	spin_unlock_irqrestore(&l->lock, f);
}

void slat_lapic_set_tsc_offset(struct slat_lapic *l, u64 offset)
{
	WRITE_ONCE(l->tsc_offset, offset);
}
